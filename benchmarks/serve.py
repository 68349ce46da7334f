"""`agentscore serve` throughput: spans ingested per second, scores per second with 1 and 2
worker processes, for a CPU-bound judge (the local one) and an I/O-bound one.

(a) Ingest: traces of 4 spans (HTTP root, invoke_agent with messages, chat, execute_tool),
    made with the OpenTelemetry SDK and encoded as the OTLP/HTTP exporter does (protobuf,
    512 spans a request, its default batch), posted by 2 client threads; sampling 1, so the
    service reads every span, finds every generation, commits the open traces' spans and
    stores a job for each generation before its 200. The judge (the scripted server, made
    to answer after an hour) holds the jobs it leases, so no scoring competes with ingest.
    Once with SQLite synchronous=FULL, once with NORMAL.
    Then with NORMAL, alternately without and with `--forward` to the receiver (each request
    also passed on, as a Collector's next hop would get it): spans/s and the service's CPU
    per request, so the forward's own cost is the difference.
(b) Scoring: N generations are sent (every one answered 200, so on disk), then the clock
    runs until every job was scored and its evaluation exported. With 2 workers the traces
    are split by trace id, as the Collector's loadbalancing exporter routes them. Judges:
    the local judge, and benchmarks/_judge_server.py (OpenAI-compatible, a real HTTP server
    on 127.0.0.1) answering after 50 ms. Evaluations go to an OTLP receiver on 127.0.0.1
    that answers 200 and decodes nothing (its own process).

Usage: python benchmarks/serve.py [--generations N] [--ingest-requests N]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from _machine import print_machine
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

HERE = Path(__file__).resolve().parent
_TICKS = os.sysconf("SC_CLK_TCK")
ORDER = {"order": "1042", "status": "shipped", "carrier": "UPS", "eta": "2026-11-24"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def receiver() -> Iterator[str]:
    """An OTLP receiver in its own process (benchmarks/_receiver.py), so its work is not
    charged to the benchmark's interpreter."""
    with _helper("_receiver.py") as port:
        yield f"http://127.0.0.1:{port}"


@contextmanager
def _helper(script: str, *args: str) -> Iterator[str]:
    """Run a helper script that prints "port N" once it listens; yield N."""
    process = subprocess.Popen(
        [sys.executable, str(HERE / script), *args], stdout=subprocess.PIPE, text=True
    )
    try:
        line = process.stdout.readline() if process.stdout else ""
        yield line.split()[1]
    finally:
        process.terminate()
        process.wait(10)


@contextmanager
def judge_server(latency: float) -> Iterator[str]:
    with _helper("_judge_server.py", "--latency", str(latency)) as port:
        yield f"http://127.0.0.1:{port}/v1"


@dataclass(frozen=True)
class Service:
    url: str  # OTLP/HTTP base URL
    grpc_target: str  # OTLP/gRPC host:port
    pid: int


