"""The results file of `agentscore eval --out`, read back and checked line by line.

Every report and gate is computed from these rows, so a row that is not what `eval` writes
(a score that is text, a record that is not an object, a field missing) is refused with its
file and line rather than guessed at: a guess could crash the command, or quietly pass a gate.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentscore.ci._jsonl import read_lines

__all__ = ["ResultsFileError", "read_result_rows"]

_COUNTS = ("judge_calls", "input_tokens", "output_tokens")
_LEVELS = ("generation", "trace", "conversation")


class ResultsFileError(ValueError):
    """A line of a results file that cannot be used, named by file and line."""

    def __init__(self, path: Path, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


def read_result_rows(path: Path) -> list[dict[str, Any]]:
    """The rows in file order. A last line cut short by an interruption (no "\\n", not JSON)
    is left out: that record is scored again. Any other unusable line raises
    `ResultsFileError`."""
    rows: list[dict[str, Any]] = []
    for line in read_lines(path):
        try:
            row = json.loads(line.text)
        except (json.JSONDecodeError, RecursionError) as exc:
            if not line.ended:
                continue
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            raise ResultsFileError(path, line.number, f"not valid JSON ({reason})") from None
        problem = _row_problem(row)
        if problem:
            raise ResultsFileError(path, line.number, problem)
        rows.append(row)
    return rows


def _row_problem(row: object) -> str | None:
    if not isinstance(row, dict):
        return f"a results line must be a JSON object, not {_described(row)}"
    if not isinstance(row.get("id"), str):
        return _wrong(row, "id", "the record 'id'", "a string")
    if "level" in row and row["level"] not in _LEVELS:
        return _wrong(row, "level", "the target 'level'", " or ".join(map(repr, _LEVELS)))
    if row.get("error") is not None and not isinstance(row["error"], str):
        return _wrong(row, "error", "the record 'error'", "a string or null")
    scores = row.get("scores")
    if "scores" not in row and ("input" in row or "messages" in row):
        return "a record to score, not its result: give the file `agentscore eval --out` wrote"
    if not isinstance(scores, dict):
        return _wrong(row, "scores", "'scores'", "an object of scores by scorer")
    for scorer_id, entry in scores.items():
        problem = _entry_problem(entry)
        if problem:
            return f"the {scorer_id!r} score: {problem}"
    return None


def _entry_problem(entry: object) -> str | None:
    if not isinstance(entry, dict):
        return f"{_described(entry)}, expected an object"
    if not isinstance(entry.get("status"), str):
        return _wrong(entry, "status", "'status'", "a string")
    # null only for a score that was not computed (failed, no claims, no context)
    score = entry.get("score")
    nullable = "score" in entry and entry["status"] != "scored"
    if not (_is_number(score) or (nullable and score is None)):
        return _wrong(entry, "score", "'score'", "a number")
    if "passed" not in entry or not any(entry["passed"] is v for v in (True, False, None)):
        return _wrong(entry, "passed", "'passed'", "true, false or null")
    for key in ("reason", "label"):
        if entry.get(key) is not None and not isinstance(entry[key], str):
            return _wrong(entry, key, f"{key!r}", "a string or null")
    if entry.get("error") is not None and not isinstance(entry["error"], dict):
        return _wrong(entry, "error", "'error'", "an object or null")
    claims = entry.get("failing_claims")
    if claims is not None and not (
        isinstance(claims, list) and all(isinstance(claim, dict) for claim in claims)
    ):
        return _wrong(entry, "failing_claims", "'failing_claims'", "a list of objects")
    for key in _COUNTS:
        count = entry.get(key)
        if count is not None and not (_is_number(count) and count == int(count) >= 0):
            return _wrong(entry, key, f"{key!r}", "a whole number")
    return None


def _is_number(value: object) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        return False


def _wrong(found: Mapping[str, Any], key: str, name: str, expected: str) -> str:
    if key not in found:
        return f"{name} is missing; expected {expected}"
    return f"{name} is {_described(found[key])}; expected {expected}"


def _described(value: object) -> str:
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    kind = next((name for cls, name in kinds.items() if type(value) is cls), "a number")
    shown = json.dumps(value)  # ASCII only: any text is safe to print
    return f"{kind} {shown[:60]}{'...' if len(shown) > 60 else ''}"
