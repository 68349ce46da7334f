"""What one `agentscore serve` process drives on one core: judged scores per second and the
service's CPU per score, with a scripted OpenAI-compatible judge answering after 50 ms.

The service is pinned to one CPU (`--cpu`); the client, the judge server and the OTLP
receiver run elsewhere (each its own process, unpinned). N generations are sent (every one
answered 200, so on disk), then the clock runs until every job was scored and its evaluation
exported. Target: >= 100 scores/s.

With `--before PATH` (a checkout of an earlier agentscore, e.g. `git worktree add ../before
<commit>`), rounds alternate between that tree and this one, A B B A ..., so both are
measured in the same run, under the same load; the ratio is after / before.

Usage: python benchmarks/serve_core.py [--generations 1000] [--rounds 2] [--cpu 0]
                                       [--before PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from _machine import print_machine
from serve import bodies, cpu_seconds, generations, judge_server, post_all, receiver, service

HERE = Path(__file__).resolve().parent


def one_round(
    tmp: Path, receiver_url: str, judge_url: str, count: int, cpu: int
) -> tuple[float, float]:
    spans = generations(count)
    env = {"BENCH_JUDGE_URL": judge_url}
    with service(tmp, receiver_url, env, "--max-queue", "1000000", cpus={cpu}) as running:
        started, cpu_before = time.perf_counter(), cpu_seconds(running.pid)
        post_all(running.url, bodies(spans, 512), 1)
        while True:
            health = httpx.get(f"{running.url}/healthz").json()
            if health["scored"] + health["failed"] >= count:
                break
            time.sleep(0.02)
        elapsed = time.perf_counter() - started
        used = cpu_seconds(running.pid) - cpu_before
    assert health["failed"] == 0, health
    return count / elapsed, 1000 * used / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--generations", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cpu", type=int, default=0, help="the one CPU the service runs on")
    parser.add_argument("--before", type=Path, help="an earlier agentscore checkout to compare")
    args = parser.parse_args()
    print_machine()
    arms = {"after (this tree)": os.environ.get("PYTHONPATH", "")}
    if args.before is not None:
        arms = {"before": str(args.before.resolve()), **arms}
    order = list(arms)
    rates: dict[str, list[float]] = {name: [] for name in arms}
    cpus: dict[str, list[float]] = {name: [] for name in arms}
    with (
        tempfile.TemporaryDirectory() as directory,
        receiver() as receiver_url,
        judge_server(0.05) as judge_url,
    ):
        for round_ in range(args.rounds):
            for name in order if round_ % 2 == 0 else reversed(order):
                os.environ["PYTHONPATH"] = arms[name]
                rate, cpu_ms = one_round(
                    Path(directory), receiver_url, judge_url, args.generations, args.cpu
                )
                rates[name].append(rate)
                cpus[name].append(cpu_ms)
                print(f"round {round_ + 1}, {name}: {rate:,.1f} scores/s, "
                      f"{cpu_ms:.2f} service CPU ms a score")  # fmt: skip
    for name in arms:
        print(f"{name}: median {statistics.median(rates[name]):,.1f} scores/s on one core, "
              f"{statistics.median(cpus[name]):.2f} CPU ms a score")  # fmt: skip
    if args.before is not None:
        after, before = (statistics.median(rates[name]) for name in order[::-1])
        print(f"after / before, scores/s: x{after / before:.2f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
