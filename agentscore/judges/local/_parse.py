"""One claim or context sentence, parsed once into what the grounding checks compare."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from agentscore.judges.local._bounds import NEGATION_SCOPE
from agentscore.judges.local._lexicon import (
    CALENDAR,
    FRAMING,
    HEDGES,
    NEGATIONS,
    STOPWORDS,
)
from agentscore.judges.local._numbers import Number, extract_numbers
from agentscore.judges.local._text import canon, word_spans, words

__all__ = [
    "CALENDAR_TERMS",
    "NEGATION_SCOPE",
    "Parsed",
    "is_question",
    "parse",
    "scan",
    "word_pairs",
]

_NOT_NAMES = STOPWORDS | NEGATIONS | CALENDAR
_FRAMING = frozenset(canon(w) for w in FRAMING)
# Hedges and scale words belong to the number they qualify and are compared with it.
_NOT_TERMS = STOPWORDS | NEGATIONS | HEDGES | {"thousand", "million", "billion", "trillion"}
CALENDAR_TERMS = frozenset(canon(w) for w in CALENDAR)
# "no-fee", "not-for-profit", "non-stop" name a kind of thing, and "not only X but also Y"
# asserts X: neither negates a statement.
_COMPOUND_NEGATION = re.compile(r"\b(?:no|not|non)-|\bnot only\b", re.IGNORECASE)
_PUNCTUATION = re.compile(r"[,.;:()\[\]!?\"“”]")


@dataclass(frozen=True, slots=True)
class Parsed:
    text: str
    terms: frozenset[str]  # canonical stems of content words
    seq: tuple[str, ...]  # the same stems in text order, for neighbour checks
    names: frozenset[str]  # stems of capitalised words (proper-noun candidates)
    name_pairs: frozenset[tuple[str, str]]  # adjacent words inside multi-word names
    pairs: frozenset[tuple[str, str]]  # all adjacent word pairs
    numbers: tuple[Number, ...]
    negated: frozenset[str]  # content stems inside the scope of a negation
    question: bool


# Country abbreviations and their names must match as the same words ("U.S." / "United States").
_ABBREVIATIONS = (
    (re.compile(r"\bU\.S\.(?:A\.)?|\bUSA?\b"), "United States"),
    (re.compile(r"\bU\.K\.|\bUK\b"), "United Kingdom"),
    (re.compile(r"\bU\.N\.|\bUN\b"), "United Nations"),
    (re.compile(r"\bE\.U\.|\bEU\b"), "European Union"),
)


def _expand_abbreviations(text: str) -> str:
    if "U" not in text and "E" not in text:
        return text
    for pattern, name in _ABBREVIATIONS:
        text = pattern.sub(name, text)
    return text


def parse(text: str, numbers: Sequence[Number] | None = None) -> Parsed:
    """`numbers`: `extract_numbers(text)` when the caller has them already (a context's
    cheap pass does, and a tool result of one long line would pay for them twice)."""
    spans = word_spans(_expand_abbreviations(text))
    tokens = [token for token, _ in spans]
    lowered = [t.lower() for t in tokens]
    stems = [canon(t) for t in tokens]
    seq = _terms(stems, lowered)
    names, name_pairs = _names(spans, lowered, stems)
    return Parsed(
        text=text,
        terms=frozenset(seq),
        seq=seq,
        names=names,
        name_pairs=name_pairs,
        pairs=frozenset(pairwise(stems)),
        numbers=tuple(extract_numbers(text) if numbers is None else numbers),
        negated=_negated(text),
        question=is_question(text),
    )


def scan(text: str) -> tuple[list[str], frozenset[str]]:
    """The terms (in text order) and names `parse` finds in `text`, at a fraction of its
    cost: what every line of a context contributes to the set-wide facts."""
    expanded = _expand_abbreviations(text)
    if expanded.islower():  # no capital, so no name, and the tokens need no spans
        return [term for token in words(expanded) if (term := _term(token))], frozenset()
    spans = word_spans(expanded)
    lowered = [token.lower() for token, _ in spans]
    stems = [canon(token) for token, _ in spans]
    return list(_terms(stems, lowered)), _names(spans, lowered, stems)[0]


@lru_cache(maxsize=65536)  # the words of a tool result repeat
def _term(token: str) -> str | None:
    stem = canon(token)
    return stem if token.lower() not in _NOT_TERMS and stem not in _FRAMING else None


def word_pairs(text: str) -> Iterator[tuple[str, str]]:
    """The adjacent word pairs `parse` finds in `text` (its `pairs`)."""
    return pairwise([canon(token) for token in words(_expand_abbreviations(text))])


def is_question(text: str) -> bool:
    # A question asserts nothing, so it cannot support or contradict a claim.
    return text.rstrip().endswith(("?", "？"))


def _terms(stems: list[str], lowered: list[str]) -> tuple[str, ...]:
    return tuple(
        stem
        for stem, low in zip(stems, lowered, strict=True)
        if low not in _NOT_TERMS and stem not in _FRAMING
    )


def _capitalised(token: str, low: str) -> bool:
    return token[:1].isupper() and len(token) > 1 and low not in _NOT_NAMES


def _names(
    spans: list[tuple[str, bool]], lowered: list[str], stems: list[str]
) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
    # The first word is capitalised anyway; it only counts when a name continues after it.
    caps = [_capitalised(t, low) for (t, _), low in zip(spans, lowered, strict=True)]
    # A name runs on only across a plain space: "Forum's ASEAN", "Celebration, Dave" are two.
    linked = [
        i > 0 and caps[i] and caps[i - 1] and glued and not lowered[i - 1].endswith("'s")
        for i, (_, glued) in enumerate(spans)
    ]
    names: set[str] = set()
    pairs: set[tuple[str, str]] = set()
    for i, cap in enumerate(caps):
        if cap and (i > 0 or (len(caps) > 1 and linked[1])):
            names.add(stems[i])
        if linked[i]:
            pairs.add((stems[i - 1], stems[i]))
    return frozenset(names), frozenset(pairs)


def _negated(text: str) -> frozenset[str]:
    scoped: set[str] = set()
    for chunk in _PUNCTUATION.split(_COMPOUND_NEGATION.sub(" ", text)):
        remaining = 0
        for token in words(chunk):
            low = token.lower()
            if low in NEGATIONS or low.endswith("n't"):
                remaining = NEGATION_SCOPE
            elif remaining and low not in STOPWORDS and (stem := canon(token)) not in _FRAMING:
                scoped.add(stem)
                remaining -= 1
    return frozenset(scoped)
