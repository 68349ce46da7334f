"""Batch evaluation of recorded runs from a JSONL file, with the offline local judge.

Each record has `input` and `output` (or a whole `messages` conversation with tool calls)
and optionally its own `context`; `run_context` hands a record's context, or else its tool
results, to the scorers. The same file works from the command line, resumable:

    agentscore eval examples/data/support_runs.jsonl --out results.jsonl --fail-under 0.5
    python examples/batch_eval.py
"""

from __future__ import annotations

import json
from pathlib import Path

from agentscore.adapters import coerce_messages
from agentscore.ci.batch import run_evals_sync
from agentscore.context import run_context
from agentscore.scorers import create_faithfulness_scorer, create_hallucination_scorer

DATA = Path(__file__).with_name("data") / "support_runs.jsonl"


def load(path: Path) -> list[dict[str, object]]:
    items = []
    # JSONL lines end at "\n" only: splitlines() would also cut at U+2028 inside a string.
    for line in path.read_text(encoding="utf-8").split("\n"):
        if not line.strip():
            continue
        record = json.loads(line)
        if "messages" in record:  # split a conversation into the question and the answer
            messages = coerce_messages(record.pop("messages"))
            record["input"], record["output"] = messages[:1], messages[1:]
        items.append(record)
    return items


def main() -> None:
    items = load(DATA)
    scorers = [
        create_faithfulness_scorer("local", get_context=run_context),
        create_hallucination_scorer("local", get_context=run_context),
    ]
    report = run_evals_sync(items, scorers, concurrency=4)
    for item in report.items:
        scores = {k: v.score for k, v in item.scorer_results.items()}
        print(f"{items[item.index]['id']:<20} {scores}")
    for summary in report.summaries.values():
        rate = "-" if summary.pass_rate is None else f"{summary.pass_rate:.0%}"
        print(f"{summary.scorer_id}: mean {summary.mean:.2f}, pass rate {rate}")


if __name__ == "__main__":
    main()
