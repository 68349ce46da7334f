"""`agentscore eval` in CI: how fast a run with a dead judge stops, and what reports cost.

(a) An unreachable judge (`OPENAI_BASE_URL` on a closed port of 127.0.0.1) on a 2,000-record
    file: wall time to exit and lines printed, with the circuit breaker (default 20 failed
    scores in a row) and, as the peer in the same run, without it (`--max-consecutive-failures
    0`, every record tried, as before the breaker existed) on a 100-record file, extrapolated
    to 2,000 per record.
(b) The cost of the CI reports: 2,000 records scored by the offline local judge, with `--out`
    alone vs with `--out --junit --markdown`, median of `--repeat` runs each, alternated.

Each run is a fresh `python -m agentscore.cli` process, as CI runs it (import time included).

Usage: python benchmarks/eval_ci.py [--records N] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _machine import print_machine

ROOT = Path(__file__).resolve().parent.parent
RECORD = {
    "input": "When was Python first released?",
    "output": "Python was first released in 1991. It was written at Google.",
    "context": ["The first version of Python was released in 1991."],
}


def write_records(path: Path, count: int) -> Path:
    path.write_text("".join(json.dumps({**RECORD, "id": f"r{n}"}) + "\n" for n in range(count)))
    return path


def run(args: list[str], env: dict[str, str]) -> tuple[float, int, int]:
    """Seconds, exit status and lines printed (stdout and stderr)."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "agentscore.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    took = time.perf_counter() - started
    return took, done.returncode, len((done.stdout + done.stderr).splitlines())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OTEL_"))}
    base_env["PYTHONPATH"] = str(ROOT)
    dead_judge = {
        **base_env,
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",  # nothing listens there
        "OPENAI_API_KEY": "sk-benchmark-not-a-real-key",
    }
    print_machine()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        big = write_records(work / "big.jsonl", options.records)
        small = write_records(work / "small.jsonl", 100)

        print(f"\n(a) unreachable judge, {options.records} records")
        took, status, lines = run(["eval", str(big), "--judge", "m"], dead_judge)
        print(f"  with the breaker:    exit {status} after {took:.1f} s, {lines} lines printed")
        took_all, status_all, lines_all = run(
            ["eval", str(small), "--judge", "m", "--max-consecutive-failures", "0"], dead_judge
        )
        projected = took_all / 100 * options.records
        print(
            f"  without (100 records): exit {status_all} after {took_all:.1f} s, {lines_all} "
            f"lines; {options.records} records at that rate: {projected:.0f} s"
        )
        print(f"  ratio, without / with: {projected / took:.0f}x")

        print(f"\n(b) reports, {options.records} records, local judge, median of {options.repeat}")
        plain, reports = [], []
        for index in range(options.repeat):
            out = work / f"plain-{index}.jsonl"
            plain.append(run(["eval", str(big), "--out", str(out)], base_env)[0])
            out = work / f"reports-{index}.jsonl"
            extra = ["--junit", str(work / "r.xml"), "--markdown", str(work / "r.md")]
            reports.append(run(["eval", str(big), "--out", str(out), *extra], base_env)[0])
        p, r = statistics.median(plain), statistics.median(reports)
        print(f"  --out only:                   {p:.2f} s")
        print(f"  --out --junit --markdown:     {r:.2f} s  (ratio {r / p:.3f})")
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
