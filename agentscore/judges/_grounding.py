"""Offline grounding engine: decides whether each claim is supported by, contradicts, or is
absent from a context, with lexical alignment plus number, entity, negation and antonym checks.

Deterministic, stdlib only. The context is prepared once per call (sentences, stems, numbers,
an inverted index with IDF weights) and every claim is scored against that. See
docs/local-judge.md for what this catches and what it misses compared with an LLM judge.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentscore.judges._grounding_json import Record, context_sentences, json_fields, related
from agentscore.judges._grounding_lexicon import (
    DETERMINERS,
    SPECULATIVE,
    SPECULATIVE_PHRASES,
    SUBJECTIVE,
)
from agentscore.judges._grounding_numbers import Number
from agentscore.judges._grounding_numindex import NumberIndex
from agentscore.judges._grounding_parse import CALENDAR_TERMS, Parsed, parse
from agentscore.judges._grounding_split import MAX_CLAIMS, split_claims
from agentscore.judges._grounding_states import missing_record, state_conflict, states
from agentscore.judges._grounding_text import ANTONYMS, canon, words

__all__ = [
    "DECIDED",
    "MAX_CLAIMS",
    "SUPPORT_THRESHOLD",
    "UNDECIDED",
    "ClaimCheck",
    "Mode",
    "Verdict",
    "check_claims",
    "split_claims",
]

Verdict = Literal["yes", "no", "unsure"]
Mode = Literal["faithfulness", "hallucination"]
# Where a context sentence comes from: its context item, and its JSON record (None in prose).
Place = tuple[int, Record | None]

# "yes" needs this share of a claim's content words beyond its first STRICT_WORDS (numbers
# weigh NUMBER_WEIGHT words) to occur in the context: a claim may leave at most
# (1 - SUPPORT_THRESHOLD) * (total - STRICT_WORDS) unmatched. Paraphrase leaves words unmatched
# in long claims, while in a short claim every word is the fact ("an art rock band"), so
# the slack grows with length. Both chosen on the even-indexed half of the benchmark data
# (benchmarks/accuracy.py sweep), reported on the odd half and on all.
SUPPORT_THRESHOLD = 0.4
STRICT_WORDS = 2.0
# A claim this short whose first content word (usually its subject) is absent from the
# context is about something the context does not mention ("Members get free shipping").
SHORT_CLAIM = 8
# A number is the most specific thing a claim says; matching one counts like two words.
NUMBER_WEIGHT = 2.0
# Names sharing their first letters are the same name ("Libya" / "Libyan").
NAME_PREFIX = 5
# Share of claim words the best-aligned sentence must share before a differing value there
# counts as a contradiction rather than as a sentence about something else.
ALIGN_FOR_CONFLICT = 0.5
ALIGN_FOR_NEGATION = 0.5
# A fact's sentence, or the sentences just before it (where "It" / "He" is introduced), must
# mention one of the claim's names for the fact to be about them.
NAME_WINDOW = 1
# A name swap needs the rest of the claim to restate the sentence almost entirely.
NAME_SWAP_OVERLAP = 0.75
# A restatement's words lie in order within a stretch of the evidence at most this many
# times the claim's length (room for the modifiers a restatement drops, not for a clause).
# Shared words under a negation needed for a flip (2 would spare "not for elderly users"
# vs "users", but also "never approved by the FDA"; measured, 1 is no worse).
NEGATION_MIN_WORDS = 1
# How sure a verdict is. Only the cases listed in docs/local-judge.md ("What it decides
# alone") get DECIDED; every other verdict is a guess a cascade hands to an LLM judge.
DECIDED = 0.95
UNDECIDED = 0.5
_QUOTE = 160
_APPROX = 0.1  # relative tolerance when either side hedges ("about 500", "approximately 480")


@dataclass(frozen=True, slots=True)
class ClaimCheck:
    """The verdict on one claim, with the context sentence it was judged against."""

    claim: str
    verdict: Verdict
    reason: str
    evidence: str | None
    confidence: float = UNDECIDED


@dataclass(frozen=True, slots=True)
class _Context:
    sentences: tuple[Parsed, ...]
    before: tuple[tuple[int, ...], ...]  # per sentence: the NAME_WINDOW sentences before it
    places: tuple[Place, ...]
    records: tuple[tuple[int, ...], ...]  # per sentence: the sentences of its JSON record
    record_terms: tuple[frozenset[str], ...]  # per sentence: the terms of its JSON record
    index: dict[str, tuple[int, ...]]
    idf: dict[str, float]
    vocabulary: frozenset[str]
    pairs: frozenset[tuple[str, str]]  # adjacent word pairs anywhere in the context
    number_index: NumberIndex  # every number in the context, by value, with its sentence
    numbers: tuple[Number, ...]  # every number in the context
    prefixes: frozenset[str]  # NAME_PREFIX-letter starts of context words
    number_weight: float  # alignment weight of a matched number: as rare as the rarest word
    universals: frozenset[str]  # "every", "always", ... as written anywhere in the context


def check_claims(
    claims: Sequence[str], context: Sequence[str], *, mode: Mode = "faithfulness"
) -> list[ClaimCheck]:
    """One verdict per claim, in order. See the module doc for what yes / no / unsure mean."""
    prepared = _prepare(context)
    checks = [_check(claim if isinstance(claim, str) else str(claim), prepared, mode)
              for claim in claims]  # fmt: skip
    return _with_quotes(checks, context)


def _with_quotes(checks: list[ClaimCheck], context: Sequence[str]) -> list[ClaimCheck]:
    """Each reason ends with the evidence it rests on, readable alone: a tool result's line
    as its field and value (`result.eta: 2026-11-24`), prose as its sentence."""
    wanted = {check.evidence for check in checks if check.evidence is not None}
    if not wanted:
        return checks
    fields: dict[str, str] = {}
    for item in context:
        fields.update(
            json_fields(item if isinstance(item, str) else str(item), wanted - fields.keys())
        )
    quoted = []
    for check in checks:
        if check.evidence is None:
            quoted.append(check)
            continue
        shown = fields.get(check.evidence, check.evidence)
        shown = shown if len(shown) <= _QUOTE else shown[: _QUOTE - 1] + "…"
        label = "relied on" if check.verdict != "unsure" else "closest sentence"
        reason = f'{check.reason} ({label}: "{shown}").'
        quoted.append(ClaimCheck(check.claim, check.verdict, reason, check.evidence,
                                 check.confidence))  # fmt: skip
    return quoted


# --- preparation ----------------------------------------------------------------------------


def _prepare(context: Sequence[str]) -> _Context:
    # Lines repeat in JSON tool results ("orders status shipped" once per order): parse each
    # distinct one once.
    seen: dict[str, Parsed] = {}
    parsed = (
        (seen.get(sentence) or seen.setdefault(sentence, parse(sentence)), (n, record))
        for n, item in enumerate(context)
        for sentence, record in context_sentences(item if isinstance(item, str) else str(item))
    )
    # A question asserts nothing, so it cannot support or contradict a claim.
    kept = [(s, place) for s, place in parsed if not s.question]
    unique, copies, before = _collapse(kept)
    sentences = tuple(s for s, _ in unique)
    places = tuple(place for _, place in unique)
    # One tuple and one set per record, shared by its sentences: a copy each would be
    # quadratic in the size of a large record (a list of 100,000 numbers is one record).
    members: dict[Place, list[int]] = {}
    for i, place in enumerate(places):
        if place[1] is not None:
            members.setdefault(place, []).append(i)
    shared = {place: tuple(ids) for place, ids in members.items()}
    terms = {p: frozenset().union(*(sentences[i].terms for i in ids)) for p, ids in shared.items()}
    records = tuple(shared[p] if p[1] is not None else (i,) for i, p in enumerate(places))
    record_terms = tuple(
        terms[p] if p[1] is not None else sentences[i].terms for i, p in enumerate(places)
    )
    postings: dict[str, list[int]] = {}
    for i, sentence in enumerate(sentences):
        for term in sentence.terms:
            postings.setdefault(term, []).append(i)
    total = len(kept)
    idf = {
        term: math.log(1 + total / sum(copies[i] for i in ids)) for term, ids in postings.items()
    }
    index = {term: tuple(ids) for term, ids in postings.items()}
    number_index = NumberIndex([(n, i) for i, s in enumerate(sentences) for n in s.numbers])
    pairs = frozenset().union(*(s.pairs for s in sentences))
    weight = math.log(1 + total) + 1
    numbers = tuple(n for s in sentences for n in s.numbers)
    prefixes = frozenset(t[:NAME_PREFIX] for t in postings if len(t) >= NAME_PREFIX)
    universals = frozenset().union(*(_universals(s.text) for s in sentences))
    return _Context(
        sentences,
        tuple(before),
        places,
        records,
        record_terms,
        index,
        idf,
        frozenset(postings),
        pairs,
        number_index,
        numbers,
        prefixes,
        weight,
        universals,
    )


def _collapse(
    kept: list[tuple[Parsed, Place]],
) -> tuple[list[tuple[Parsed, Place]], list[int], list[tuple[int, ...]]]:
    """Each sentence once per place, with its number of copies and the sentences before its
    first copy. A line repeated in one record ("readings 0" 100,000 times) would otherwise be
    aligned with every claim once per copy; the counts keep the IDF weights as they were."""
    first: dict[tuple[str, Place], int] = {}
    unique: list[tuple[Parsed, Place]] = []
    copies: list[int] = []
    before: list[tuple[int, ...]] = []
    recent: deque[int] = deque(maxlen=NAME_WINDOW)
    for sentence, place in kept:
        at = first.get((sentence.text, place))
        if at is None:
            at = first[sentence.text, place] = len(unique)
            unique.append((sentence, place))
            copies.append(0)
            before.append(tuple(recent))
        copies[at] += 1
        recent.append(at)
    return unique, copies, before


# --- checking -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Alignment:
    best: Parsed | None
    unmatched: float  # claim content (numbers weigh NUMBER_WEIGHT words) not in the context
    total: float  # all claim content, same weighting
    best_overlap: float  # share of claim words (not numbers) found in the best sentence
    nearby: frozenset[str]  # terms of the best sentence, the NAME_WINDOW before it, its record
    place: Place | None = None  # where the best sentence comes from
    record_terms: frozenset[str] = frozenset()  # terms of the best sentence's JSON record
    record: tuple[Parsed, ...] = ()  # the best sentence's JSON record, or the sentence alone


def _check(claim: str, context: _Context, mode: Mode) -> ClaimCheck:
    parsed = parse(claim)
    if not parsed.terms and not parsed.numbers:
        return ClaimCheck(claim, "unsure", "The claim states nothing checkable.", None)
    alignment = _align(parsed, context)
    best = alignment.best
    if best is None:
        return ClaimCheck(claim, "unsure", "No context sentence matched the claim.", None)
    speculative = _speculative(claim)
    # "expected to arrive on the 24th" restates "expected arrival: the 24th": the context
    # hedges the same way, so the claim claims no more than it.
    hedged_alike = speculative and {canon(w) for w in words(speculative)} & best.terms
    if speculative and mode == "faithfulness" and not hedged_alike:
        reason = f"Speculative ('{speculative}'); the context states facts, not possibilities"
        return _verdict(claim, "unsure", reason, best)
    conflict = _conflict(parsed, alignment, context)
    if conflict is not None:
        kind, what = conflict
        sure = DECIDED if kind in _DECISIVE or _invented_name(kind, parsed, context) else UNDECIDED
        return _verdict(claim, "no", f"Contradicts the context: {what}", best, sure)
    gap = _gap(parsed, alignment, context)
    if gap is not None:
        # A number the context nowhere holds is a fact it does not give; other gaps are
        # often paraphrase or words the context implies.
        unknown = any(not _in_context(n, context) for n in _strict_numbers(parsed))
        sure = DECIDED if unknown else UNDECIDED
        return _verdict(claim, "unsure", f"Not supported by the context: {gap}", best, sure)
    if _restated(parsed, alignment):
        return _verdict(claim, "yes", "Stated in the context", best, DECIDED)
    return _verdict(claim, "yes", "Supported by the context", best)


def _verdict(
    claim: str, verdict: Verdict, why: str, evidence: Parsed, confidence: float = UNDECIDED
) -> ClaimCheck:
    # The quote of the evidence is added once every claim is checked (see _with_quotes).
    return ClaimCheck(claim, verdict, why, evidence.text, confidence)


def _align(claim: Parsed, context: _Context) -> _Alignment:
    scores: dict[int, float] = {}
    # In a fixed order: float sums depend on it, and a tie between two sentences must not be
    # broken by the process's string-hash seed.
    for term in sorted(claim.terms):
        weight = context.idf.get(term, 0.0)
        for i in context.index.get(term, ()):
            scores[i] = scores.get(i, 0.0) + weight
    for number in _strict_numbers(claim):
        for i in _sentences_with(number, context):
            scores[i] = scores.get(i, 0.0) + context.number_weight
    if not scores:
        return _Alignment(None, 0.0, 0.0, 0.0, frozenset())
    at = min(scores, key=lambda i: (-scores[i], i))
    best = context.sentences[at]
    unmatched, total = _unmatched(claim, context)
    # The fields of one JSON record are all about the same thing, in any order.
    record = context.record_terms[at]
    window = (*context.before[at], at)
    nearby = record.union(*(context.sentences[i].terms for i in window))
    return _Alignment(
        best,
        unmatched,
        total,
        _overlap(claim, best),
        nearby,
        context.places[at],
        record,
        tuple(context.sentences[i] for i in context.records[at]),
    )


def _unmatched(claim: Parsed, context: _Context) -> tuple[float, float]:
    numbers = _strict_numbers(claim)
    missing = sum(1 for n in numbers if not _in_context(n, context))
    total = len(claim.terms) + NUMBER_WEIGHT * len(numbers)
    return len(claim.terms - context.vocabulary) + NUMBER_WEIGHT * missing, total


def _overlap(claim: Parsed, sentence: Parsed) -> float:
    terms = claim.terms
    if any(n.kind == "date" for n in claim.numbers):
        terms -= CALENDAR_TERMS  # a date's month is compared as part of the date
    return len(terms & sentence.terms) / len(terms) if terms else 1.0


_MONTH_MAY = re.compile(r"\bMay\b(?=\s*\d)|(?<=\d)\s*May\b|(?<=\w\s)May\b")


def _strict_numbers(claim: Parsed) -> list[Number]:
    return [n for n in claim.numbers if not n.exact_only]


def _speculative(claim: str) -> str | None:
    for token in words(_MONTH_MAY.sub(" ", claim)):
        if token.lower() in SPECULATIVE:
            return token.lower()
    phrase = SPECULATIVE_PHRASES.search(claim)
    return phrase.group().lower() if phrase else None


# --- contradictions -------------------------------------------------------------------------


# Conflicts with the aligned evidence that a careful reader would call contradictions
# without doubt; antonym and negation findings depend on word scope and stay undecided, and
# a swapped name only decides when the claim's name occurs nowhere in the context (else the
# claim may take it from another sentence about the same thing).
_DECISIVE = frozenset({"number", "state", "missing"})


def _invented_name(kind: str, claim: Parsed, context: _Context) -> bool:
    unknown = [n for n in claim.names if not _known_name(n, context)]
    return kind == "name" and bool(unknown)


def _conflict(claim: Parsed, alignment: _Alignment, context: _Context) -> tuple[str, str] | None:
    best = alignment.best
    if best is None:
        return None
    # Only a claim that states something's state can conflict with a record's state.
    if states(claim) and _about_same(claim, alignment):
        missing = missing_record(claim, alignment.record)
        if missing is not None:
            return "missing", missing
        state = state_conflict(claim, alignment.record)
        if state is not None:
            return "state", state
    # A shared neighbour ("thick atmosphere" / "thin atmosphere") ties an antonym to the same
    # thing even when the rest of the claim adds material the context lacks.
    antonym = _antonym_conflict(claim, best, alignment.best_overlap >= ALIGN_FOR_CONFLICT)
    if antonym is not None:
        return "antonym", antonym
    if alignment.best_overlap < ALIGN_FOR_CONFLICT:
        return None
    found = _number_conflict(claim, alignment, context)
    if found is not None:
        return "number", found
    found = _negation_conflict(claim, best, alignment)
    if found is not None:
        return "negation", found
    found = _name_conflict(claim, best)
    return None if found is None else ("name", found)


def _about_same(claim: Parsed, alignment: _Alignment) -> bool:
    """The aligned record is about what the claim is about: it holds the claim's numbers
    (an order id) or at least half its words."""
    terms = frozenset().union(*(s.terms for s in alignment.record))
    numbers = [n for s in alignment.record for n in s.numbers]
    strict = _strict_numbers(claim)
    if strict and all(_supported_number(n, numbers) for n in strict):
        return True
    return bool(claim.terms) and len(claim.terms & terms) >= ALIGN_FOR_CONFLICT * len(claim.terms)


def _number_conflict(claim: Parsed, alignment: _Alignment, context: _Context) -> str | None:
    best = alignment.best
    assert best is not None
    for number in _strict_numbers(claim):
        if _in_context(number, context):
            continue
        rival = next((n for n in best.numbers if _comparable(number, n)), None)
        # The whole unit must be in the sentence: "45 days ago" (time since delivery) is not
        # the quantity of "within 30 days of delivery" (a return window); then it is absent.
        if rival is not None and number.unit <= best.terms:
            return f"the claim says {_show(number)}, the context says {_show(rival)}"
    return None


def _antonym_conflict(claim: Parsed, best: Parsed, aligned: bool) -> str | None:
    own = best.terms - claim.terms
    for term in sorted(claim.terms - best.terms):
        opposites = ANTONYMS.get(term, frozenset()) | {
            t for t in own if (term[:2] in _PREFIX_STARTS or t[:2] in _PREFIX_STARTS)
            and _prefix_opposite(term, t)
        }  # fmt: skip
        for rival in sorted(opposites & own):
            if aligned or _neighbours(claim.seq, term) & _neighbours(best.seq, rival):
                said, has = _surface(claim.text, [term]), _surface(best.text, [rival])
                return f"the claim says '{said}' where the context says '{has}'"
    return None


_NEGATING_PREFIXES = ("un", "in", "im", "il", "ir", "non", "dis")
_PREFIX_STARTS = frozenset(p[:2] for p in _NEGATING_PREFIXES)


def _prefix_opposite(a: str, b: str) -> bool:
    # "incorrect" / "correct", "unlikely" / "likely"; stems are cut at 7 letters, so the
    # bare word only has to start with what follows the prefix.
    for x, y in ((a, b), (b, a)):
        for prefix in _NEGATING_PREFIXES:
            rest = x[len(prefix) :]
            if x.startswith(prefix) and len(rest) >= 4 and y[: len(rest)] == rest:
                return True
    return False


def _neighbours(seq: tuple[str, ...], term: str) -> set[tuple[int, str]]:
    # The side counts: "thin atmosphere" / "thick atmosphere" qualify the same noun, while
    # "outside the return window" / "returned within 30 days" only share a word.
    out: set[tuple[int, str]] = set()
    for i, item in enumerate(seq):
        if item == term:
            out.update((-1, w) for w in seq[max(0, i - 1) : i])
            out.update((1, w) for w in seq[i + 1 : i + 2])
    return out


def _negation_conflict(claim: Parsed, best: Parsed, alignment: _Alignment) -> str | None:
    # Only words under a negation's scope count: long sentences often negate another clause.
    if alignment.best_overlap < ALIGN_FOR_NEGATION:
        return None
    shared = claim.terms & best.terms
    flipped = ((claim.negated & shared) - best.negated) | ((best.negated & shared) - claim.negated)
    flipped -= claim.names  # a name is not a predicate
    if len(flipped) < NEGATION_MIN_WORDS:
        return None
    word = _surface(claim.text, [min(flipped)])
    return f"'{word}' is negated in one and not in the other"


def _name_conflict(claim: Parsed, best: Parsed) -> str | None:
    # A swapped name: the rest of the claim restates the sentence, the names differ.
    # "Canada" / "Canadians" share their first letters: the same name, not a swap.
    starts = {t[:NAME_PREFIX] for t in best.terms if len(t) >= NAME_PREFIX}
    unknown = {
        n for n in claim.names - best.terms if len(n) < NAME_PREFIX or n[:NAME_PREFIX] not in starts
    }
    rest = claim.terms - unknown
    if not unknown or not rest or len(rest & best.terms) < NAME_SWAP_OVERLAP * len(rest):
        return None
    others = best.names - claim.terms
    if not others:
        return None
    said, has = _surface(claim.text, sorted(unknown)), _surface(best.text, sorted(others))
    return f"the claim names {said} where the context names {has}"


def _comparable(a: Number, b: Number) -> bool:
    if a.kind != b.kind and not {a.kind, b.kind} <= {"num", "ord"}:
        return False
    return not a.unit or not b.unit or bool(a.unit & b.unit)


def _show(number: Number) -> str:
    if number.kind == "date":
        year, month_day = divmod(int(number.value), 10000)
        return f"{year:04d}-{month_day // 100:02d}-{month_day % 100:02d}".removeprefix("0000-")
    text = f"{number.value:.10g}"
    return f"{text}-{number.high:g}" if number.high is not None else text


# --- support --------------------------------------------------------------------------------


def _gap(claim: Parsed, alignment: _Alignment, context: _Context) -> str | None:
    for number in _strict_numbers(claim):
        if not _in_context(number, context):
            return f"the number {_show(number)} does not appear in the context"
    known = context.vocabulary
    short = len(claim.terms) <= SHORT_CLAIM
    missing_names = sorted(n for n in claim.names if not _known_name(n, context))
    if missing_names:
        return f"{_surface(claim.text, missing_names)} not mentioned in the context"
    # "Hot Rod was founded in 1987" against "Cooking Light ... founded in 1987": every word is
    # in the context, but the fact is stated about another name.
    if short and claim.names and not claim.names & alignment.nearby:
        named = _surface(claim.text, sorted(claim.names))
        return f"the context says this about something other than {named}"
    # Every word of a multi-word name may occur and the name still be made up.
    broken = sorted(claim.name_pairs - context.pairs)
    if broken:
        return f"the name '{_surface(claim.text, list(broken[0]), ' ')}' does not occur as such"
    borrowed = _borrowed(claim, alignment, context)
    if borrowed:
        return f"{_surface(claim.text, borrowed)}: said of another record, not this one"
    judged = sorted(_judgements(claim.text) - known)
    if judged:
        return f"the judgement '{_surface(claim.text, judged[:1])}' is not stated"
    universal = sorted(_universals(claim.text) - context.universals)
    if universal:
        return f"'{universal[0]}' claims more than the context states"
    subject = _subject(claim)
    if short and subject and subject not in known:
        return (
            f"'{_surface(claim.text, [subject])}' (what the claim is about) is not in the context"
        )
    if _too_little(alignment, claim):
        missing = [t for t in claim.seq if t not in known]
        return f"{_surface(claim.text, missing[:4])} not found" if missing else "too little matches"
    return None


def _restated(claim: Parsed, alignment: _Alignment) -> bool:
    """Near-verbatim support: the claim's content words as one run of the evidence's (any
    order within one JSON record, whose fields have none), its numbers there too, and no
    negation either side lacks. Words merely found across the context leave relations
    unchecked ("A beat B")."""
    best = alignment.best
    if best is None or not claim.terms or not _statement(claim.text):
        return False
    if any(n.hedged for n in claim.numbers):
        return False  # an approximation is a judgement call, not a restatement
    if _QUANTIFIER.search(claim.text):
        return False
    record = alignment.record if alignment.place and alignment.place[1] is not None else (best,)
    if len(record) > 1:
        if not claim.terms <= alignment.record_terms:
            return False
    elif not _contiguous(claim.seq, best.seq):
        return False
    negated = frozenset().union(*(s.negated for s in record))
    if negated & claim.terms != claim.negated & claim.terms:
        return False
    numbers = [n for s in record for n in s.numbers]
    return all(_supported_number(n, numbers) for n in _strict_numbers(claim))


_AUXILIARY_WORDS = (
    "is are was were be been being has have had does did do will would can could shall "
    "should may might must"
)
_AUXILIARIES = frozenset(_AUXILIARY_WORDS.split())


def _statement(text: str) -> bool:
    """A sentence with a verb, not a bare phrase: "Neil Gaiman." answers a question the
    judge does not see, so restating the context's words does not make it right."""
    # Without a tagger: an auxiliary, or a lower-case word after the first ending as a past
    # or third-person verb does ("shipped", "lends"; plurals pass too, phrases rarely have one).
    return any(
        t.lower() in _AUXILIARIES or (i > 0 and t.islower() and t.endswith(("ed", "s")))
        for i, t in enumerate(words(text))
    )


