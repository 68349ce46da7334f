"""The demo's reasons view: each claim of each answer with its verdict and the judge's reason,
wrapped at word boundaries so nothing is cut."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from agentscore.result import ScoreResult
from agentscore.telemetry.evaluations import claims_for

__all__ = ["render_reasons"]

_VERDICTS = {"yes": "supported", "no": "contradicted", "unsure": "unverifiable"}
_LABEL_WIDTH = max(len(name) for name in _VERDICTS.values()) + 2


def render_reasons(
    answers: Sequence[tuple[str, str]],
    scores: Sequence[ScoreResult],
    *,
    scorer_ids: Sequence[str],
    width: int = 100,
) -> str:
    """`answers` are (run_id, question) pairs, in the order asked."""
    by_run = {(s.run_id, s.scorer_id): s for s in scores}
    indent = " " * (4 + _LABEL_WIDTH)
    lines: list[str] = []
    for run_id, question in answers:
        lines.append(f"Q: {question}")
        for scorer_id in scorer_ids:
            result = by_run.get((run_id, scorer_id))
            if result is None:
                lines.append(f"  {scorer_id}: missing")
                continue
            lines.append(f"  {scorer_id} {_summary(result)}")
            for claim in claims_for(result):
                label = _VERDICTS.get(claim["verdict"], claim["verdict"]).ljust(_LABEL_WIDTH)
                lines += _wrap(claim["claim"], f"    {label}", indent, width)
                if claim["reason"]:
                    lines += _wrap(f"why: {claim['reason']}", indent, indent, width)
        lines.append("")
    return "\n".join(lines).rstrip()


def _summary(result: ScoreResult) -> str:
    if result.failed:
        return f"failed: {result.error.type if result.error else 'unknown error'}"
    if result.status.value == "no_claims":
        return "not scored: no claims to check"
    if result.status.value == "no_context":
        return "not scored: no context to check against"
    if result.status.value == "undecided":
        return "not scored: the judge could not tell"
    return f"{result.score:.2f} {result.label or ''}".rstrip()


def _wrap(text: str, first: str, rest: str, width: int) -> list[str]:
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )
