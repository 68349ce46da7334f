"""Local-judge CPU per KB of context: faithfulness + hallucination scoring the same run.

Each run is an agent turn whose tool returned a JSON list of orders (1 KB to 1 MB of it),
answered with five claims about three of the orders (two restated, one with a wrong
status, one with a wrong date, one invented). Both scorers resolve their context from the
run's tool results, as a live agent's would, and judge it with `LocalJudge()`. CPU time
(`time.process_time`, this process only) covers both scores of one run; each repetition
uses a fresh run whose tool result differs (another customer name), so no repetition
reuses what an earlier one derived. The verdicts of each size are printed so before / after
runs can be compared for identical results.

Usage: python benchmarks/context_cost.py [--sizes KB,KB,...] [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import tracemalloc
from pathlib import Path

from _machine import print_machine

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentscore.judges import LocalJudge  # noqa: E402
from agentscore.result import ScoreResult  # noqa: E402
from agentscore.run import ScorerRun  # noqa: E402
from agentscore.scorers import (  # noqa: E402
    create_faithfulness_scorer,
    create_hallucination_scorer,
)

CITIES = ("Lyon", "Porto", "Ghent", "Turin", "Leeds", "Malmo", "Graz", "Cork")
STATUSES = ("shipped", "delivered", "cancelled", "processing")
ITEMS = ("walking boots", "rain jacket", "wool socks", "trail map", "water bottle")
ANSWER = (
    "Order 1000 was shipped on 2024-03-02 to Lyon. "
    "Order 1001 contains a rain jacket and costs 12.5 euros. "
    "Order 1002 was delivered. "
    "Order 1003 arrives on 2024-09-30. "
    "Every order includes free gift wrapping."
)


def orders(kilobytes: int, customer: str) -> list[dict[str, object]]:
    """Orders whose JSON takes about `kilobytes` KB."""
    out: list[dict[str, object]] = []
    size = 0
    n = 0
    while size < kilobytes * 1000:
        record: dict[str, object] = {
            "order_id": 1000 + n,
            "customer": customer,
            "status": STATUSES[n % len(STATUSES)],
            "item": ITEMS[n % len(ITEMS)],
            "price_eur": round(10 + (n * 2.5) % 90, 2),
            "city": CITIES[n % len(CITIES)],
            "shipped_on": f"2024-{1 + n % 12:02d}-{1 + n % 28:02d}",
        }
        out.append(record)
        size += len(json.dumps(record)) + 2
        n += 1
    return out


def agent_run(kilobytes: int, customer: str) -> ScorerRun:
    result = json.dumps({"orders": orders(kilobytes, customer)})
    call = {"id": "c1", "type": "function", "function": {"name": "orders", "arguments": "{}"}}
    return ScorerRun(
        input=[{"role": "user", "content": "What about my recent orders?"}],
        output=[
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": result},
            {"role": "assistant", "content": ANSWER},
        ],
    )


async def score_both(run: ScorerRun) -> list[ScoreResult]:
    judge = LocalJudge()
    scorers = (create_faithfulness_scorer(judge), create_hallucination_scorer(judge))
    return [await scorer.run(run) for scorer in scorers]


def verdicts(results: list[ScoreResult]) -> str:
    out = []
    for result in results:
        if result.error is not None:
            out.append(f"{result.status}:{result.error.type}")
            continue
        shape = result.analyze_step_result or {}
        marks = "".join(str(v.get("verdict", "?"))[0] for v in shape.get("verdicts", []))
        out.append(f"{result.score}[{marks}]")
    return " ".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="1,10,100,390,1000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print_machine()
    asyncio.run(score_both(agent_run(1, "warm-up")))  # imports and tables: not counted
    print(f"{'KB':>6}{'CPU ms (min)':>14}{'ms per KB':>11}{'peak MB':>9}  verdicts")
    for kilobytes in (int(s) for s in args.sizes.split(",")):
        times = []
        peak = 0
        outcome = ""
        for repeat in range(args.repeat):
            run = agent_run(kilobytes, f"customer-{repeat}")
            traced = repeat == args.repeat - 1  # tracemalloc slows the run: its own pass
            if traced:
                tracemalloc.start()
            started = time.process_time()
            results = asyncio.run(score_both(run))
            elapsed = time.process_time() - started
            if traced:
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
            else:
                times.append(elapsed)
            outcome = verdicts(results)
        best = min(times or [elapsed]) * 1000
        print(
            f"{kilobytes:>6}{best:>14.1f}{best / kilobytes:>11.3f}{peak / 2**20:>9.1f}  {outcome}"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