def _contiguous(needle: Sequence[str], haystack: Sequence[str]) -> bool:
    """`needle` occurs as one run of `haystack`'s content words. Words in order but spread
    over a sentence may belong to different clauses ("Mumford & Sons ... Twenty One Pilots is
    from Columbus, Ohio"), and a dropped modifier may be the fact ("produces a correct
    output"). Measured: allowing two runs (an elided coordinated clause) cost 1 to 3 points
    of accuracy on the decided share of the dev sets."""
    run, n = tuple(needle), len(needle)
    return any(tuple(haystack[i : i + n]) == run for i in range(len(haystack) - n + 1))


# A set quantifier makes a claim about members the evidence sentence may not hold ("Both
# were born in America" against one person's birth).
_QUANTIFIER = re.compile(r"\b(?:both|neither|either|only)\b", re.I)


def _known_name(name: str, context: _Context) -> bool:
    # "Libyan" / "Libya", "presidential" / "President": a shared 5-letter start is the same name.
    if name in context.vocabulary:
        return True
    return len(name) >= NAME_PREFIX and name[:NAME_PREFIX] in context.prefixes


def _borrowed(claim: Parsed, alignment: _Alignment, context: _Context) -> list[str]:
    """Claim words that its JSON record lacks and only other records of the same tool result
    have: in a list of orders, "order 2001 shipped" borrows "shipped" from order 1042."""
    if alignment.place is None or alignment.place[1] is None:
        return []
    return sorted(
        term
        for term in claim.terms - alignment.record_terms
        if (found := context.index.get(term))
        and all(_unrelated(alignment.place, context.places[i]) for i in found)
    )


