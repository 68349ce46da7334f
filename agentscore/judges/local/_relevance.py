"""The local judge's relevance checks: what words can decide, and what they cannot.

Answer relevancy. A statement that shares a number, or two content words (the question's
only one, when it has one), with the question addresses it ("yes", decided); so does one
that continues such a statement: it opens with a pronoun right after it ("It arrives on
Monday") or shares a content word with it. A
statement about another thing of the same kind ("order 2001" when the question asks about
"order 1042") is off-topic ("no", decided). So is every statement of an answer about
something else entirely: a sentence or more in which no statement shares a word, number or
code with the question, which does not open by pointing back at it ("It left the depot on
Monday", "Yes, ...") and does not give the kind of thing the question asks for (a time for
"when", a name for "who", ...). "Yes" or "No" to a yes/no question, then a word of it,
answers it. Any other statement is "unsure" and undecided: words alone cannot
tell an on-topic paraphrase ("Where is my parcel?" / "The package left the depot") from a
needed detail or a digression, so the scorer leaves a run unscored when such statements
could change its verdict (see docs/local-judge.md).

Context relevance: an item that shares a content word with the question is "yes"; any other
is "unsure", never "no".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentscore.judges.local._lexicon import (
    CURRENCY_WORDS,
    INSTRUCTION_VERBS,
    STOPWORDS,
    TIME_WORDS,
)
from agentscore.judges.local._numbers import NUMBER_WORDS
from agentscore.judges.local._parse import parse
from agentscore.judges.local._text import canon

__all__ = ["APART", "DECIDED", "UNDECIDED", "item_verdicts", "statement_verdicts"]

DECIDED = 0.95
# Decided, but the weakest decided evidence: a whole answer that shares nothing with the
# question is off-topic unless it is a paraphrase in other words (docs/local-judge.md
# measures how often that is so).
APART = 0.9
UNDECIDED = 0.5
# An answer this short may be the answer itself in a phrase ("Canberra.", "Two moons.").
_PHRASE_TERMS = 3
_SHOWN = 3
_QUOTE = 60
# Words that point back at what the previous statement is about.
_ANAPHORS = frozenset(
    [
        "it",
        "its",
        "it's",
        "they",
        "them",
        "their",
        "they're",
        "this",
        "that",
        "these",
        "those",
        "he",
        "she",
        "his",
        "her",
        "there",
        "which",
        "both",
    ]
)
_YES_NO = frozenset(["yes", "no", "yeah", "nope"])
_YES_NO_QUESTION = re.compile(
    r"\W*(?:is|are|was|were|can|could|do|does|did|will|would|should|shall|has|have|had|may|"
    r"must)\b",
    re.IGNORECASE,
)
# Openers that answer the question asked whatever follows: "Yes, ...", "I checked: ...".
_REPLIES = frozenset(["yes", "no", "yeah", "nope", "sure", "i", "i'm", "i've", "i'll"])
# Two capitalised words in a row, the first not a function word: "Jane Austen".
_NAME = re.compile(
    r"\b(?!(?:The|A|An|Our|Your|This|That|It|In|On|At)\b)[A-Z][\w'-]+"
    r"(?: (?:da|de|di|van|von|[A-Z][\w'-]+))+"
)
_PLACE = re.compile(r"\b(?:in|at|on|near|from|to) (?:the )?[A-Z]")
_CAUSE = re.compile(r"\b(?:because|since|due to|caused|causes|cause|as a result|so that)\b", re.I)
# What a question asks for, and whether an answer gives that kind of thing: an answer in
# other words is still on topic when it does ("How much is the plan?" / "Twelve dollars a
# month"), so it is left undecided rather than failed.
_ASKS_FOR: tuple[tuple[re.Pattern[str], Callable[[str], bool]], ...] = (
    (
        re.compile(r"\bhow (?:much|many)\b|\b(?:cost|price|fee|charge)s?\b"),
        lambda answer: _has_number(answer) or _has_word(answer, CURRENCY_WORDS),
    ),
    (
        re.compile(r"^\W*when\b|\bwhat (?:time|year|day|date|month)\b|\bhow (?:long|soon|often)\b"),
        lambda answer: _has_number(answer) or _has_word(answer, TIME_WORDS),
    ),
    (re.compile(r"^\W*(?:who|whom)\b|\bwhose\b"), lambda answer: bool(_NAME.search(answer))),
    (re.compile(r"^\W*where\b"), lambda answer: bool(_PLACE.search(answer))),
    (re.compile(r"^\W*why\b"), lambda answer: bool(_CAUSE.search(answer))),
    (
        re.compile(r"\bhow (?:do|can|should|could) (?:i|we|you)\b|\bhow to\b|\bwhat should i do\b"),
        lambda answer: _Words.of(answer).opener in INSTRUCTION_VERBS,
    ),
)
# A number that names a thing: "order 1042", "ticket #88", "room no. 12".
_IDENTIFIED = re.compile(r"\b([^\W\d_]{2,})\s*(?:#|no\.\s*|number\s+)?(\d[\d-]*)\b")
# A code that names a thing alone: "X200", "BA117".
_CODE = re.compile(r"\b[A-Z]{1,3}\d{2,}[A-Z]?\b")
_DIGITS = re.compile(r"\d[\d-]*\d|\d")


@dataclass(frozen=True, slots=True)
class _Words:
    """What a question or a statement is about, as the checks compare it."""

    terms: frozenset[str]
    numbers: frozenset[str]
    ids: frozenset[tuple[str, str]]  # (the noun's stem, "noun number" as written)
    codes: frozenset[str]
    opener: str

    @classmethod
    def of(cls, text: str) -> _Words:
        first = re.match(r"\W*([^\W\d_]+(?:['’][^\W\d_]+)?)", text)
        return cls(
            terms=parse(text).terms,
            numbers=frozenset(_DIGITS.findall(text)),
            ids=frozenset(
                (canon(noun), f"{noun} {number}")
                for noun, number in _IDENTIFIED.findall(text)
                if noun.lower() not in STOPWORDS
            ),
            codes=frozenset(_CODE.findall(text)),
            opener=first.group(1).lower().replace("’", "'") if first else "",
        )


def statement_verdicts(texts: Sequence[str], question: str, answer: str) -> list[dict[str, Any]]:
    """One verdict per statement (`texts`, split from `answer`), in order, each with its
    `confidence`."""
    asked = _Words.of(question)
    said = [_Words.of(text) for text in texts]
    if not asked.terms and not asked.numbers:
        why = "the question has no content word to compare (lexical check: cannot tell)"
        return [_statement(text, "unsure", why, UNDECIDED) for text in texts]
    if _about_something_else(said, asked, question, answer):
        why = "the answer shares no word, number or code with the question, nor points back at it"
        return [_statement(text, "no", why, APART) for text in texts]
    verdicts: list[tuple[str, str] | None] = [_direct(words, asked) for words in said]
    if said and verdicts[0] is None:
        verdicts[0] = _yes_or_no(said[0], asked, question, answer)
    _chain(texts, said, verdicts)
    return [
        _statement(text, *verdict, DECIDED)
        if verdict is not None
        else _statement(
            text,
            "unsure",
            "shares too little with the question, and nothing with the statements that "
            "address it (lexical check: cannot tell a paraphrase or a detail from a "
            "digression)",
            UNDECIDED,
        )
        for text, verdict in zip(texts, verdicts, strict=True)
    ]


def item_verdicts(context: Sequence[str], question: str) -> list[dict[str, Any]]:
    """One verdict per context item, in order."""
    asked = parse(question).terms
    return [_item_verdict(text, asked) for text in context]


def _direct(said: _Words, asked: _Words) -> tuple[str, str] | None:
    """The verdict a statement earns on its own, or None."""
    other = _other_thing(said, asked)
    if other:
        return "no", f"is about {other}, not the thing the question asks about"
    terms = sorted(said.terms & asked.terms)
    numbers = sorted(said.numbers & asked.numbers)
    # One word of several is weak evidence: "Is the hotel pet-friendly?" / "The hotel pool
    # is heated" share "hotel" and answer different questions.
    if numbers or len(terms) >= min(2, len(asked.terms)):
        words = ", ".join(repr(word) for word in (terms + numbers)[:_SHOWN])
        return "yes", f"shares {words} with the question"
    return None


def _about_something_else(
    said: Sequence[_Words], asked: _Words, question: str, answer: str
) -> bool:
    """No statement touches the question, the answer does not open by pointing back at it
    (the statements are split from it without a leading "Yes,"), it is more than a phrase,
    and it does not give the kind of thing the question asks for."""
    openers = {_Words.of(answer).opener, said[0].opener} if said else set()
    if not said or openers & (_ANAPHORS | _REPLIES):
        return False
    if sum(len(words.terms) for words in said) < _PHRASE_TERMS:
        return False
    asked_for = question.lower()
    if any(kind.search(asked_for) and gives(answer) for kind, gives in _ASKS_FOR):
        return False
    return not any(
        words.terms & asked.terms
        or words.numbers & asked.numbers
        or words.codes & asked.codes
        or {noun for noun, _ in words.ids} & {noun for noun, _ in asked.ids}
        for words in said
    )


def _has_word(text: str, words: frozenset[str]) -> bool:
    return any(word in words for word in re.findall(r"[a-z]+", text.lower()))


def _has_number(text: str) -> bool:
    return bool(_DIGITS.search(text)) or _has_word(text, NUMBER_WORDS)


def _yes_or_no(said: _Words, asked: _Words, question: str, answer: str) -> tuple[str, str] | None:
    """'Yes, ...' or 'No, ...' to a yes/no question, then a word of the question: the
    answer's first statement answers it ("Does the hotel have parking?" / "Yes, there is a
    garage under the hotel")."""
    reply = _Words.of(answer).opener
    shared = sorted(said.terms & asked.terms)
    if reply not in _YES_NO or not shared or not _YES_NO_QUESTION.match(question):
        return None
    return "yes", f"answers the yes/no question ({reply!r}) and shares {shared[0]!r} with it"


