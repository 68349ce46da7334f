"""`agentscore compare`: did a change make the scores worse, and on which records?

Two results files of `agentscore eval --out` are paired by record id. Per scorer: the pass
rate and mean of each run over the records both hold, their change, the records whose
verdict flipped (with both reasons), and how much the sample size lets the change say. The
reports list at most `SHOWN_FLIPS` flips of each kind per scorer and count the rest, so
thousands of flips still make a page a job summary can hold.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentscore.ci._failing import case_outcome
from agentscore.ci._markdown import Own, cell, publish, table
from agentscore.ci._one_line import one_line
from agentscore.ci._results_file import ResultsFileError, read_result_rows
from agentscore.ci._table import render_table

__all__ = [
    "SHOWN_FLIPS",
    "Flip",
    "ResultsFileError",
    "ScorerChange",
    "compare_results",
    "read_results",
    "run_compare",
]

SHOWN_FLIPS = 50  # per scorer and kind (pass -> fail, fail -> pass), in each report
_SHOWN_REASON = 500  # characters of each reason shown; the results files keep all of it


@dataclass(frozen=True, slots=True)
class Flip:
    """A record whose verdict changed; an error counts as a fail."""

    record_id: str
    base_score: float | None
    new_score: float | None
    base_reason: str
    new_reason: str


@dataclass(slots=True)
class ScorerChange:
    scorer_id: str
    paired: int  # records both runs judged (pass, fail or error), the pass rates' base
    base_pass_rate: float | None
    new_pass_rate: float | None
    base_mean: float | None
    new_mean: float | None
    to_fail: list[Flip] = field(default_factory=list)
    to_pass: list[Flip] = field(default_factory=list)

    @property
    def drop_points(self) -> float:
        """How far the pass rate fell, in percentage points (negative: it rose)."""
        if self.base_pass_rate is None or self.new_pass_rate is None:
            return 0.0
        return (self.base_pass_rate - self.new_pass_rate) * 100

    @property
    def p_value(self) -> float:
        """Exact McNemar test on the flips: the chance of flips at least this lopsided if
        the change made no difference (each flip as likely one way as the other)."""
        worse, better = len(self.to_fail), len(self.to_pass)
        flips = worse + better
        if not flips:
            return 1.0
        tail = sum(math.comb(flips, k) for k in range(min(worse, better) + 1)) / (1 << flips)
        return min(1.0, 2 * tail)

    def significance(self) -> str:
        if not self.paired:
            return "no record judged in both runs"
        step = 100 / self.paired
        head = f"{self.paired} paired records (one record moves the pass rate {step:.1f} points)"
        if not self.to_fail and not self.to_pass:
            return f"{head}; no verdict changed"
        p = self.p_value
        verdict = (
            "unlikely to be chance (p < 0.05)"
            if p < 0.05
            else "could be chance at this sample size; more records would tell"
        )
        return (
            f"{head}; {len(self.to_fail)} pass->fail, {len(self.to_pass)} fail->pass: "
            f"exact McNemar p = {p:.3g}, {verdict}"
        )


def read_results(path: str | Path) -> dict[str, dict[str, Any]]:
    """The rows of a results file by record id; a later line for an id wins (a resumed run
    appends), and a last line cut short is ignored. A line that is not what `agentscore eval
    --out` writes raises `ResultsFileError`, naming the file and line."""
    return {row["id"]: row for row in read_result_rows(Path(path))}


def compare_results(
    base: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]
) -> list[ScorerChange]:
    """One change per scorer found in either run, over the record ids both runs hold."""
    common = [record_id for record_id in base if record_id in new]
    scorer_ids = sorted(
        {scorer_id for rows in (base, new) for row in rows.values() for scorer_id in row["scores"]}
    )
    return [_change(scorer_id, common, base, new) for scorer_id in scorer_ids]


def _change(
    scorer_id: str,
    common: Sequence[str],
    base: Mapping[str, Mapping[str, Any]],
    new: Mapping[str, Mapping[str, Any]],
) -> ScorerChange:
    judged = ("passed", "failure", "error")
    paired = [
        record_id
        for record_id in common
        if case_outcome(base[record_id], scorer_id) in judged
        and case_outcome(new[record_id], scorer_id) in judged
    ]
    change = ScorerChange(
        scorer_id=scorer_id,
        paired=len(paired),
        base_pass_rate=_pass_rate([base[r] for r in paired], scorer_id),
        new_pass_rate=_pass_rate([new[r] for r in paired], scorer_id),
        base_mean=_mean([base[r] for r in common], scorer_id),
        new_mean=_mean([new[r] for r in common], scorer_id),
    )
    for record_id in paired:
        was = case_outcome(base[record_id], scorer_id) == "passed"
        now = case_outcome(new[record_id], scorer_id) == "passed"
        if was != now:
            flip = Flip(
                record_id=record_id,
                base_score=_score(base[record_id], scorer_id),
                new_score=_score(new[record_id], scorer_id),
                base_reason=_reason(base[record_id], scorer_id),
                new_reason=_reason(new[record_id], scorer_id),
            )
            (change.to_pass if now else change.to_fail).append(flip)
    return change


def _entry(row: Mapping[str, Any], scorer_id: str) -> Mapping[str, Any]:
    entry = row.get("scores", {}).get(scorer_id)
    return entry if isinstance(entry, Mapping) else {}


def _score(row: Mapping[str, Any], scorer_id: str) -> float | None:
    entry = _entry(row, scorer_id)
    return entry.get("score") if entry.get("status") == "scored" else None


def _reason(row: Mapping[str, Any], scorer_id: str) -> str:
    entry = _entry(row, scorer_id)
    error = entry.get("error")
    if row.get("error"):
        return f"error: {row['error']}"
    if error:
        return f"error: {error.get('type')}: {error.get('message')}"
    return str(entry.get("reason") or "")


def _pass_rate(rows: Sequence[Mapping[str, Any]], scorer_id: str) -> float | None:
    if not rows:
        return None
    return sum(case_outcome(row, scorer_id) == "passed" for row in rows) / len(rows)


def _mean(rows: Sequence[Mapping[str, Any]], scorer_id: str) -> float | None:
    scores = [s for s in (_score(row, scorer_id) for row in rows) if s is not None]
    return math.fsum(scores) / len(scores) if scores else None


def run_compare(
    base_path: str, new_path: str, *, max_drop: float | None = None, markdown: str | None = None
) -> int:
    """Exit status: 0, 1 when a pass rate fell by more than `max_drop` points, 2 when a file
    is missing, holds no results or a malformed line (never 1: only a real drop is 1)."""
    if max_drop is not None and max_drop < 0:
        print("agentscore compare: --max-drop must be 0 or more points", file=sys.stderr)
        return 2
    loaded = []
    for path in (base_path, new_path):
        if not Path(path).is_file():
            print(f"agentscore compare: cannot read {path!r}: no such file", file=sys.stderr)
            return 2
        try:
            rows = read_results(path)
        except ResultsFileError as exc:
            print(
                f"agentscore compare: {exc.path}:{exc.line}: {one_line(exc.problem)}; expected "
                "the JSONL that `agentscore eval --out` writes",
                file=sys.stderr,
            )
            return 2
        if not rows:
            print(
                f"agentscore compare: no results in {path!r}; expected the JSONL that "
                "`agentscore eval --out` writes",
                file=sys.stderr,
            )
            return 2
        loaded.append(rows)
    base, new = loaded
    changes = compare_results(base, new)
    unpaired = len(base.keys() ^ new.keys())
    print(render_text(changes, unpaired))
    if markdown or os.environ.get("GITHUB_STEP_SUMMARY"):
        publish(render_markdown(changes, unpaired, base_path, new_path), markdown)
    if max_drop is not None:
        worse = [c for c in changes if c.drop_points > max_drop]
        if worse:
            listed = ", ".join(
                f"{one_line(c.scorer_id)} -{c.drop_points:.1f} points" for c in worse
            )
            print(
                f"agentscore compare: pass rate fell beyond --max-drop {max_drop:g}: {listed}",
                file=sys.stderr,
            )
            return 1
    return 0


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _mean_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _delta(base: float | None, new: float | None, *, points: bool) -> str:
    if base is None or new is None:
        return "-"
    return f"{(new - base) * 100:+.1f} pts" if points else f"{new - base:+.3f}"


def _summary_rows(changes: Sequence[ScorerChange]) -> list[list[str]]:
    return [
        [
            one_line(c.scorer_id),
            _rate(c.base_pass_rate),
            _rate(c.new_pass_rate),
            _delta(c.base_pass_rate, c.new_pass_rate, points=True),
            _mean_text(c.base_mean),
            _mean_text(c.new_mean),
            _delta(c.base_mean, c.new_mean, points=False),
            str(len(c.to_fail)),
            str(len(c.to_pass)),
        ]
        for c in changes
    ]


_HEADERS = [
    "scorer",
    "base pass",
    "new pass",
    "change",
    "base mean",
    "new mean",
    "change",
    "pass->fail",
    "fail->pass",
]


def _score_text(score: float | None) -> str:
    return "error" if score is None else f"{score:g}"


def _reason_text(reason: str) -> str:
    if len(reason) <= _SHOWN_REASON:
        return reason
    return f"{reason[:_SHOWN_REASON]}... ({len(reason) - _SHOWN_REASON} more characters)"


def _left_out(count: int, title: str) -> str:
    return f"{count} more {title} records not shown (the results files hold every one)"


def _kinds(change: ScorerChange) -> tuple[tuple[str, list[Flip]], ...]:
    return (("pass -> fail", change.to_fail), ("fail -> pass", change.to_pass))


def render_text(changes: Sequence[ScorerChange], unpaired: int, shown: int = SHOWN_FLIPS) -> str:
    """The comparison for a terminal or CI log: record text is escaped onto its own lines,
    and at most `shown` flips of each kind are listed per scorer."""
    lines = [render_table(_HEADERS, _summary_rows(changes))]
    if unpaired:
        lines.append(f"{unpaired} records are in only one of the files and are not compared.")
    for change in changes:
        lines.append(f"\n{one_line(change.scorer_id)}: {change.significance()}")
        for title, flips in _kinds(change):
            for flip in flips[:shown]:
                lines.append(
                    f"  {title}  {one_line(flip.record_id)}: "
                    f"{_score_text(flip.base_score)} -> {_score_text(flip.new_score)}"
                )
                lines.append(f"    base: {one_line(_reason_text(flip.base_reason))}")
                lines.append(f"    new:  {one_line(_reason_text(flip.new_reason))}")
            if len(flips) > shown:
                lines.append(f"  and {_left_out(len(flips) - shown, title)}")
    return "\n".join(lines)


def render_markdown(
    changes: Sequence[ScorerChange],
    unpaired: int,
    base_path: str,
    new_path: str,
    shown: int = SHOWN_FLIPS,
) -> str:
    """The comparison as markdown: every text from a file or a record is escaped (see
    `cell`), and at most `shown` flips of each kind are listed per scorer."""
    parts = [f"## agentscore compare: {cell(base_path)} -> {cell(new_path)}", ""]
    parts += [table(_HEADERS, _summary_rows(changes)), ""]
    if unpaired:
        parts += [f"{unpaired} records are in only one of the files and are not compared.", ""]
    for change in changes:
        parts += [f"### {cell(change.scorer_id)}", "", change.significance(), ""]
        rows = [
            [
                flip.record_id,
                Own(title),
                Own(f"{_score_text(flip.base_score)} -> {_score_text(flip.new_score)}"),
                _reason_text(flip.base_reason),
                _reason_text(flip.new_reason),
            ]
            for title, flips in _kinds(change)
            for flip in flips[:shown]
        ]
        if rows:
            parts += [table(["record", "flip", "score", "base reason", "new reason"], rows), ""]
        parts += [
            f"{_left_out(len(flips) - shown, title)}.\n"
            for title, flips in _kinds(change)
            if len(flips) > shown
        ]
    return "\n".join(parts) + "\n"