def _unrelated(place: Place, other: Place) -> bool:
    """Another record of the same tool result that neither contains nor is contained in
    this one (whose words describe it as a whole or in part)."""
    item, record = place
    other_item, other_record = other
    if other_item != item or record is None or other_record is None:
        return False
    return not related(record, other_record)


def _surface(text: str, stems: Sequence[str], joiner: str = ", ") -> str:
    """The claim's own words for stems, so reasons quote 'charge', not 'charg'."""
    seen: dict[str, str] = {}
    for word in words(text):
        seen.setdefault(canon(word), word)
    return joiner.join(dict.fromkeys(seen.get(s, s) for s in stems))


def _subject(claim: Parsed) -> str | None:
    # Without a parser: the claim's first word after any determiner, when it is a content
    # word ("Members get...", "The members get..."); "They are..." has no checkable subject.
    first = next((w for w in words(claim.text) if w.lower() not in DETERMINERS), None)
    if first is None or not claim.seq or canon(first) != claim.seq[0]:
        return None
    return claim.seq[0]


_SUBJECTIVE_STEMS = frozenset(canon(w) for w in SUBJECTIVE)
# Fixed phrases that use an evaluative word factually ("best known for", "best-selling").
_FACTUAL_PHRASES = re.compile(
    r"\bbest[- ](?:known|fit|suited|selling|seller|practices?|way)\b|\bmost popular among\b",
    re.IGNORECASE,
)


