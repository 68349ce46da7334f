"""Whether a figure is given as a value, or only as a limit or an exclusion.

"never 20", "not 20", "no more than 20", "at most 20", "up to 20", "under 20", "20 or more",
"except 20", "instead of 20", "before 2020": the digits are there, the value is not. A claim
giving the figure as a value ("take 20 pills") repeats the digits of such a context, not what
it says, so the grounding checks match figures with confidence only where both sides qualify
them alike, and call a differing value a contradiction only where it breaks the other's bound.

A figure's `Bound` is "" (a plain value), "<", "<=", ">", ">=" (a limit) or
"!=" (negated or excluded). A negation within reach flips a limit ("must not exceed 20" is
"<= 20") and makes a plain value "!=".
"""

from __future__ import annotations

import functools
import re
from typing import Literal

from agentscore.judges.local._lexicon import NEGATIONS, STOPWORDS
from agentscore.judges.local._text import words

__all__ = ["NEGATION_SCOPE", "Bound", "bound_of", "path_bound", "violates"]

Bound = Literal["", "<", "<=", ">", ">=", "!="]

# How many content words after "not" / "never" the negation is taken to cover.
NEGATION_SCOPE = 3

_COMPARATIVES = (
    "more|greater|higher|larger|bigger|longer|later|older|heavier|faster|further|farther",
    "less|fewer|lower|smaller|shorter|earlier|younger|lighter|slower|cheaper",
)
# Phrases right before a figure (before its currency sign), each with the bound it sets. A
# negation is not one of them: it reaches a figure over a few words and flips what is there
# ("no more than 20", "not to exceed 20", "no later than 2020").
_BEFORE: tuple[tuple[str, Bound], ...] = (
    (
        rf"(?:(?:{_COMPARATIVES[0]})\s+than|over|above|beyond|in excess of|exceed(?:s|ed|ing)?"
        r"|after)",
        ">",
    ),
    (rf"(?:(?:{_COMPARATIVES[1]})\s+than|under|below|before|prior to|short of)", "<"),
    (
        r"(?:at (?:the )?(?:most|latest)|up to|upto|(?:a |the )?(?:maximum|max)(?: of)?|within"
        r"|as (?:many|much|long|high|late|far) as|until|till|limit(?:ed)? (?:of|to)|capped at)",
        "<=",
    ),
    (
        r"(?:at (?:the )?(?:least|earliest)|(?:a |the )?(?:minimum|min)(?: of)?|since"
        r"|as (?:few|little|early|short|low) as)",
        ">=",
    ),
    (
        r"(?:except(?: for)?|excluding|other than|besides|apart from|aside from|instead of"
        r"|rather than|but not|save for|not including)",
        "!=",
    ),
)
_BEFORE_PATTERN = re.compile(
    r"(?:\b(?:" + "|".join(f"(?P<b{n}>{phrase})" for n, (phrase, _) in enumerate(_BEFORE))
    + r")|(?P<sym><=|=<|≤|>=|=>|≥|!=|≠|<|>))\s*$",
    re.IGNORECASE,
)  # fmt: skip
# The words a phrase above can end with: most figures follow none, and skip the pattern.
_LAST_WORDS = frozenset((
    "than", "over", "above", "beyond", "of", "exceed", "exceeds", "exceeded", "exceeding",
    "after", "under", "below", "before", "to", "most", "latest", "least", "earliest", "upto",
    "max", "maximum", "min", "minimum", "within", "as", "until", "till", "at", "since",
    "except", "for", "excluding", "besides", "from", "not", "including",
))  # fmt: skip
_SYMBOLS: dict[str, Bound] = {
    "<=": "<=", "=<": "<=", "≤": "<=", ">=": ">=", "=>": ">=", "≥": ">=", "!=": "!=",
    "≠": "!=", "<": "<", ">": ">",
}  # fmt: skip
# Phrases after a figure, up to two words on ("18 or older", "20 people at most"), as
# written in lower case ("iPhone 15 Pro Max" is a name); and a "+" ("20+").
_AFTER: tuple[tuple[str, Bound], ...] = (
    (rf"(?:or|and) (?:{_COMPARATIVES[0]}|above|over|up|beyond|after)", ">="),
    (rf"(?:or|and) (?:{_COMPARATIVES[1]}|below|under|before)", "<="),
    (r"at (?:the )?most|max|maximum", "<="),
    (r"at (?:the )?least|minimum", ">="),
)
_AFTER_PATTERN = re.compile(
    r"(?P<plus>\+(?!\s*\d))|(?:\s+[A-Za-z]+){0,2}\s+(?:"
    + "|".join(f"(?P<a{n}>{phrase})" for n, (phrase, _) in enumerate(_AFTER))
    + r")\b"
)
_BEFORE_REACH = 40  # characters read before a figure for a phrase
_AFTER_REACH = 32
# Where a negation's reach ends: a clause or sentence mark (the same ones `_parse` splits on).
_CLAUSE_END = re.compile(r"[,.;:()\[\]!?\"“”]")
_NEGATION_WORD = re.compile(
    r"\b(?:" + "|".join(sorted(NEGATIONS - {"n't"}, key=len, reverse=True)) + r")\b|n't",
    re.IGNORECASE,
)
# "no-fee", "not-for-profit", "not only X but also Y": no statement is negated.
_COMPOUND_NEGATION = re.compile(r"\b(?:no|not|non)-|\bnot only\b", re.IGNORECASE)
_FLIPPED: dict[Bound, Bound] = {"": "!=", "<": ">=", "<=": ">", ">": "<=", ">=": "<", "!=": "!="}
# Field names that say a value is a limit ("max_guests": 4 is a limit, not a head count).
_PATH_WORDS: dict[str, Bound] = {
    "max": "<=", "maximum": "<=", "limit": "<=", "min": ">=", "minimum": ">=",
}  # fmt: skip


