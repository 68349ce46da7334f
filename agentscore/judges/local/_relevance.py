"""The local judge's lexical approximation of relevance: shared content words.

A statement (or a context item) that shares a content word with the question is judged
relevant ("yes"). One that shares none is "unsure", not "no": an on-topic answer often uses
other words ("Where is my parcel?" / "It left the depot on Monday"), and words alone cannot
tell it from an off-topic one. See docs/concepts.md for what this catches and misses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentscore.judges.local._parse import parse

__all__ = ["item_verdicts", "statement_verdicts"]

_SHOWN = 3


def statement_verdicts(texts: Sequence[str], question: str) -> list[dict[str, Any]]:
    """One verdict per statement of the answer, in order."""
    asked = parse(question).terms
    return [{"statement": text, **_verdict(text, asked)} for text in texts]


def item_verdicts(context: Sequence[str], question: str) -> list[dict[str, Any]]:
    """One verdict per context item, in order."""
    asked = parse(question).terms
    return [_verdict(text, asked) for text in context]


def _verdict(text: str, asked: frozenset[str]) -> dict[str, Any]:
    if not asked:
        return {"verdict": "unsure", "reason": "the question has no content words to compare"}
    shared = sorted(parse(text).terms & asked)
    if shared:
        words = ", ".join(repr(word) for word in shared[:_SHOWN])
        return {"verdict": "yes", "reason": f"shares {words} with the question"}
    return {
        "verdict": "unsure",
        "reason": "shares no content word with the question (lexical check: may still be on topic)",
    }