def _judgements(text: str) -> set[str]:
    return {
        s for w in words(_FACTUAL_PHRASES.sub(" ", text)) if (s := canon(w)) in _SUBJECTIVE_STEMS
    }


# "all" is left out: it is mostly loose ("all three albums") and a stopword besides.
_UNIVERSALS = frozenset({"every", "everyone", "everything", "everywhere", "always"})


def _universals(text: str) -> set[str]:
    # "free shipping on every order": a universal goes beyond any one stated case; it is
    # grounded only when the context generalises too. Compared as written.
    return {low for w in words(text) if (low := w.lower()) in _UNIVERSALS}


def _too_little(alignment: _Alignment, claim: Parsed) -> bool:
    # In a short claim every word is the fact ("a married singer"); longer claims have
    # words that are mere phrasing, so the slack grows with the claim beyond STRICT_WORDS.
    slack = (1 - SUPPORT_THRESHOLD) * max(0.0, alignment.total - STRICT_WORDS)
    return alignment.unmatched > slack


def _sentences_with(number: Number, context: _Context) -> set[int]:
    """The sentences holding a number the claim's `number` restates."""
    return {i for n, i in context.number_index.candidates(number) if _same_number(number, n)}


def _in_context(number: Number, context: _Context) -> bool:
    return any(_same_number(number, n) for n, _ in context.number_index.candidates(number))


