"""`agentscore serve` scale-out: scores/s with 1, 2 and 4 service processes, fed over OTLP/gRPC
with the traces routed by trace id (as the Collector's loadbalancing exporter routes them),
for the local judge (CPU-bound) and a scripted judge answering after 50 ms (I/O-bound).

Each run sends N generations (traces of 4 spans, 512 spans a request, one sender thread and
one gRPC channel per process, as the loadbalancing exporter keeps one per backend), then the
clock runs until every job was scored and its evaluation exported to an OTLP receiver on
127.0.0.1. Besides scores/s it reports the CPU the service processes used (from
/proc/<pid>/stat): CPU ms per score, and how many cores the processes kept busy, which is
what bounds the ratio on a small machine. With --profile, py-spy samples the one-process
runs (all threads, idle time left out) and prints where their time goes.

Usage: python benchmarks/scale_out.py [--generations N] [--processes 1 2 4] [--profile]
                                      [--gil] [--keep-profiles DIR] [--judges local scripted]
                                      [--synchronous FULL|NORMAL]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import anyio
import grpc
import httpx
from _machine import print_machine
from opentelemetry.sdk.trace import ReadableSpan
from serve import (
    ORDER,
    Service,
    bodies,
    cpu_seconds,
    generations,
    judge_server,
    receiver,
    service,
)

from agentscore.judges import OpenAIJudge
from agentscore.run import ScorerRun
from agentscore.scorers import create_faithfulness_scorer
from agentscore.serve.grpc_ingest import EXPORT_METHOD

_RETRY = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)
# Where a sampled stack spends its time: the first rule whose marker is in the stack wins.
_CATEGORIES = (
    ("judge: local judge (claims, alignment)", ("agentscore/judges/local", "grounding")),
    (
        "judge: HTTP request and reply (the SDK on httpx)",
        ("judges/_chat.py", "_wire/http.py", "openai/", "httpx", "httpcore"),
    ),
    ("scorer steps, prompts, results", ("agentscore/scorers/", "agentscore/result")),
    ("export of evaluations (OTLP/HTTP)", ("serve/export.py", "exporter/otlp")),
    ("telemetry: spans, log records", ("agentscore/telemetry/", "opentelemetry/sdk")),
    ("ingest: decode, read spans, commit", ("_wire/otlp_in.py", "serve/ingest.py", "spans/")),
    ("queue: SQLite", ("serve/queue.py",)),
    ("gRPC server", ("grpc/",)),
    ("event loop, threads", ("asyncio/", "anyio/", "threading.py", "concurrent/")),
)


@dataclass
class Run:
    processes: int
    rate: float
    cpu_seconds: float
    elapsed: float
    generations: int

    @property
    def cpu_ms_per_score(self) -> float:
        return 1000 * self.cpu_seconds / self.generations

    @property
    def cores_busy(self) -> float:
        return self.cpu_seconds / self.elapsed


def send_all(target: str, payloads: list[bytes]) -> None:
    """One channel, requests one after another; a refusal is retried, as exporters do."""
    with grpc.insecure_channel(target) as channel:
        export = channel.unary_unary(EXPORT_METHOD)
        for body in payloads:
            while True:
                try:
                    export(body, timeout=30)
                    break
                except grpc.RpcError as error:
                    if error.code() not in _RETRY:
                        raise
                    time.sleep(0.05)


def scale(
    tmp: Path,
    receiver_url: str,
    spans: list[ReadableSpan],
    processes: int,
    judge_url: str,
    profile: Path | None,
    synchronous: str,
    gil_only: bool = False,
) -> Run:
    count = len(spans) // 4
    env = {"BENCH_JUDGE_URL": judge_url} if judge_url else {}
    options = ("--max-queue", "1000000", "--synchronous", synchronous)
    with ExitStack() as stack:
        services: list[Service] = [
            stack.enter_context(service(tmp, receiver_url, env, *options)) for _ in range(processes)
        ]
        shares: list[list[ReadableSpan]] = [[] for _ in services]
        for span in spans:  # by trace id, as the loadbalancing exporter routes
            shares[span.get_span_context().trace_id % processes].append(span)
        payloads = [bodies(share, 512) for share in shares]
        sampler = _profile(services[0].pid, profile, gil_only) if profile else None
        cpu_before = sum(cpu_seconds(s.pid) for s in services)
        started = time.perf_counter()
        senders = [
            threading.Thread(target=send_all, args=(s.grpc_target, share))
            for s, share in zip(services, payloads, strict=True)
        ]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        # One kept-alive connection per service, polled less often the further the end is
        # (half the time left at the rate so far, 50 ms to 1 s): a poll costs the service
        # 0.2 ms of CPU idle, and polled every 50 ms under load it was 4% of the service's
        # GIL samples, up to 0.05 ms charged to each score (a new connection every 20 ms
        # cost 0.07 ms more).
        clients = [stack.enter_context(httpx.Client(base_url=s.url)) for s in services]
        while True:
            healths = [client.get("/healthz").json() for client in clients]
            done = sum(h["scored"] + h["failed"] for h in healths)
            if done >= count:
                break
            rate = done / (time.perf_counter() - started)
            time_left = (count - done) / rate if rate else 1.0
            time.sleep(min(max(time_left / 2, 0.05), 1.0))
        elapsed = time.perf_counter() - started
        cpu = sum(cpu_seconds(s.pid) for s in services) - cpu_before
        if sampler is not None:
            sampler.send_signal(signal.SIGINT)  # py-spy writes what it sampled, then exits
            sampler.wait(60)
    assert sum(h["failed"] for h in healths) == 0, healths
    return Run(processes, count / elapsed, cpu, elapsed, count)


def _profile(pid: int, output: Path, gil_only: bool) -> subprocess.Popen[bytes]:
    py_spy = Path(sys.executable).with_name("py-spy")
    command = [str(py_spy), "record", "--pid", str(pid), "--format", "raw", "--nonblocking"]
    command += ["--rate", "200", "--output", str(output)]
    if gil_only:  # only the thread holding the GIL: Python's own work, not threads waiting
        command.append("--gil")
    sampler = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached before the clock starts
    return sampler


def summarize(profile: Path) -> list[str]:
    """Share of the sampled (non-idle) time by category, and the hottest functions."""
    categories: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    total = 0
    for line in profile.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        count = int(samples)
        total += count
        frames = stack.split(";")
        categories[_category(stack)] += count
        leaves[frames[-1]] += count
    if not total:
        return ["  (no samples)"]
    lines = [f"  {share / total:6.1%}  {name}" for name, share in categories.most_common()]
    lines.append("  hottest functions (self time):")
    lines += [f"  {share / total:6.1%}  {name}" for name, share in leaves.most_common(8)]
    return lines


def _category(stack: str) -> str:
    for name, markers in _CATEGORIES:
        if any(marker in stack for marker in markers):
            return name
    return "other"


def judge_alone(judge_url: str, count: int, concurrency: int = 16) -> tuple[float, float]:
    """The reference for a service's ceiling: the same scorer and run shape against the same
    scripted judge, `concurrency` at a time, in this process with no service around it
    (no ingest, queue, spans or export). Returns scores/s and CPU ms per score."""
    judge = OpenAIJudge("bench-judge", base_url=judge_url, api_key="bench", use_cache=False)
    scorer = create_faithfulness_scorer(judge, context=[json.dumps(ORDER)])
    remaining = count

    async def one_slot() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            output = f"Order 1042 shipped with UPS and arrives on 2026-11-24. (ticket {remaining})"
            result = await scorer.run(ScorerRun(input=f"Where is {remaining}?", output=output))
            if result.score is None:
                raise RuntimeError(f"the reference run failed: {result.error}")

    async def all_slots() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(concurrency):
                group.start_soon(one_slot)

    started, cpu = time.perf_counter(), time.process_time()
    anyio.run(all_slots)
    elapsed = time.perf_counter() - started
    return count / elapsed, 1000 * (time.process_time() - cpu) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--generations", type=int, default=1000)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--profile", action="store_true", help="py-spy the 1-process runs")
    parser.add_argument("--synchronous", choices=["FULL", "NORMAL"], default="FULL")
    parser.add_argument(
        "--judges", nargs="+", choices=["local", "scripted"], default=["local", "scripted"]
    )
    parser.add_argument(
        "--keep-profiles", type=Path, help="directory to keep py-spy's raw profiles in"
    )
    parser.add_argument(
        "--gil", action="store_true", help="profile only the thread holding the GIL"
    )
    args = parser.parse_args()
    print_machine(f", --synchronous {args.synchronous}")
    spans = generations(args.generations)
    with tempfile.TemporaryDirectory() as directory, receiver() as receiver_url:
        tmp = Path(directory)
        with judge_server(0.05) as scripted:
            judges = {"local": ("local judge", ""), "scripted": ("scripted judge, 50 ms", scripted)}
            for index, (name, judge_url) in enumerate(judges[judge] for judge in args.judges):
                runs: list[Run] = []
                for processes in args.processes:
                    profile = (args.keep_profiles or tmp) / f"profile-{index}.txt"
                    wanted = args.profile and processes == 1
                    runs.append(
                        scale(
                            tmp,
                            receiver_url,
                            spans,
                            processes,
                            judge_url,
                            profile if wanted else None,
                            args.synchronous,
                            args.gil,
                        )
                    )
                    if wanted:
                        print(f"profile, {name}, 1 process (py-spy, all threads, not idle):")
                        print("\n".join(summarize(profile)))
                if judge_url:
                    rate, cpu_ms = judge_alone(judge_url, args.generations)
                    print(
                        f"{name}: the scorer alone, 16 at a time, no service: {rate:,.1f} "
                        f"scores/s, {cpu_ms:.2f} CPU ms/score"
                    )
                base = runs[0].rate
                for run in runs:
                    print(
                        f"{name}: {run.processes} process(es) {run.rate:,.1f} scores/s "
                        f"(x{run.rate / base:.2f}), {run.cpu_ms_per_score:.2f} CPU ms/score, "
                        f"{run.cores_busy:.2f} cores busy in the services"
                    )
                print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
