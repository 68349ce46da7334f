"""The hand-over linger A/B: one agent process, `HANDOVER_LINGER` switched every block.

The agent of `benchmarks/_latency_agent.py` (in-process `Evals.submit`, faithfulness with
the local judge, `--after-ms` of Python work after the submit) answers requests at a steady
rate (open loop) with spans going nowhere (an exporter-less provider), so nothing but the
hand-over differs between the arms: blocks of `--block` requests alternate between the
linger (5 ms), 0 (the job taken as soon as the scoring loop runs) and no scoring at all,
A B C C B A ..., in one process, so drift and the machine's load hit all three alike.
Latency runs from each request's scheduled start to its end.

Usage: python benchmarks/handover.py [--rate R] [--blocks N] [--block N] [--after-ms MS]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

from _machine import print_machine
from opentelemetry.sdk.trace import TracerProvider

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _latency_agent import App

from agentscore import Evals, Runner, Telemetry
from agentscore.judges import LocalJudge
from agentscore.pipeline import runner as runner_module
from agentscore.scorers import create_faithfulness_scorer

LINGER = runner_module.HANDOVER_LINGER


def pct(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--blocks", type=int, default=42)
    parser.add_argument("--block", type=int, default=50)
    parser.add_argument("--after-ms", type=float, default=3.0)
    args = parser.parse_args()
    print_machine()
    provider = TracerProvider()
    telemetry = Telemetry(tracer_provider=provider, capture_content=True)
    runner = Runner(max_queue=100_000, concurrency=4)
    evals = Evals(scorers=[create_faithfulness_scorer(LocalJudge())], runner=runner,
                  telemetry=telemetry)  # fmt: skip
    app = App(provider, evals, args.after_ms / 1000)
    plain = App(provider, None, args.after_ms / 1000)
    arms = {"no scoring": None, f"linger {LINGER * 1000:g} ms": LINGER, "linger 0 (as before)": 0.0}
    times: dict[str, list[int]] = {name: [] for name in arms}
    names = list(arms)
    interval = 1 / args.rate
    for _ in range(args.rate.__int__()):  # warm-up: imports, tables, the scoring thread
        await app.request()
    await runner.aflush(30)
    for block in range(args.blocks):
        turn = block % len(names)  # A B C, C B A, A B C, ...
        name = names[turn if (block // len(names)) % 2 == 0 else len(names) - 1 - turn]
        linger = arms[name]
        if linger is not None:
            runner_module.HANDOVER_LINGER = linger
        serving = plain if linger is None else app
        tasks = []
        start = time.perf_counter_ns()

        async def timed(due: int, name: str = name, serving: App = serving) -> None:
            await serving.request()
            times[name].append((time.perf_counter_ns() - due) // 1000)

        for n in range(args.block):
            due = start + int(n * interval * 1e9)
            delay = (due - time.perf_counter_ns()) / 1e9
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(timed(due)))
        await asyncio.gather(*tasks)
        await runner.aflush(30)  # a block's jobs end before the other arm starts
    print(f"{args.rate:g} requests/s, {args.after_ms:g} ms of work after submit, "
          f"{args.blocks} blocks of {args.block}")  # fmt: skip
    print(f"{'ms':<26}{'p50':>8}{'p90':>8}{'p99':>8}{'requests':>10}")
    for name, values in times.items():
        print(f"{name:<26}{pct(values, 0.5):>8.2f}{pct(values, 0.9):>8.2f}"
              f"{pct(values, 0.99):>8.2f}{len(values):>10}")  # fmt: skip
    stats = runner.stats()
    print(f"scored {stats.scored}, failed {stats.failed}; load average after {os.getloadavg()}")


if __name__ == "__main__":
    asyncio.run(main())