def _supported_number(number: Number, numbers: list[Number]) -> bool:
    """`number` among a record's few numbers (the whole context goes through its index)."""
    return any(_same_number(number, n) for n in numbers)


def _same_number(claim: Number, ctx: Number) -> bool:
    if claim.kind == "date" or ctx.kind == "date":
        return _same_date(claim, ctx)
    if claim.high is not None and claim.high == ctx.high and claim.value == ctx.value:
        return True  # the same range ("10-24"), as equal single numbers are, whatever follows
    if ctx.high is not None and ctx.value <= claim.value <= ctx.high:
        return _comparable(claim, ctx)
    if claim.high is not None:
        return claim.value == ctx.value or claim.high == ctx.value
    if math.isclose(claim.value, ctx.value, rel_tol=1e-9):
        return True
    hedged = claim.hedged or ctx.hedged
    if claim.decimals and round(ctx.value, claim.decimals) == claim.value:
        return True  # "5.8" restates 5.83 at the claim's precision
    if hedged and round(ctx.value) == claim.value:
        return True
    return hedged and abs(claim.value - ctx.value) <= _APPROX * max(abs(ctx.value), 1e-9)


def _same_date(claim: Number, ctx: Number) -> bool:
    # Month and day must agree; the year is checked as its own number, so a date written
    # without one ("Thursday 18 October") still supports "18 October 2018".
    if claim.kind == "date" and ctx.kind == "date":
        return claim.value % 10000 == ctx.value % 10000
    if claim.kind == "year":
        return ctx.value // 10000 == claim.value
    return False
