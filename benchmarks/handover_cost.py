"""The agent process's CPU per scored run, by runner: what scoring takes out of the process
whose requests it scores.

One process submits answers with `Evals.submit` (faithfulness, local judge, no telemetry)
at Poisson arrivals (`--rate`), `--seconds` per arm, arms alternating A B C C B A ...
"this process" is its CPU (every thread of it) per submitted run, less the no-scoring arm's
(the submitting loop alone); "scoring process" is the CPU of `ProcessRunner`'s child (Linux
/proc), start-up included, and "total" the two together: what the machine pays.

Arms: no scoring; `Runner` (scoring on a thread of this process); `ProcessRunner` (scoring
in a process forked from this one; results come back only when a sink wants them, so an
arm with an `on_score` sink is shown too).

Usage: python benchmarks/handover_cost.py [--rate R] [--seconds S] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

from _machine import print_machine

from agentscore import Evals, ProcessRunner, Runner, ScoreResult
from agentscore.judges import LocalJudge
from agentscore.scorers import create_faithfulness_scorer

TOOL = {"role": "tool", "tool_call_id": "c1", "content": json.dumps(
    {"order_id": 42, "status": "shipped", "shipped": "May 2", "eta": "May 5"})}  # fmt: skip
CALL = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "lookup_order", "arguments": '{"order_id": 42}'}}]}  # fmt: skip
ANSWER = {"role": "assistant", "content": "Order 42 shipped on May 2 and arrives on May 5."}
ARMS = ("no scoring", "Runner", "ProcessRunner", "ProcessRunner + on_score")


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_arm(arm: str, rate: float, seconds: float, seed: int) -> tuple[float, float, int]:
    """(this process's CPU, the scoring process's CPU, runs submitted)."""
    scorer = create_faithfulness_scorer(LocalJudge())
    received: list[ScoreResult] = []
    runner: Runner | ProcessRunner | None = None
    if arm == "Runner":
        runner = Runner(max_queue=100_000, concurrency=4)
    elif arm.startswith("ProcessRunner"):
        runner = ProcessRunner(max_queue=100_000, concurrency=4)
    sink = received.append if arm.endswith("on_score") else None
    evals = Evals(scorers=[scorer], runner=runner, on_score=sink) if runner else None
    arrivals = random.Random(seed)
    runs = int(rate * seconds)
    cpu = time.process_time()
    due = time.perf_counter()
    for _ in range(runs):
        due += arrivals.expovariate(rate)
        time.sleep(max(0.0, due - time.perf_counter()))
        if evals is not None:
            evals.submit("Where is order 42?", [CALL, TOOL, ANSWER])
    child = 0.0
    if runner is not None:
        runner.flush(60)
        pid = getattr(runner, "child_pid", None)
        child = process_cpu(pid) if pid else 0.0
        runner.shutdown(60)
    if sink is not None:
        assert len(received) == runs, (len(received), runs)
    return time.process_time() - cpu, child, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    print_machine()
    own: dict[str, list[float]] = {arm: [] for arm in ARMS}
    child: dict[str, list[float]] = {arm: [] for arm in ARMS}
    for round_ in range(args.rounds):
        for arm in ARMS if round_ % 2 == 0 else reversed(ARMS):
            cpu, child_cpu, runs = one_arm(arm, args.rate, args.seconds, seed=round_)
            own[arm].append(cpu * 1e6 / runs)
            child[arm].append(child_cpu * 1e6 / runs)
    base = sum(own["no scoring"]) / args.rounds
    print(f"\n{args.rate:g} runs/s, {args.rounds} x {args.seconds:g} s per arm; µs per run")
    print(f"{'arm':<26}{'this process':>14}{'scoring process':>17}{'total':>9}")
    for arm in ARMS[1:]:
        mine = sum(own[arm]) / args.rounds - base
        theirs = sum(child[arm]) / args.rounds
        print(f"{arm:<26}{mine:>14.0f}{theirs:>17.0f}{mine + theirs:>9.0f}")
    print(f"(the submitting loop alone: {base:.0f} µs per run)")


if __name__ == "__main__":
    main()
