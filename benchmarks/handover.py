"""What scoring in the agent's own process costs its requests, arm against arm in one process.

The agent of `benchmarks/_latency_agent.py` (in-process `Evals.submit`, faithfulness with
the local judge, `--after-ms` of Python work after the submit) answers requests at Poisson
arrivals of a mean rate (open loop) with spans going nowhere (an exporter-less provider),
so nothing but scoring and how it is scheduled differs between the arms. Blocks of
`--block` requests rotate between the arms, A B C C B A ..., in one process, so drift and
the machine's load hit all of them alike; each block's scoring ends before the next block
starts. Latency runs from each request's scheduled start to its end. "+p99 90% interval"
resamples the arms' k-th blocks together (neighbours in time; benchmarks/_percentiles.py).

The arms switch one setting each from the shipped one: the hand-over linger (the runner's
`handover_linger`), the longest pause while the host works (`courtesy.LONGEST_PAUSE`; 0 is
one sleep(0) per slice), and the slice itself (the runner's `gil_slice`; inf never pauses).
Each scoring arm has its runner, made with its settings.

Usage: python benchmarks/handover.py [--rate R] [--blocks N] [--block N] [--after-ms MS]
                                     [--arms NAME ...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from _machine import print_machine
from _percentiles import added_interval, pct
from opentelemetry.sdk.trace import TracerProvider

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _latency_agent import App

from agentscore import Evals, Runner, Telemetry
from agentscore._runtime import courtesy
from agentscore.judges import LocalJudge
from agentscore.pipeline import runner as runner_module
from agentscore.scorers import create_faithfulness_scorer


@dataclass(frozen=True)
class Arm:
    scoring: bool = True
    linger: float = runner_module.HANDOVER_LINGER
    longest_pause: float = courtesy.LONGEST_PAUSE
    gil_slice: float = courtesy.GIL_SLICE

    def runner(self) -> Runner:
        return Runner(
            max_queue=100_000,
            concurrency=4,
            handover_linger=self.linger,
            gil_slice=self.gil_slice,
        )

    def apply(self) -> None:
        courtesy.LONGEST_PAUSE = self.longest_pause


ARMS = {
    "no scoring": Arm(scoring=False),
    "shipped": Arm(),
    "one sleep a pause": Arm(longest_pause=0.0),
    "no pauses": Arm(gil_slice=float("inf")),
    "linger 0": Arm(linger=0.0),
}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--blocks", type=int, default=40, help="per arm")
    parser.add_argument("--block", type=int, default=50)
    parser.add_argument("--after-ms", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0, help="of the Poisson arrivals")
    parser.add_argument(
        "--arms", nargs="+", choices=list(ARMS), default=list(ARMS), help="no scoring always runs"
    )
    args = parser.parse_args()
    names = ["no scoring", *(name for name in args.arms if name != "no scoring")]
    print_machine()
    provider = TracerProvider()
    telemetry = Telemetry(tracer_provider=provider, capture_content=True)
    scorer = create_faithfulness_scorer(LocalJudge())
    runners = {name: ARMS[name].runner() for name in names if ARMS[name].scoring}
    apps = {
        name: App(
            provider,
            Evals(scorers=[scorer], runner=runners[name], telemetry=telemetry)
            if name in runners
            else None,
            args.after_ms / 1000,
        )
        for name in names
    }
    # Per arm, its blocks in order: the k-th blocks of the arms are neighbours in time.
    blocks: dict[str, list[list[int]]] = {name: [] for name in names}
    arrivals = random.Random(args.seed)
    for name, runner in runners.items():  # warm-up: imports, tables, the scoring thread
        for _ in range(int(args.rate) // len(runners) + 1):
            await apps[name].request()
        await runner.aflush(30)
    for block in range(args.blocks * len(names)):
        turn = block % len(names)  # A B C, C B A, A B C, ...
        name = names[turn if (block // len(names)) % 2 == 0 else len(names) - 1 - turn]
        ARMS[name].apply()
        serving = apps[name]
        tasks = []
        offset = 0.0
        start = time.perf_counter_ns()
        kept: list[int] = []
        blocks[name].append(kept)

        async def timed(due: int, kept: list[int] = kept, serving: App = serving) -> None:
            await serving.request()
            kept.append((time.perf_counter_ns() - due) // 1000)

        for _ in range(args.block):
            offset += arrivals.expovariate(args.rate)
            due = start + int(offset * 1e9)
            delay = (due - time.perf_counter_ns()) / 1e9
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(timed(due)))
        await asyncio.gather(*tasks)
        if name in runners:  # a block's jobs end before the next arm starts
            await runners[name].aflush(30)
    ARMS["shipped"].apply()
    print(f"{args.rate:g} requests/s (Poisson), {args.after_ms:g} ms of work after submit, "
          f"{args.blocks} blocks of {args.block} per arm")  # fmt: skip
    times = {name: [v for block in kept for v in block] for name, kept in blocks.items()}
    base = times["no scoring"]
    print(f"{'ms':<22}{'p50':>7}{'p90':>7}{'p99':>7}{'+p50':>7}{'+p90':>7}{'+p99':>7}"
          f"{'+p99 90% interval':>20}{'requests':>10}")  # fmt: skip
    for name, values in times.items():
        row = [pct(values, q) for q in (0.5, 0.9, 0.99)]
        added = [r - pct(base, q) for r, q in zip(row, (0.5, 0.9, 0.99), strict=True)]
        low, high = added_interval(blocks["no scoring"], blocks[name], 0.99)
        print(f"{name:<22}" + "".join(f"{v:>7.2f}" for v in row)
              + "".join(f"{v:>+7.2f}" for v in added)
              + f"{f'{low:+.2f} to {high:+.2f}':>20}{len(values):>10}")  # fmt: skip
    scored = sum(runner.stats().scored for runner in runners.values())
    failed = sum(runner.stats().failed for runner in runners.values())
    print(f"scored {scored}, failed {failed}; load average after {os.getloadavg()}")


if __name__ == "__main__":
    asyncio.run(main())
