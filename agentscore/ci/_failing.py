"""What a score came to and why it failed, in words: the reason and the claims that lowered it.

Shared by the reports of `agentscore eval` (results file, JUnit, markdown), `agentscore
compare` and the pytest helper, so an outcome is decided once and a failure reads the same
wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentscore.result import ScoreResult

__all__ = ["case_outcome", "describe_failure", "due", "failing_claims"]

# How a claim's verdict reads in a report; "yes" claims did not lower the score.
_VERDICT_WORDS = {"no": "contradicted", "unsure": "unverifiable"}


def failing_claims(result: ScoreResult) -> list[dict[str, str]]:
    """The claims judged contradicted or unverifiable, as {claim, verdict, reason}; empty for
    a scorer that does not judge claims."""
    analyzed = result.analyze_step_result
    verdicts = analyzed.get("verdicts") if isinstance(analyzed, Mapping) else None
    if not isinstance(verdicts, list):
        return []
    return [
        {
            "claim": str(item.get("claim", "")),
            "verdict": _VERDICT_WORDS[str(item.get("verdict"))],
            "reason": str(item.get("reason", "")),
        }
        for item in verdicts
        if isinstance(item, Mapping) and str(item.get("verdict")) in _VERDICT_WORDS
    ]


def describe_failure(
    scorer_id: str,
    score: float | None,
    reason: str | None,
    claims: Sequence[Mapping[str, Any]],
    error: Mapping[str, Any] | None = None,
) -> str:
    """A failure as lines of text: the scorer and score, the reason (or the error), then one
    line per failing claim."""
    if error:
        head = f"{scorer_id} failed: {error.get('type')}: {error.get('message')}"
    else:
        shown = "-" if score is None else f"{score:g}"
        head = f"{scorer_id} {shown}: {reason or 'no reason given'}"
    lines = [head]
    for claim in claims:
        lines.append(f"  - {claim.get('verdict')}: {claim.get('claim')!r}")
        if claim.get("reason"):
            lines.append(f"    why: {claim.get('reason')}")
    return "\n".join(lines)


def due(row: Mapping[str, Any], scorer_id: str, level: str) -> bool:
    """Whether `scorer_id`, of `level`, judges the target of a results row: the row holds its
    score, or its target is of that level (a line written when the scorer was not chosen, or
    a target that failed before scoring). A row written before targets had levels is a
    generation's."""
    return scorer_id in (row.get("scores") or {}) or row.get("level", "generation") == level


def case_outcome(row: Mapping[str, Any], scorer_id: str) -> str:
    """'passed', 'failure', 'error' or 'skipped' for one record and scorer."""
    if row.get("error"):
        return "error"
    entry = row.get("scores", {}).get(scorer_id)
    if entry is None:
        return "skipped"  # a line of a resumed file written when this scorer was not chosen
    status = entry.get("status")
    if status == "failed":
        return "error"
    # Any status other than scored/failed (no_claims, no_context, ...) had nothing to judge.
    if status != "scored":
        return "skipped"
    return "failure" if entry.get("passed") is False else "passed"
