"""Markdown reports for CI job pages, and where they are written.

`GITHUB_STEP_SUMMARY` names the file GitHub Actions renders on a job's summary page; a
report is appended there when it is set, so the job shows it without extra steps.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentscore.ci._failing import case_outcome, due

__all__ = ["Own", "cell", "publish", "render_eval", "table"]

_SHOWN_CLAIMS = 3
_MARKUP_ESCAPES = {"\\": "\\\\", "|": "\\|", "&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MARKUP = re.compile("[\\\\|&<>]")
# Every line end `str.splitlines` knows; "\r\n" is one.
_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
_UNSHOWABLE = re.compile("[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f\ud800-\udfff]")


class Own(str):
    """Text agentscore writes itself (`pass -> fail`, `1 -> 0`), put in a cell as it is."""

    __slots__ = ()


def cell(text: object) -> str:
    """Any text as one markdown table cell (or heading): pipes and backslashes escaped, HTML
    written as text (the job summary renders HTML), every line break a `<br>` (a raw one
    would end the table row), and what no page can show (control characters, lone
    surrogates) U+FFFD."""
    if isinstance(text, Own):
        return text
    text = _MARKUP.sub(lambda found: _MARKUP_ESCAPES[found[0]], str(text))
    return _UNSHOWABLE.sub("\ufffd", _LINE_BREAK.sub("<br>", text))


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)


def publish(text: str, path: str | None) -> None:
    """Write the report to `path` (if given) and append it to `$GITHUB_STEP_SUMMARY`."""
    if path:
        Path(path).write_text(text, encoding="utf-8", errors="backslashreplace")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with Path(summary).open("a", encoding="utf-8", errors="backslashreplace") as file:
            file.write(text)


def render_eval(
    *,
    title: str,
    headers: Sequence[str],
    summary: Sequence[Sequence[str]],
    rows: Sequence[Mapping[str, Any]],
    scorers: Sequence[tuple[str, str, bool]],
    judge: str,
    price: tuple[float, float] | None,
    worst: int = 5,
) -> str:
    """`scorers`: each scorer's id, level and whether a higher score is better."""
    parts = [f"## agentscore eval: {cell(title)}", "", table(headers, summary), ""]
    parts += [_judge_line(rows, judge, price), ""]
    for scorer_id, level, higher in scorers:
        judged = [row for row in rows if due(row, scorer_id, level)]
        parts += _worst_records(judged, scorer_id, higher, worst)
    return "\n".join(parts) + "\n"


def _judge_line(
    rows: Sequence[Mapping[str, Any]], judge: str, price: tuple[float, float] | None
) -> str:
    entries = [entry for row in rows for entry in (row.get("scores") or {}).values()]
    calls = sum(int(entry.get("judge_calls") or 0) for entry in entries)
    tokens_in = sum(int(entry.get("input_tokens") or 0) for entry in entries)
    tokens_out = sum(int(entry.get("output_tokens") or 0) for entry in entries)
    if price is not None:
        dollars = (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
        cost = f"${dollars:.4f} (at ${price[0]:g} / ${price[1]:g} per million tokens in / out)"
    elif not calls:
        cost = "$0 (no request sent)"
    else:
        cost = "not computed (give `--judge-price IN,OUT`, dollars per million tokens)"
    return (
        f"**Judge** `{cell(judge)}`: {calls} requests, {tokens_in} input and {tokens_out} "
        f"output tokens, cost {cost}."
    )


def _worst_records(
    rows: Sequence[Mapping[str, Any]], scorer_id: str, higher: bool, limit: int
) -> list[str]:
    failing = [row for row in rows if case_outcome(row, scorer_id) in ("failure", "error")]
    if not failing:
        return []

    def badness(row: Mapping[str, Any]) -> tuple[int, float, str]:
        # Ties by record id: the same results make the same report, whatever order the
        # records finished in.
        record_id = str(row.get("id", ""))
        score = (row.get("scores", {}).get(scorer_id) or {}).get("score")
        if score is None:
            return (1, 0.0, record_id)  # errors after the failures they cannot be ranked against
        return (0, score if higher else -score, record_id)

    shown = sorted(failing, key=badness)[:limit]
    lines = [f"### Worst records: {cell(scorer_id)} ({len(failing)} failing)", ""]
    lines.append(table(["record", "score", "why"], [_worst_row(row, scorer_id) for row in shown]))
    if len(failing) > limit:
        lines.append(f"\nand {len(failing) - limit} more.")
    return [*lines, ""]


def _worst_row(row: Mapping[str, Any], scorer_id: str) -> list[object]:
    entry = row.get("scores", {}).get(scorer_id) or {}
    if row.get("error"):
        return [row.get("id"), "error", row["error"]]
    error = entry.get("error")
    if error:
        return [row.get("id"), "error", f"{error.get('type')}: {error.get('message')}"]
    claims = entry.get("failing_claims") or []
    why = str(entry.get("reason") or "")
    why += "".join(
        f"\n- {claim.get('verdict')}: {claim.get('claim')}" for claim in claims[:_SHOWN_CLAIMS]
    )
    if len(claims) > _SHOWN_CLAIMS:
        why += f"\n- and {len(claims) - _SHOWN_CLAIMS} more"
    return [row.get("id"), f"{entry.get('score'):g}", why]
