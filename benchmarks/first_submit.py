"""What the first `Evals.submit` of a process costs its caller, beside the later ones.

The first submit after import starts agentscore's background machinery (the scoring loop's
thread, the runner's dispatcher); the caller must not wait for it. Each of `--processes` fresh
processes imports agentscore, builds an `Evals` (faithfulness, offline local judge), and times
the wall time of its first `Evals.submit`, then of `--later` submits `--gap-ms` apart (the
next requests, made while the background still starts up), then flushes and checks that every
run was scored. Also shown: how long after the first submit its score was delivered (the
start-up the caller no longer waits for, plus the runner's 5 ms hand-over linger). With 30
processes, the first submit's p99 is the slowest of the 30.

Usage: python benchmarks/first_submit.py [--processes N] [--later K] [--gap-ms MS]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _machine import print_machine
from _percentiles import pct

ANSWER = "Order 42 shipped on May 2 and arrives on May 5."
TOOL = {"role": "tool", "tool_call_id": "c1", "content": json.dumps(
    {"order_id": 42, "status": "shipped", "shipped": "May 2", "eta": "May 5"})}  # fmt: skip
CALL = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "lookup_order", "arguments": '{"order_id": 42}'}}]}  # fmt: skip
OUTPUT = [CALL, TOOL, {"role": "assistant", "content": ANSWER}]


def one_process(later: int, gap: float) -> dict[str, Any]:
    """Runs in a fresh process: the first submit's and the later submits' wall times (µs)."""
    started = time.perf_counter()
    from agentscore import Evals, ScoreResult, ScoreStatus, default_runner
    from agentscore.scorers import create_faithfulness_scorer

    imported = time.perf_counter()
    delivered: list[float] = []

    def on_score(result: ScoreResult) -> None:
        if result.status is ScoreStatus.SCORED:
            delivered.append(time.perf_counter())

    evals = Evals(scorers=[create_faithfulness_scorer("local")], on_score=on_score)
    built = time.perf_counter()
    before = time.perf_counter_ns()
    evals.submit("Where is order 42?", OUTPUT)
    first = time.perf_counter_ns() - before
    submitted = time.perf_counter()
    later_us: list[int] = []
    for _ in range(later):
        time.sleep(gap)
        before = time.perf_counter_ns()
        evals.submit("Where is order 42?", OUTPUT)
        later_us.append((time.perf_counter_ns() - before) // 1000)
    flushed = default_runner().flush(120)
    stats = default_runner().stats()
    return {
        "import_ms": (imported - started) * 1000,
        "build_ms": (built - imported) * 1000,
        "first_us": first // 1000,
        "later_us": later_us,
        "first_scored_ms": (min(delivered) - submitted) * 1000 if delivered else None,
        "flushed": flushed,
        "submitted": stats.submitted,
        "scored": stats.scored,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=30)
    parser.add_argument("--later", type=int, default=20)
    parser.add_argument("--gap-ms", type=float, default=1.0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process(args.later, args.gap_ms / 1000)))
        return

    print_machine()
    print(
        f"{args.processes} fresh processes; per process: import, Evals(faithfulness, local), "
        f"1 first submit, {args.later} later submits {args.gap_ms} ms apart"
    )
    here = str(Path(__file__).resolve())
    runs: list[dict[str, Any]] = []
    for _ in range(args.processes):
        command = [sys.executable, here, "--child", f"--later={args.later}"]
        command.append(f"--gap-ms={args.gap_ms}")
        reply = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300)
        runs.append(json.loads(reply.stdout.strip().splitlines()[-1]))

    first: list[int] = [run["first_us"] for run in runs]
    later: list[int] = [value for run in runs for value in run["later_us"]]
    scored_after: list[float] = [run["first_scored_ms"] for run in runs if run["first_scored_ms"]]
    incomplete = [run for run in runs if not run["flushed"] or run["scored"] != run["submitted"]]
    imports = sorted(run["import_ms"] for run in runs)
    print(f"import of agentscore: p50 {imports[len(imports) // 2]:.0f} ms")
    print(f"{'':24} {'p50 ms':>9} {'p99 ms':>9}")
    print(f"{'first submit':24} {pct(first, 0.5):9.3f} {pct(first, 0.99):9.3f}")
    print(f"{'later submits':24} {pct(later, 0.5):9.3f} {pct(later, 0.99):9.3f}")
    print(
        f"{'first / later':24} {pct(first, 0.5) / pct(later, 0.5):9.1f} "
        f"{pct(first, 0.99) / pct(later, 0.99):9.1f}"
    )
    scored_us = [int(ms * 1000) for ms in scored_after]
    print(
        f"{'first score delivered':24} {pct(scored_us, 0.5):9.1f} {pct(scored_us, 0.99):9.1f}"
        "   (after the first submit returned)"
    )
    print(f"load average after: {os.getloadavg()}")
    if incomplete:
        print(f"NOT ALL SCORED in {len(incomplete)} processes: {incomplete[:3]}")
        sys.exit(1)


if __name__ == "__main__":
    main()