def _other_thing(said: _Words, asked: _Words) -> str:
    """'order 2001' when the question names order 1042 and the statement does not; 'X300'
    when it names the X200."""
    if said.numbers & asked.numbers:
        return ""
    named = {noun for noun, _ in asked.ids}
    others = sorted(shown for noun, shown in said.ids if noun in named)
    if not others and asked.codes:
        others = sorted(said.codes)
    return others[0] if others else ""


def _chain(
    texts: Sequence[str], said: Sequence[_Words], verdicts: list[tuple[str, str] | None]
) -> None:
    """Give the undecided statements that continue a decided one its verdict, in place."""
    changed = True
    while changed:
        changed = False
        for i, verdict in enumerate(verdicts):
            if verdict is not None:
                continue
            follows = verdicts[i - 1] if i else None
            if follows is not None and said[i].opener in _ANAPHORS:
                cue = f"{texts[i - 1][:_QUOTE]!r}"
                verdicts[i] = (follows[0], f"continues the statement {cue} ({said[i].opener!r})")
                changed = True
                continue
            for j, other in enumerate(verdicts):
                shared = sorted(said[i].terms & said[j].terms)
                if other is not None and other[0] == "yes" and shared:
                    words = ", ".join(repr(word) for word in shared[:_SHOWN])
                    reason = f"shares {words} with the statement {texts[j][:_QUOTE]!r}"
                    verdicts[i] = ("yes", f"{reason}, which addresses the question")
                    changed = True
                    break


def _statement(text: str, verdict: str, reason: str, confidence: float) -> dict[str, Any]:
    return {"statement": text, "verdict": verdict, "reason": reason, "confidence": confidence}


def _item_verdict(text: str, asked: frozenset[str]) -> dict[str, Any]:
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
