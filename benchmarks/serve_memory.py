"""`agentscore serve` under open traces that never close: what the byte budget holds back.

A sender posts --mib MiB (default 390) of spans whose traces stay open: each a `chat` span
with about 100 kB of messages under a root that is never sent, 16 spans a request, encoded
as the OTLP/HTTP exporter does. It keeps sending after the first 503, as a retrying
exporter would. Twice, in the same run: with the default budget (--max-open-trace-bytes
256 MiB), and with the budget out of reach (64 GiB), which is how the service behaved before
it had one. Printed per run: the service's RSS growth (VmRSS and peak VmHWM, from
/proc/PID/status) and queue file growth (database + WAL) over the run, the requests answered
200 and 503 (with Retry-After), and what /healthz counts as held.

Usage: python benchmarks/serve_memory.py [--mib N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from _machine import print_machine
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from serve import free_port, receiver

HERE = Path(__file__).resolve().parent
SPAN_TEXT = 100_000
SPANS_PER_REQUEST = 16
MIB = 2**20


@contextmanager
def service(tmp: Path, receiver_url: str, *args: str) -> Iterator[tuple[str, int, Path]]:
    port = free_port()
    queue = tmp / f"q{port}.db"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environment.update(OTEL_EXPORTER_OTLP_ENDPOINT=receiver_url, PYTHONPATH=str(HERE))
    command = [sys.executable, "-m", "agentscore.cli", "serve", "--port", str(port)]
    command += ["--scorers", "_serve_scorers:evals", "--queue", str(queue), *args]
    process = subprocess.Popen(command, env=environment, cwd=tmp, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                httpx.get(f"{url}/healthz")
                break
            except httpx.TransportError:
                time.sleep(0.05)
        yield url, process.pid, queue
    finally:
        process.kill()
        process.wait(10)


def open_trace_request(tracer: trace.Tracer, exporter: InMemorySpanExporter, index: int) -> bytes:
    exporter.clear()
    for span_index in range(SPANS_PER_REQUEST):
        root = tracer.start_span("request")  # never ended, never sent: the trace stays open
        text = f"{index}-{span_index} " + "x" * SPAN_TEXT
        with (
            trace.use_span(root),
            tracer.start_as_current_span(
                "chat gpt-4o-mini",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": json.dumps([{"role": "user", "content": "Hi"}]),
                    "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": text}]),
                },
            ),
        ):
            pass
    return bytes(encode_spans(list(exporter.get_finished_spans())).SerializeToString())


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field}")


def queue_bytes(queue: Path) -> int:
    return sum(p.stat().st_size for p in queue.parent.glob(queue.name + "*"))


def run(tmp: Path, receiver_url: str, mib: int, budget: str) -> dict[str, float]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    options = ("--max-open-trace-bytes", budget, "--idle-timeout", "3600")
    with service(tmp, receiver_url, *options) as (url, pid, queue):
        rss_before, disk_before = status_kib(pid, "VmRSS"), queue_bytes(queue)
        sent = ok = refused = 0
        retry_after = set()
        index = 0
        with httpx.Client(base_url=url, timeout=60) as client:
            while sent < mib * MIB:
                body = open_trace_request(tracer, exporter, index)
                index += 1
                reply = client.post(
                    "/v1/traces",
                    content=body,
                    headers={"Content-Type": "application/x-protobuf"},
                )
                sent += len(body)
                if reply.status_code == 200:
                    ok += 1
                elif reply.status_code == 503:
                    refused += 1
                    retry_after.add(reply.headers.get("Retry-After"))
                else:
                    raise RuntimeError(f"unexpected {reply.status_code}: {reply.text}")
            health = client.get("/healthz").json()
        return {
            "sent_mib": sent / MIB,
            "requests_200": ok,
            "requests_503": refused,
            "retry_after": float(next(iter(retry_after), None) or 0),
            "rss_growth_mib": (status_kib(pid, "VmRSS") - rss_before) / 1024,
            "peak_rss_growth_mib": (status_kib(pid, "VmHWM") - rss_before) / 1024,
            "queue_growth_mib": (queue_bytes(queue) - disk_before) / MIB,
            "held_mib": health["open_trace_bytes"] / MIB,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mib", type=int, default=390)
    args = parser.parse_args()
    print_machine()
    with tempfile.TemporaryDirectory() as directory, receiver() as receiver_url:
        results = {
            budget: run(Path(directory), receiver_url, args.mib, budget)
            for budget in ("256MiB", "64GiB")
        }
    for budget, result in results.items():
        print(
            f"budget {budget}: sent {result['sent_mib']:.0f} MiB in "
            f"{result['requests_200'] + result['requests_503']:.0f} requests; "
            f"200: {result['requests_200']:.0f}, 503: {result['requests_503']:.0f} "
            f"(Retry-After {result['retry_after']:.0f}); held {result['held_mib']:.1f} MiB; "
            f"RSS +{result['rss_growth_mib']:.0f} MiB (peak +{result['peak_rss_growth_mib']:.0f}); "
            f"queue file +{result['queue_growth_mib']:.0f} MiB"
        )
    bounded, unbounded = results["256MiB"], results["64GiB"]
    print(
        "bounded / unbounded: RSS growth "
        f"x{bounded['rss_growth_mib'] / unbounded['rss_growth_mib']:.2f}, queue file growth "
        f"x{bounded['queue_growth_mib'] / unbounded['queue_growth_mib']:.2f}"
    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
