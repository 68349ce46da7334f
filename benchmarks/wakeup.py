"""How long a host thread waits for the GIL when it wakes, beside agentscore's scoring loop.

A request arrives at a thread that was idle: the kernel wakes it, and it must take the GIL
before it runs a line. If the scoring thread holds the GIL then, the request waits for the
rest of its slice, and on a machine with no core to spare also for as long as the kernel
keeps the scoring thread off a CPU, GIL and all. This measures that wait and nothing else:
a host thread sleeps until Poisson arrivals (`--rate`), records how late it woke (the timer's
own lateness included, which the "no scoring" arm shows), works `--work-ms` of Python and
submits its answer with `Evals.submit` (faithfulness, local judge), as an agent's request
does. Arms alternate in one process, A B C C B A ..., `--seconds` each.

Arms: no scoring; in process as shipped; the same with other slices of the scoring thread's
CPU between its pauses (the runner's `gil_slice`; inf: it never pauses). `--load N` runs N busy
processes throughout. "runs/s" is what the scorer scored meanwhile (what it cannot score
then waits in its queue and is scored between the arms): what shorter slices cost.

Usage: python benchmarks/wakeup.py [--load N] [--rate R] [--seconds S] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

from _machine import print_machine
from _percentiles import added_interval, pct

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_latency import cpu_load

from agentscore import Evals, Runner
from agentscore.judges import LocalJudge
from agentscore.scorers import create_faithfulness_scorer

ANSWER = "Order 42 shipped on May 2 and arrives on May 5."
TOOL = {"role": "tool", "tool_call_id": "c1", "content": json.dumps(
    {"order_id": 42, "status": "shipped", "shipped": "May 2", "eta": "May 5"})}  # fmt: skip
CALL = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "lookup_order", "arguments": '{"order_id": 42}'}}]}  # fmt: skip
ANSWER_MESSAGE = {"role": "assistant", "content": ANSWER}
ARMS = {  # name: the runner that scores, or None for no scoring
    "no scoring": None,
    "in process": "thread",
    "slice 0.1 ms": "slice 0.1 ms",
    "no pauses": "no pauses",
}


def spin(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def one_arm(
    evals: Evals | None, runner: Runner, args: argparse.Namespace, seed: int
) -> tuple[list[int], float]:
    """The host's wake-up delays (µs) and the runs scored per second meanwhile."""
    arrivals = random.Random(seed)
    delays: list[int] = []
    scored = runner.stats().scored
    started = time.perf_counter()
    end = started + args.seconds
    while time.perf_counter() < end:
        wait = arrivals.expovariate(args.rate)
        due = time.perf_counter() + wait
        time.sleep(wait)
        delays.append(int((time.perf_counter() - due) * 1e6))
        spin(args.work_ms / 1000)
        if evals is not None:  # the request's answer, handed over at its end
            evals.submit("Where is order 42?", [CALL, TOOL, ANSWER_MESSAGE])
    elapsed = time.perf_counter() - started
    rate = (runner.stats().scored - scored) / elapsed
    runner.flush(120)  # what is left is scored between the arms, unmeasured
    return delays, rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--load", type=int, default=0, help="busy processes throughout")
    parser.add_argument("--rate", type=float, default=200.0, help="host wake-ups per second")
    parser.add_argument("--work-ms", type=float, default=0.5, help="host work per wake-up")
    parser.add_argument("--seconds", type=float, default=2.0, help="per arm and round")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    print_machine()
    scorers = [create_faithfulness_scorer(LocalJudge())]
    runners: dict[str, Runner] = {
        "thread": Runner(max_queue=10_000, concurrency=4),
        "slice 0.1 ms": Runner(max_queue=10_000, concurrency=4, gil_slice=0.0001),
        "no pauses": Runner(max_queue=10_000, concurrency=4, gil_slice=float("inf")),
    }
    evals = {kind: Evals(scorers=scorers, runner=runner) for kind, runner in runners.items()}
    for kind, runner in runners.items():
        evals[kind].submit("warm-up", [CALL, TOOL, ANSWER_MESSAGE])
        runner.flush(30)
    rounds: dict[str, list[list[int]]] = {name: [] for name in ARMS}
    rates: dict[str, list[float]] = {name: [] for name in ARMS}
    names = list(ARMS)
    with cpu_load(args.load):
        time.sleep(0.5)
        for round_ in range(args.rounds):
            for name in names if round_ % 2 == 0 else reversed(names):
                kind = ARMS[name]
                runner = runners[kind or "thread"]
                arm_evals = None if kind is None else evals[kind]
                delays, rate = one_arm(arm_evals, runner, args, round_)
                rounds[name].append(delays)
                rates[name].append(rate)
    print(
        f"{args.load} busy processes, {args.rate:g} wake-ups/s with {args.work_ms:g} ms of work"
        f" each, {args.rounds} x {args.seconds:g} s per arm; load average {os.getloadavg()[0]:.2f}"
    )
    head = f"{'wake-up delay, µs':<20}{'p50':>8}{'p90':>8}{'p99':>8}"
    print(f"{head}{'+p90 90% interval':>22}{'runs/s':>9}")
    for name in names:
        values = [v for kept in rounds[name] for v in kept]
        low, high = added_interval(rounds["no scoring"], rounds[name], 0.9)
        row = "".join(f"{pct(values, q) * 1000:>8.0f}" for q in (0.5, 0.9, 0.99))
        span = f"{low * 1000:+.0f} to {high * 1000:+.0f}"
        print(f"{name:<20}{row}{span:>22}{sum(rates[name]) / len(rates[name]):>9.0f}")


if __name__ == "__main__":
    main()