def bound_of(text: str, start: int, end: int) -> Bound:
    """The bound `text` puts on the figure at `text[start:end]`."""
    before = _phrase_before(text[max(0, start - _BEFORE_REACH) : start])
    bound = before or _phrase_after(text[end : end + _AFTER_REACH])
    # The last word before the figure is the phrase's own ("exceed" in "not exceed 20").
    if _negated(text, start, words_of_phrase=1 if before else 0):
        return _FLIPPED[bound]
    return bound


@functools.lru_cache(maxsize=4096)  # a tool result repeats a few paths
def path_bound(path: str) -> Bound:
    """The bound a JSON leaf's field name puts on its value ("max guests", "limit")."""
    for word in path.lower().split():
        found = _PATH_WORDS.get(word)
        if found:
            return found
    return ""


def violates(value: float, bound: Bound, limit: float) -> bool:
    """Whether a value is outside the bound `bound` `limit` sets: a certain contradiction."""
    if bound == "<":
        return value >= limit
    if bound == "<=":
        return value > limit
    if bound == ">":
        return value <= limit
    if bound == ">=":
        return value < limit
    return False  # a plain value is no limit; "not 20" holds of every other value


def _phrase_before(before: str) -> Bound:
    last = before.rstrip()
    if not last or (
        last[-1] not in "<>=≤≥≠" and last.rsplit(None, 1)[-1].lower() not in _LAST_WORDS
    ):
        return ""
    match = _BEFORE_PATTERN.search(before)
    if match is None:
        return ""
    symbol = match.group("sym")
    if symbol:
        return _SYMBOLS[symbol]
    return next(bound for n, (_, bound) in enumerate(_BEFORE) if match.group(f"b{n}"))


def _phrase_after(after: str) -> Bound:
    match = _AFTER_PATTERN.match(after)
    if match is None:
        return ""
    if match.group("plus"):
        return ">="
    return next(bound for n, (_, bound) in enumerate(_AFTER) if match.group(f"a{n}"))


def _negated(text: str, start: int, *, words_of_phrase: int) -> bool:
    """A negation before the figure, in its clause, with fewer than NEGATION_SCOPE content
    words between them ("must not exceed 20", "never 20", "do not take 20 pills")."""
    reach = text[max(0, start - 4 * _BEFORE_REACH) : start]
    if _NEGATION_WORD.search(reach) is None:
        return False  # most figures: one pass over the text before them
    clause = _CLAUSE_END.split(_COMPOUND_NEGATION.sub(" ", reach))[-1]
    negations = list(_NEGATION_WORD.finditer(clause))
    if not negations:
        return False
    between = words(clause[negations[-1].end() :])
    content = [w for w in between if w.lower() not in STOPWORDS]
    return len(content) - words_of_phrase < NEGATION_SCOPE
