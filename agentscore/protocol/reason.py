"""The overall reason of a claim-verdict score, written from the verdicts in code."""

from __future__ import annotations

from collections.abc import Sequence

from agentscore.protocol.protocol import ClaimMode, Verdict, VerdictItem

__all__ = ["compose_reason", "quote"]

# Enough to be read alone: a claim is a sentence, and a reason names the evidence it rests
# on (a field and its value, or a sentence of up to 160 characters) after saying why.
_CLAIM_CHARS = 200
_REASON_CHARS = 320
_QUOTES_PER_GROUP = 3


def compose_reason(
    mode: ClaimMode,
    score: float,
    verdicts: Sequence[VerdictItem],
    *,
    unsure_counts_as_supported: bool = False,
) -> str:
    """The overall reason, written from the verdicts without another judge call; it counts
    claims the way the score did."""
    total = len(verdicts)
    if total == 0:
        return "Not scored: the output makes no claims to check."
    contradicted = [item for item in verdicts if item.verdict is Verdict.NO]
    unverifiable = [item for item in verdicts if item.verdict is Verdict.UNSURE]
    supported = total - len(contradicted) - len(unverifiable)
    if unsure_counts_as_supported:
        supported += len(unverifiable)
    lenient_note = (
        f" ({len(unverifiable)} unverifiable, counted as supported)"
        if unsure_counts_as_supported and unverifiable
        else ""
    )
    counted = supported if mode == "faithfulness" else total - supported
    verb = "is" if counted == 1 else "are"
    if supported == total and not lenient_note:
        if total == 1:
            tail = (
                "is supported by the context."
                if mode == "faithfulness"
                else "neither contradicts nor goes beyond the context."
            )
            return f"The score is {score:g} because the output's one claim {tail}"
        tail = (
            f"all {total} claims in the output are supported by the context."
            if mode == "faithfulness"
            else f"none of the {total} claims contradicts or goes beyond the context."
        )
        return f"The score is {score:g} because {tail}"
    quality = "supported" if mode == "faithfulness" else "hallucinated"
    head = (
        f"The score is {score:g} because {counted} of {total} claims {verb} {quality}"
        f"{lenient_note}."
    )
    parts = [head]
    if contradicted:
        parts.append("Contradicted by the context: " + quote(_pairs(contradicted)) + ".")
    if unverifiable:
        label = "Unverifiable" if unsure_counts_as_supported else "Not supported by the context"
        parts.append(f"{label}: " + quote(_pairs(unverifiable)) + ".")
    return " ".join(parts)


def quote(items: Sequence[tuple[str, str]]) -> str:
    """A few (text, reason) pairs quoted for a reason a person reads, the rest counted."""
    quoted = [_quote_one(text, reason) for text, reason in items[:_QUOTES_PER_GROUP]]
    if len(items) > _QUOTES_PER_GROUP:
        quoted.append(f"and {len(items) - _QUOTES_PER_GROUP} more")
    return "; ".join(quoted)


def _quote_one(text: str, reason: str) -> str:
    text = _clip(text.strip(), _CLAIM_CHARS)
    # Its own full stop would stand before the group's: `(... UPS").).`
    reason = _clip(reason.strip().removesuffix("."), _REASON_CHARS)
    return f'"{text}" ({reason})' if reason else f'"{text}"'


def _clip(text: str, limit: int) -> str:
    """`text` cut at the last word boundary within `limit`, never inside a word."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    return cut.rstrip(" ,;:") + "…"


def _pairs(items: Sequence[VerdictItem]) -> list[tuple[str, str]]:
    return [(item.claim, item.reason) for item in items]