@contextmanager
def service(
    tmp: Path,
    receiver_url: str,
    env: dict[str, str],
    *args: str,
    niceness: int = 0,
    cpus: set[int] | None = None,
) -> Iterator[Service]:
    """`agentscore serve` with `args`, started `niceness` lower in priority (as `nice -n`
    does: every thread of it), on `cpus` only when given (as `taskset` does)."""
    port, grpc_port = free_port(), free_port()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    # The benchmark's own path first; a PYTHONPATH given to the benchmark (another tree's
    # agentscore, for a before / after pair) after it.
    path = os.pathsep.join(filter(None, (str(HERE), os.environ.get("PYTHONPATH"))))
    environment.update(env, OTEL_EXPORTER_OTLP_ENDPOINT=receiver_url, PYTHONPATH=path)
    command = [sys.executable, "-m", "agentscore.cli", "serve", "--port", str(port)]
    command += ["--scorers", "_serve_scorers:evals", "--queue", str(tmp / f"q{port}.db")]
    command += ["--grpc-port", str(grpc_port), *args]

    def lower_priority() -> None:
        if niceness:
            os.nice(niceness)
        if cpus is not None:
            os.sched_setaffinity(0, cpus)

    process = subprocess.Popen(
        command,
        env=environment,
        cwd=tmp,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lower_priority if niceness or cpus is not None else None,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                httpx.get(f"{url}/healthz")
                break
            except httpx.TransportError:
                time.sleep(0.05)
        yield Service(url, f"127.0.0.1:{grpc_port}", process.pid)
    finally:
        process.kill()
        process.wait(10)


def generations(count: int, *, start: int = 0) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    for index in range(start, start + count):
        user = {"role": "user", "parts": [{"type": "text", "content": f"Where is {index}?"}]}
        answer = f"Order 1042 shipped with UPS and arrives on 2026-11-24. (ticket {index})"
        with (
            tracer.start_as_current_span("POST /chat"),
            tracer.start_as_current_span(
                "invoke_agent support",
                attributes={"gen_ai.operation.name": "invoke_agent"},
            ) as agent,
        ):
            with tracer.start_as_current_span(
                "execute_tool lookup_order",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup_order",
                    "gen_ai.tool.call.id": f"c{index}",
                    "gen_ai.tool.call.result": json.dumps(ORDER),
                },
            ):
                pass
            with tracer.start_as_current_span(
                "chat gpt-x", attributes={"gen_ai.operation.name": "chat"}
            ):
                pass
            agent.set_attribute("gen_ai.input.messages", json.dumps([user]))
            reply = [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
            agent.set_attribute("gen_ai.output.messages", json.dumps(reply))
    return list(exporter.get_finished_spans())


def bodies(spans: list[ReadableSpan], per_request: int) -> list[bytes]:
    return [
        bytes(encode_spans(spans[i : i + per_request]).SerializeToString())
        for i in range(0, len(spans), per_request)
    ]


def post_all(url: str, payloads: list[bytes], threads: int = 2) -> None:
    def send(part: list[bytes]) -> None:
        with httpx.Client(headers={"Content-Type": "application/x-protobuf"}) as client:
            for body in part:
                while client.post(f"{url}/v1/traces", content=body).status_code != 200:
                    time.sleep(0.05)

    workers = [threading.Thread(target=send, args=(payloads[i::threads],)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user + system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


@dataclass(frozen=True)
class Ingest:
    spans_per_second: float
    cpu_ms_per_request: float  # the service's, for one request of 512 spans


def ingest(
    tmp: Path,
    receiver_url: str,
    requests: int,
    synchronous: str,
    judge_url: str,
    *,
    forward: bool = False,
) -> Ingest:
    """With `forward`, the service also passes each request on to the receiver (`--forward`)."""
    spans = generations(requests * 128)  # 4 spans each: 512 a request
    payloads = bodies(spans, 512)
    # Sampling 1: every generation becomes a job on disk. The judge never answers during the
    # run, so the jobs stay stored and scoring takes no CPU from ingest.
    env = {"BENCH_SAMPLING": "1", "BENCH_JUDGE_URL": judge_url}
    args = ["--synchronous", synchronous, *(["--forward", receiver_url] if forward else [])]
    with service(tmp, receiver_url, env, *args) as running:
        url = running.url
        post_all(url, payloads[:2])  # warm-up
        started, cpu = time.perf_counter(), cpu_seconds(running.pid)
        post_all(url, payloads[2:])
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(running.pid) - cpu
        health = httpx.get(f"{url}/healthz").json()
    assert health["generations_found"] == len(spans) // 4, health
    assert health["jobs_queued"] == len(spans) // 4, health
    assert health["forward_failures"] == 0, health
    timed = len(payloads) - 2
    return Ingest(timed * 512 / elapsed, 1000 * cpu / timed)


def scoring(tmp: Path, receiver_url: str, count: int, workers: int, judge_url: str) -> float:
    spans = generations(count)
    env = {"BENCH_JUDGE_URL": judge_url} if judge_url else {}
    with ExitStack() as stack:
        urls = [
            stack.enter_context(service(tmp, receiver_url, env, "--max-queue", "1000000")).url
            for _ in range(workers)
        ]
        shares: list[list[ReadableSpan]] = [[] for _ in urls]
        for span in spans:  # by trace id, as the loadbalancing exporter routes
            shares[span.get_span_context().trace_id % len(urls)].append(span)
        started = time.perf_counter()
        threads = [
            threading.Thread(target=post_all, args=(url, bodies(share, 512), 1))
            for url, share in zip(urls, shares, strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        while True:
            healths = [httpx.get(f"{url}/healthz").json() for url in urls]
            if sum(h["scored"] + h["failed"] for h in healths) >= count:
                break
            time.sleep(0.02)
        elapsed = time.perf_counter() - started
    assert sum(h["failed"] for h in healths) == 0, healths
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--generations", type=int, default=1000)
    parser.add_argument("--ingest-requests", type=int, default=60)
    args = parser.parse_args()
    print_machine()
    with tempfile.TemporaryDirectory() as directory, receiver() as receiver_url:
        tmp = Path(directory)
        with judge_server(3600) as stalled:
            for synchronous in ("FULL", "NORMAL"):
                done = ingest(tmp, receiver_url, args.ingest_requests, synchronous, stalled)
                print(f"ingest, sampling 1 (jobs stored), synchronous={synchronous}: "
                      f"{done.spans_per_second:,.0f} spans/s, "
                      f"{done.cpu_ms_per_request:.2f} CPU ms a request")  # fmt: skip
            # --forward passes each request on to the receiver as well: what that costs.
            for forward in (False, True, False, True):
                done = ingest(
                    tmp, receiver_url, args.ingest_requests, "NORMAL", stalled, forward=forward
                )
                print(f"ingest, NORMAL, {'with' if forward else 'without'} --forward: "
                      f"{done.spans_per_second:,.0f} spans/s, "
                      f"{done.cpu_ms_per_request:.2f} CPU ms a request")  # fmt: skip
        with judge_server(0.05) as scripted:
            for name, judge_url in (("local judge", ""), ("scripted judge, 50 ms", scripted)):
                rates = [
                    scoring(tmp, receiver_url, args.generations, workers, judge_url)
                    for workers in (1, 2)
                ]
                print(
                    f"scores/s, {name}: 1 worker {rates[0]:,.1f}, 2 workers {rates[1]:,.1f}"
                    f" (x{rates[1] / rates[0]:.2f})"
                )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
