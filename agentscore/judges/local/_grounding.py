"""Offline grounding engine: decides whether each claim is supported by, contradicts, or is
absent from a context, with lexical alignment plus number, entity, negation and antonym checks.

Deterministic, stdlib only. The context is prepared once per call (sentences, stems, numbers,
an inverted index with IDF weights) and every claim is scored against that. See
docs/local-judge.md for what this catches and what it misses compared with an LLM judge.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from agentscore._runtime.courtesy import give_way
from agentscore.judges.local._bounds import violates
from agentscore.judges.local._context import (
    NAME_PREFIX,
    Place,
    Prepared,
    prepare,
    universals,
)
from agentscore.judges.local._derived import MAX_OPERANDS, derivable, next_year
from agentscore.judges.local._json import related
from agentscore.judges.local._lexicon import (
    COMPUTING,
    DETERMINERS,
    HEDGE_PHRASES,
    HEDGE_WORDS,
    SPECULATIVE,
    SPECULATIVE_PHRASES,
    SUBJECTIVE,
)
from agentscore.judges.local._numbers import Number
from agentscore.judges.local._parse import CALENDAR_TERMS, Parsed, parse
from agentscore.judges.local._split import MAX_CLAIMS, split_claims
from agentscore.judges.local._states import missing_record, state_conflict, states
from agentscore.judges.local._text import ANTONYMS, canon, words

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
# Share of claim words the best-aligned sentence must share before a differing value there
# counts as a contradiction rather than as a sentence about something else.
ALIGN_FOR_CONFLICT = 0.5
ALIGN_FOR_NEGATION = 0.5
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
    # The evidence's own sentence in the context, when it is one line of a record (its
    # state) rather than the first copy of its text: the quote names that line's field.
    evidence_at: int | None = None


def check_claims(
    claims: Sequence[str], context: Sequence[str], *, mode: Mode = "faithfulness"
) -> list[ClaimCheck]:
    """One verdict per claim, in order. See the module doc for what yes / no / unsure mean."""
    prepared = prepare(context)
    checks = []
    for claim in claims:
        give_way()  # each claim is a fraction of a millisecond; a long answer has many
        checks.append(_check(claim if isinstance(claim, str) else str(claim), prepared, mode))
    return _with_quotes(checks, prepared)


def _with_quotes(checks: list[ClaimCheck], context: Prepared) -> list[ClaimCheck]:
    """Each reason ends with the evidence it rests on, readable alone: a tool result's line
    as its field and value (`result.eta: 2026-11-24`), prose as its sentence."""
    quoted = []
    for check in checks:
        if check.evidence is None:
            quoted.append(check)
            continue
        at = check.evidence_at
        field = context.field(check.evidence) if at is None else context.field_at(at)
        shown = field or check.evidence
        shown = shown if len(shown) <= _QUOTE else shown[: _QUOTE - 1] + "…"
        label = "relied on" if check.verdict != "unsure" else "closest sentence"
        reason = f'{check.reason} ({label}: "{shown}").'
        quoted.append(ClaimCheck(check.claim, check.verdict, reason, check.evidence,
                                 check.confidence, at))  # fmt: skip
    return quoted


# --- checking -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Alignment:
    best: Parsed | None
    unmatched: float  # claim content (numbers weigh NUMBER_WEIGHT words) not in the context
    total: float  # all claim content, same weighting
    best_overlap: float  # share of claim words (not numbers) found in the best sentence
    nearby: frozenset[str]  # terms of the best sentence, the one read before it, its record
    place: Place | None = None  # where the best sentence comes from
    record_terms: frozenset[str] = frozenset()  # terms of the best sentence's JSON record
    record: tuple[Parsed, ...] = ()  # the best sentence's JSON record, or the sentence alone
    record_at: tuple[int, ...] = ()  # where each sentence of `record` is in the context


def _check(claim: str, context: Prepared, mode: Mode) -> ClaimCheck:
    speculative = _speculative(claim)
    # The hedge goes, the content stays: "is expected to arrive on the 24th" is judged as
    # "arrives on the 24th", so both modes agree when the context states it.
    unhedged = _unhedged(claim) if speculative else claim
    parsed = parse(unhedged)
    if not parsed.terms and not parsed.numbers:
        return ClaimCheck(claim, "unsure", "The claim states nothing checkable.", None)
    # The same claim is aligned alike for every scorer of the run (alignment knows no mode).
    alignment = context.remember(claim, lambda: _align(parsed, context))
    best = alignment.best
    if best is None:
        return ClaimCheck(claim, "unsure", "No context sentence matched the claim.", None)
    check = _content_check(claim, parsed, alignment, context)
    doubt = speculative and _speculative(unhedged)  # "unlikely", "by next year": not hedges
    if speculative and mode == "faithfulness" and (doubt or check.verdict != "yes"):
        # A possibility the context does not state is neither supported nor contradicted.
        reason = f"Speculative ('{speculative}'); the context does not state it"
        return _verdict(claim, "unsure", reason, best)
    return check


def _content_check(
    claim: str, parsed: Parsed, alignment: _Alignment, context: Prepared
) -> ClaimCheck:
    best = alignment.best
    assert best is not None
    # Decisions read names as written: a claim that writes a name of the context in lower
    # case ("kathmandu", tokenised or lower-cased text) hides its names from the name
    # checks, so none of its verdicts is decided.
    cased = not _lowered_names(claim, context)
    conflict = _conflict(parsed, alignment, context)
    if conflict is not None:
        decisive = conflict.kind in _DECISIVE or _invented_name(conflict.kind, parsed, context)
        computed = conflict.kind == "number" and _computed(parsed, alignment, context, derivable)
        sure = cased and decisive and not computed
        why = f"Contradicts the context: {conflict.what}"
        return _verdict(claim, "no", why, conflict.evidence, _level(sure), conflict.at)
    gap = _gap(parsed, alignment, context)
    if gap is not None:
        # A number the context nowhere holds is a fact it does not give, unless the writer
        # computed it; other gaps are often paraphrase or words the context implies.
        unknown = [n for n in _strict_numbers(parsed) if not _in_context(n, context)]
        computed = any(
            _computed(parsed, alignment, context, test) for test in (derivable, next_year)
        )
        sure = cased and bool(unknown) and not computed and not _implied(unknown, alignment)
        return _verdict(claim, "unsure", f"Not supported by the context: {gap}", best, _level(sure))
    if _restated(parsed, alignment):
        return _verdict(claim, "yes", "Stated in the context", best, _level(cased))
    return _verdict(claim, "yes", "Supported by the context", best)


def _lowered_names(claim: str, context: Prepared) -> bool:
    # Title words ("Order of Merit") are names to the parser too, so a claim that capitalises
    # some other word is taken as written.
    tokens = words(claim)
    if any(_CAPITALISED.match(t) for t in tokens[1:]):
        return False
    return any(t.islower() and canon(t) in context.names for t in tokens)


_CAPITALISED = re.compile(r"[A-Z][a-z]")


def _level(sure: bool) -> float:
    return DECIDED if sure else UNDECIDED


def _computed(
    claim: Parsed,
    alignment: _Alignment,
    context: Prepared,
    test: Callable[[Number, Sequence[Number]], bool],
) -> bool:
    """A number of the claim the context lacks may be computed from the context's numbers (a
    count, a margin, a total, a share, the next year): the local judge cannot tell, so it
    does not decide."""
    unknown = [n for n in _strict_numbers(claim) if not _in_context(n, context)]
    if unknown and any(w.lower() in COMPUTING for w in words(claim.text)):
        return True  # "a total of 50,000", "averaging 25 points per game"
    if context.number_count <= MAX_OPERANDS:
        operands = context.numbers
    else:
        operands = tuple(n for s in alignment.record for n in s.numbers)
    return any(test(n, operands) for n in unknown)


def _verdict(
    claim: str,
    verdict: Verdict,
    why: str,
    evidence: Parsed,
    confidence: float = UNDECIDED,
    at: int | None = None,
) -> ClaimCheck:
    # The quote of the evidence is added once every claim is checked (see _with_quotes).
    return ClaimCheck(claim, verdict, why, evidence.text, confidence, at)


def _align(claim: Parsed, context: Prepared) -> _Alignment:
    # Every copy of a text scores alike: the texts are scored, and the best one's first
    # sentence is the evidence (texts are numbered in the order of their first sentences).
    scores: dict[int, float] = {}
    # In a fixed order: float sums depend on it, and a tie between two sentences must not be
    # broken by the process's string-hash seed.
    for term in sorted(claim.terms):
        weight = context.idf(term)
        for t in context.texts(term):
            scores[t] = scores.get(t, 0.0) + weight
    for number in _strict_numbers(claim):
        for t in _texts_with(number, context):
            scores[t] = scores.get(t, 0.0) + context.number_weight
    if not scores:
        return _Alignment(None, 0.0, 0.0, 0.0, frozenset())
    at = context.first(min(scores, key=lambda t: (-scores[t], t)))
    best = context.sentence(at)
    unmatched, total = _unmatched(claim, context)
    # The fields of one JSON record are all about the same thing, in any order.
    members, record = context.record(at)
    window = (*context.before(at), at)
    nearby = record.union(*(context.sentence(i).terms for i in window))
    return _Alignment(
        best,
        unmatched,
        total,
        _overlap(claim, best),
        nearby,
        context.place(at),
        record,
        tuple(context.sentence(i) for i in members),
        members,
    )


def _unmatched(claim: Parsed, context: Prepared) -> tuple[float, float]:
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


def _unhedged(claim: str) -> str:
    # A hedge becomes "will", a stopword auxiliary: the content words stay as they were and
    # the claim stays a statement ("Order 1042 likely arrive" would read as a bare phrase).
    text = HEDGE_PHRASES.sub(" will ", claim)
    return _WORD.sub(lambda m: " will " if m.group() in HEDGE_WORDS else m.group(), text)


# Lower-case only: "Will", "May" and "Expected" may start names and titles.
_WORD = re.compile(r"\b[a-z]+\b")


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


def _invented_name(kind: str, claim: Parsed, context: Prepared) -> bool:
    # One name swapped for an invented one in a short claim; several unknown names are more
    # often a title or a phrase the context words otherwise ("Bachelor of Arts"), and a long
    # claim's name may belong to a clause the evidence does not restate.
    unknown = {n for n in claim.names if not _known_name(n, context)}
    at = [i for i, term in enumerate(claim.seq) if term in unknown]
    one_name = bool(at) and at[-1] - at[0] == len(at) - 1  # "Otto Brandt": adjacent words
    return kind == "name" and one_name and len(claim.terms) <= SHORT_CLAIM


@dataclass(frozen=True, slots=True)
class _Conflict:
    kind: str  # "state", "missing", "number", ...: which check found it
    what: str  # what differs, for the reason
    evidence: Parsed  # the context line that says otherwise, quoted in the reason
    at: int | None = None  # its sentence, when it is a line of the record, not the best one


def _conflict(claim: Parsed, alignment: _Alignment, context: Prepared) -> _Conflict | None:
    best = alignment.best
    if best is None:
        return None
    # Only a claim that states something's state can conflict with a record's state. Its
    # evidence is the record's line holding the state ("status: processing"), which is
    # seldom the line the claim aligned with best (the order's id).
    if states(claim) and _about_same(claim, alignment):
        missing = missing_record(claim, alignment.record)
        if missing is not None:
            return _record_conflict("missing", *missing, alignment)
        state = state_conflict(claim, alignment.record)
        if state is not None:
            return _record_conflict("state", *state, alignment)
    # A shared neighbour ("thick atmosphere" / "thin atmosphere") ties an antonym to the same
    # thing even when the rest of the claim adds material the context lacks.
    antonym = _antonym_conflict(claim, best, alignment.best_overlap >= ALIGN_FOR_CONFLICT)
    if antonym is not None:
        return _Conflict("antonym", antonym, best)
    if alignment.best_overlap < ALIGN_FOR_CONFLICT:
        return None
    found = _number_conflict(claim, alignment, context)
    if found is not None:
        return _Conflict("number", found, best)
    found = _ruled_out(claim, alignment)
    if found is not None:
        return _Conflict("bound", found, best)
    found = _negation_conflict(claim, best, alignment)
    if found is not None:
        return _Conflict("negation", found, best)
    found = _name_conflict(claim, best)
    return None if found is None else _Conflict("name", found, best)


def _record_conflict(kind: str, what: str, line: Parsed, alignment: _Alignment) -> _Conflict:
    return _Conflict(kind, what, line, alignment.record_at[alignment.record.index(line)])


def _about_same(claim: Parsed, alignment: _Alignment) -> bool:
    """The aligned record is about what the claim is about: it holds the claim's numbers
    (an order id) or at least half its words."""
    terms = frozenset().union(*(s.terms for s in alignment.record))
    numbers = [n for s in alignment.record for n in s.numbers]
    strict = _strict_numbers(claim)
    if strict and all(_supported_number(n, numbers) for n in strict):
        return True
    return bool(claim.terms) and len(claim.terms & terms) >= ALIGN_FOR_CONFLICT * len(claim.terms)


def _number_conflict(claim: Parsed, alignment: _Alignment, context: Prepared) -> str | None:
    best = alignment.best
    assert best is not None
    for number in _strict_numbers(claim):
        if _in_context(number, context):
            continue
        # An excluded figure ("never 20") says nothing of what the value is.
        rival = next((n for n in best.numbers if _comparable(number, n) and n.bound != "!="), None)
        # The whole unit must be in the sentence: "45 days ago" (time since delivery) is not
        # the quantity of "within 30 days of delivery" (a return window); then it is absent.
        if rival is not None and number.unit <= best.terms and _excludes(number, rival):
            return f"the claim says {_show(number)}, the context says {_show(rival)}"
    return None


def _excludes(claim: Number, ctx: Number) -> bool:
    """Two different figures cannot both hold: both values, or limits of one kind ("within 60
    days" / "within 30 days"), or a value outside the other's limit ("15" / "at least 20").
    A value inside a limit ("15" / "at most 20") or beside an exclusion ("30" / "not 20")
    may hold."""
    if claim.bound == ctx.bound:
        return True
    if "date" in (claim.kind, ctx.kind) or claim.high is not None or ctx.high is not None:
        return False
    if not claim.bound:
        return violates(claim.value, ctx.bound, ctx.value)
    if not ctx.bound:
        return violates(ctx.value, claim.bound, claim.value)
    return False


def _ruled_out(claim: Parsed, alignment: _Alignment) -> str | None:
    """A value of the claim that the evidence has only as an excluded one: "take 20 pills"
    against "never 20", "instead of 20". Its best verdict; how far such a clause reaches is
    uncertain, so it is not decided. (A strict limit is looser in use: "over 300 songs"
    answers "how many" with 300.)"""
    numbers = [n for s in alignment.record for n in s.numbers]
    for number in _strict_numbers(claim):
        if number.bound:
            continue
        same = [n for n in numbers if _same_number(number, n)]
        if same and all(n.bound == "!=" for n in same):
            return f"the claim says {_show(number)}, the context rules it out"
    return None


def _implied(unknown: list[Number], alignment: _Alignment) -> bool:
    """A limit or an exclusion of the claim that a figure of the evidence may meet: "over
    200,000 passengers" by "294,000 passengers", "not 20" by "30". The claim's figure is not
    in the context, yet what it says may be."""
    values = [n for s in alignment.record for n in s.numbers if not n.bound]
    return any(
        _comparable(limit, n)
        and (
            n.value != limit.value
            if limit.bound == "!="
            else not violates(n.value, limit.bound, limit.value)
        )
        for limit in unknown
        if limit.bound
        for n in values
    )


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


def _gap(claim: Parsed, alignment: _Alignment, context: Prepared) -> str | None:
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
    broken = sorted(pair for pair in claim.name_pairs if pair not in context.pairs)
    if broken:
        return f"the name '{_surface(claim.text, list(broken[0]), ' ')}' does not occur as such"
    borrowed = _borrowed(claim, alignment, context)
    if borrowed:
        return f"{_surface(claim.text, borrowed)}: said of another record, not this one"
    judged = sorted(_judgements(claim.text) - known)
    if judged:
        return f"the judgement '{_surface(claim.text, judged[:1])}' is not stated"
    universal = sorted(u for u in universals(claim.text) if u not in context.universals)
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
    if _QUANTIFIER.search(claim.text) or _other_person(claim.text, best.text):
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
    # "take 20 pills" against "never 20": the digits, not the figure (see `_bounds`).
    return all(
        any(_same_number(n, m) and n.bound == m.bound for m in numbers)
        for n in _strict_numbers(claim)
    )


_PERSONS = (
    frozenset({"he", "him", "his", "himself"}),
    frozenset({"she", "her", "hers", "herself"}),
)


def _other_person(claim: str, evidence: str) -> bool:
    """The claim says "he" where the evidence says only "she" (or the reverse): pronouns are
    function words to the alignment, but a swapped one makes a restatement about someone
    else, the error dialogue summaries make most."""
    said = {w.lower() for w in words(claim)}
    has = {w.lower() for w in words(evidence)}
    return any(said & group and not has & group and has & other for group, other in
               (_PERSONS, _PERSONS[::-1]))  # fmt: skip


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


def _known_name(name: str, context: Prepared) -> bool:
    # "Libyan" / "Libya", "presidential" / "President": a shared 5-letter start is the same name.
    if name in context.vocabulary:
        return True
    return len(name) >= NAME_PREFIX and name[:NAME_PREFIX] in context.prefixes


def _borrowed(claim: Parsed, alignment: _Alignment, context: Prepared) -> list[str]:
    """Claim words that its JSON record lacks and only other records of the same tool result
    have: in a list of orders, "order 2001 shipped" borrows "shipped" from order 1042."""
    if alignment.place is None or alignment.place[1] is None:
        return []
    return sorted(
        term
        for term in claim.terms - alignment.record_terms
        if context.texts(term)
        and all(_unrelated(alignment.place, context.place(i)) for i in context.postings(term))
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


def _too_little(alignment: _Alignment, claim: Parsed) -> bool:
    # In a short claim every word is the fact ("a married singer"); longer claims have
    # words that are mere phrasing, so the slack grows with the claim beyond STRICT_WORDS.
    slack = (1 - SUPPORT_THRESHOLD) * max(0.0, alignment.total - STRICT_WORDS)
    return alignment.unmatched > slack


def _texts_with(number: Number, context: Prepared) -> set[int]:
    """The texts holding a number the claim's `number` restates."""
    return {i for n, i in context.number_index.candidates(number) if _same_number(number, n)}


def _in_context(number: Number, context: Prepared) -> bool:
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
