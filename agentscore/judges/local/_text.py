"""Text primitives for the local grounding judge: sentences, tokens, stems, synonyms.

Pure functions of their input so the engine can prepare a context once and reuse it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from agentscore.judges.local._lexicon import (
    ABBREVIATIONS,
    ANTONYM_PAIRS,
    IRREGULAR_FORMS,
    SYNONYM_GROUPS,
)

__all__ = [
    "ANTONYMS",
    "SENTENCE_ENDS",
    "canon",
    "split_sentences",
    "stem",
    "word_spans",
    "words",
]

_SENTENCE_END = re.compile(
    r"[.!?。！？]+[\"'”’)\]]*(?=\s|$|[A-Z\"“])|[。！？]+|\n\s*\n|\n(?=\s*[-*•#\d])"
)
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
# Every sentence end above needs one of these: text without them is one sentence (most JSON
# leaves), found without running the pattern.
SENTENCE_ENDS = frozenset(".!?。！？\n")

_KEEP_DOUBLE = frozenset("aeioulsz")  # "fill", "pass", "buzz", "agree" double by nature
_INFLECTIONS = ("ies", "ied", "ing", "es", "ed", "s", "ly")
_DERIVATIONS = ("ational", "ation", "ition", "ments", "ment", "ness", "ions", "ion", "ee", "er")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Crude suffix stripping plus a 7-character cut: cheap, stable, merges most inflections."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) <= 3 or not w.isascii():
        return w
    for suffix in _INFLECTIONS:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
            # "submitting" / "planned" double the last consonant: undo it to meet "submit".
            if suffix in ("ing", "ed") and w[-1] == w[-2] and w[-1] not in _KEEP_DOUBLE:
                w = w[:-1]
            break
    for suffix in _DERIVATIONS:
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            w = w[: -len(suffix)]
            break
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w[:7]


def _build_folds() -> dict[str, str]:
    # Irregular forms first, then synonyms, so "grew" reaches the "increase" group via "grow".
    base = {stem(form): stem(forms[0]) for forms in IRREGULAR_FORMS for form in forms[1:]}
    table: dict[str, str] = {}
    for members in SYNONYM_GROUPS:
        for member in members:
            table.setdefault(stem(member), stem(members[0]))
    for form, root in base.items():
        table.setdefault(form, table.get(root, root))
    return table


_FOLDS = _build_folds()


def canon(word: str) -> str:
    """Stem, then fold irregular forms and synonyms onto one representative."""
    s = stem(word)
    return _FOLDS.get(s, s)


def _build_antonyms() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for pair in ANTONYM_PAIRS:
        a, b = (canon(w) for w in pair)
        if a != b:
            table.setdefault(a, set()).add(b)
            table.setdefault(b, set()).add(a)
    return {k: frozenset(v) for k, v in table.items()}


ANTONYMS = _build_antonyms()


def words(text: str) -> list[str]:
    """Word tokens (letters only; digits are numbers and handled by `extract_numbers`)."""
    return _WORD.findall(text)


def word_spans(text: str) -> list[tuple[str, bool]]:
    """Word tokens, each flagged True when only a single space separates it from the last."""
    out: list[tuple[str, bool]] = []
    end = -1
    for match in _WORD.finditer(text):
        out.append((match.group(), text[end : match.start()] == " "))
        end = match.end()
    return out


def split_sentences(text: str) -> list[str]:
    """Split on sentence punctuation (Latin and CJK) and blank lines; keep abbreviations whole."""
    if SENTENCE_ENDS.isdisjoint(text):
        stripped = text.strip()
        return [stripped] if stripped else []
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
        if match.group().startswith(".") and _is_abbreviation(text, match.start()):
            continue
        pieces.append(text[start:end])
        start = end
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]


def _is_abbreviation(text: str, dot: int) -> bool:
    before = text[max(0, dot - 6) : dot]
    token = re.split(r"[\s(\"'.]", before)[-1].lower()
    # A single capital letter is an initial ("Thomas K. Arnold"), not a sentence end.
    return token in ABBREVIATIONS or (len(token) == 1 and token.isalpha())
