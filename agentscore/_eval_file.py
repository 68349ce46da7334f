"""`agentscore eval`: batch scoring of recorded runs from a JSONL file, resumable."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from agentscore._table import render_table
from agentscore.adapters import coerce_messages
from agentscore.batch import EvalItemResult, run_evals_sync
from agentscore.context import run_context
from agentscore.judges.resolve import resolve_judge
from agentscore.scorers import create_faithfulness_scorer, create_hallucination_scorer
from agentscore.scorers.base import Scorer

__all__ = ["EvalOptions", "run_eval_file"]

_SCORERS = {
    "faithfulness": create_faithfulness_scorer,
    "hallucination": create_hallucination_scorer,
}
_UNREACHABLE = {"JudgeConnectionError", "JudgeAuthError", "JudgeTimeoutError"}


@dataclass(frozen=True, slots=True)
class EvalOptions:
    data: str
    scorers: list[str]
    judge: str = "local"
    concurrency: int = 8
    out: str | None = None
    fail_under: float | None = None
    threshold: float = 0.5
    traces: bool = False  # `data` holds traces: score the generations found in them


def run_eval_file(options: EvalOptions) -> int:
    """Exit status: 0 ok, 1 below --fail-under, 2 unusable arguments or input."""
    problem = _check_options(options)
    if problem:
        print(f"agentscore eval: {problem}", file=sys.stderr)
        return 2
    if options.traces:
        from agentscore._eval_traces import read_trace_items

        items, malformed = read_trace_items(Path(options.data))
    else:
        items, malformed = _read_items(Path(options.data))
    for line, reason in malformed:
        where = f"{options.data}:{line}" if line else options.data
        print(f"agentscore eval: {where}: skipped: {reason}", file=sys.stderr)
    if options.out:
        _drop_partial_last_line(Path(options.out))
    done = _done_ids(Path(options.out)) if options.out else set()
    todo = [item for item in items if item["id"] not in done]
    if done:
        print(f"resuming: {len(items) - len(todo)} records already scored in {options.out}")

    judge = resolve_judge(options.judge)
    scorers = [
        _SCORERS[name](judge, get_context=run_context, threshold=options.threshold)
        for name in options.scorers
    ]
    progress = _Progress(len(todo))
    with ExitStack() as stack:
        out = (
            stack.enter_context(Path(options.out).open("a", encoding="utf-8"))
            if options.out
            else None
        )
        stack.callback(progress.close)
        run_evals_sync(
            todo,
            scorers,
            concurrency=options.concurrency,
            on_item_complete=lambda result: _record(result, todo, out, progress),
        )

    rows = _all_rows(Path(options.out)) if options.out else progress.rows
    summary = _summarize(rows, scorers)
    print(render_table(["scorer", "mean", "pass rate", "scored", "failed"], summary.table))
    if summary.unreachable:
        print(
            f"agentscore eval: every judge call failed ({', '.join(sorted(summary.unreachable))}); "
            "check OPENAI_BASE_URL / OPENAI_API_KEY, or use --judge local",
            file=sys.stderr,
        )
    if options.fail_under is not None and any(
        rate is None or rate < options.fail_under for rate in summary.pass_rates.values()
    ):
        print(
            f"agentscore eval: pass rate below --fail-under {options.fail_under}", file=sys.stderr
        )
        return 1
    return 0


def _check_options(options: EvalOptions) -> str | None:
    unknown = [name for name in options.scorers if name not in _SCORERS]
    if unknown or not options.scorers:
        return f"unknown scorer(s) {unknown}; choose from {sorted(_SCORERS)}"
    if not Path(options.data).is_file():
        return f"cannot read {options.data!r}: no such file"
    if options.concurrency < 1:
        return "--concurrency must be at least 1"
    if not 0 <= options.threshold <= 1:
        return "--threshold must lie in [0, 1]"
    if options.judge != "local" and not (
        os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")
    ):
        return (
            f"the judge {options.judge!r} needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local "
            "OpenAI-compatible server); use --judge local to score offline"
        )
    return None


def _read_items(path: Path) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    items: list[dict[str, Any]] = []
    malformed: list[tuple[int, str]] = []
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                items.append(_item(json.loads(line), number))
            except json.JSONDecodeError as exc:
                malformed.append((number, f"not valid JSON ({exc.msg})"))
            except (TypeError, ValueError) as exc:
                malformed.append((number, str(exc)))
    return items, malformed


def _item(record: object, line: int) -> dict[str, Any]:
    """A record as `run_evals` takes it. `messages` (a whole conversation) is split at the
    last user message into input and output."""
    if not isinstance(record, Mapping):
        raise ValueError("a record must be a JSON object")
    if "messages" in record:
        messages = coerce_messages(record["messages"])
        last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        if last_user < 0:
            raise ValueError("'messages' has no user message")
        record = {**record, "input": messages[: last_user + 1], "output": messages[last_user + 1 :]}
    if "input" not in record or "output" not in record:
        raise ValueError("a record needs 'input' and 'output' (or 'messages')")
    context = record.get("context")
    if context is not None and not (
        isinstance(context, str)
        or (isinstance(context, list) and all(isinstance(c, str) for c in context))
    ):
        raise ValueError("'context' must be a string or a list of strings")
    coerce_messages(record["output"])  # reject unusable shapes here, with the line number
    return {**record, "id": str(record.get("id") or f"line-{line}")}


def _drop_partial_last_line(path: Path) -> None:
    """An interrupted run can leave half a line; cut it so new lines start clean."""
    if not path.is_file():
        return
    with path.open("rb+") as file:
        data = file.read()
        if data and not data.endswith(b"\n"):
            file.truncate(data.rfind(b"\n") + 1)


def _done_ids(path: Path) -> set[str]:
    return {str(row["id"]) for row in _all_rows(path) if "id" in row}


def _all_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by an interruption: that record is scored again
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _record(
    result: EvalItemResult, items: list[dict[str, Any]], out: TextIO | None, progress: _Progress
) -> None:
    row = {
        "id": items[result.index]["id"],
        "error": result.error,
        "scores": {
            scorer_id: {
                "score": score.score,
                "passed": score.passed,
                "label": score.label,
                "status": score.status.value,
                "reason": score.reason,
                "error": None if score.error is None else score.error.model_dump(),
                "judge_calls": score.judge_usage.calls,
            }
            for scorer_id, score in result.scorer_results.items()
        },
    }
    if out is not None:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        out.flush()
    progress.advance(row)


@dataclass(slots=True)
class _Summary:
    table: list[list[str]]
    pass_rates: dict[str, float | None]
    unreachable: set[str]


def _summarize(rows: list[dict[str, Any]], scorers: list[Scorer]) -> _Summary:
    table, rates, error_types = [], {}, []
    for scorer in scorers:
        entries = [row["scores"][scorer.id] for row in rows if scorer.id in row.get("scores", {})]
        scores = [e["score"] for e in entries if e.get("status") == "scored"]
        verdicts = [bool(e["passed"]) for e in entries if e.get("passed") is not None]
        failures = [e for e in entries if e.get("status") == "failed"]
        error_types += [(e.get("error") or {}).get("type", "") for e in failures]
        rate = sum(verdicts) / len(verdicts) if verdicts else None
        rates[scorer.id] = rate
        table.append(
            [
                scorer.id,
                f"{sum(scores) / len(scores):.3f}" if scores else "-",
                f"{rate:.1%}" if rate is not None else "-",
                str(len(scores)),
                str(len(failures)),
            ]
        )
    total = sum(len(row.get("scores", {})) for row in rows)
    unreachable = set(error_types) & _UNREACHABLE if total and len(error_types) == total else set()
    return _Summary(table, rates, unreachable)


class _Progress:
    """A progress line on stderr for runs long enough to need one."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.rows: list[dict[str, Any]] = []
        self._shown = total >= 20
        self._last = 0.0

    def advance(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        now = time.monotonic()
        if self._shown and (now - self._last > 0.2 or len(self.rows) == self.total):
            self._last = now
            filled = int(30 * len(self.rows) / self.total)
            bar = "#" * filled + "-" * (30 - filled)
            print(f"\rscoring [{bar}] {len(self.rows)}/{self.total}", end="", file=sys.stderr)

    def close(self) -> None:
        if self._shown and self.rows:
            print(file=sys.stderr)
