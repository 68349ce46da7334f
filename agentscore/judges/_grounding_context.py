"""A context as the local judge reads it, prepared once and shared by every scorer of a run.

Faithfulness and hallucination scoring the same run check their claims against the same
context; `prepare` keeps the last few prepared contexts, keyed on a digest of their text, so
the second scorer reuses what the first derived. What the checks only look up for a claim's
own terms (the sentences holding a term, its IDF weight, a sentence's JSON record, the
numbers by value) is built on first use from a per-text index, not for every term of the
context: a tool result of 100,000 lines costs one pass over its lines, and each claim then
reads only the lines that share something with it.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any, TypeVar

from agentscore.judges._grounding_json import Record, context_sentences
from agentscore.judges._grounding_numbers import Number
from agentscore.judges._grounding_numindex import NumberIndex
from agentscore.judges._grounding_parse import Parsed, parse
from agentscore.judges._grounding_text import words

__all__ = ["NAME_PREFIX", "NAME_WINDOW", "Place", "Prepared", "prepare", "universals"]

T = TypeVar("T")

# Where a context sentence comes from: its context item, and its JSON record (None in prose).
Place = tuple[int, Record | None]

# Names sharing their first letters are the same name ("Libya" / "Libyan").
NAME_PREFIX = 5
# A fact's sentence, or the sentences just before it (where "It" / "He" is introduced), must
# mention one of the claim's names for the fact to be about them.
NAME_WINDOW = 1

# Prepared contexts kept for reuse: enough for the scorers of the runs in flight at once,
# bounded by the characters of context they were prepared from (a prepared context takes
# a small multiple of its text's size).
CACHE_ENTRIES = 16
CACHE_CHARS = 8_000_000

_MISSING = object()

# Claims whose alignment a prepared context keeps (a run has at most 200).
REMEMBERED_CLAIMS = 1024

# "all" is left out: it is mostly loose ("all three albums") and a stopword besides.
_UNIVERSALS = frozenset({"every", "everyone", "everything", "everywhere", "always"})


def universals(text: str) -> set[str]:
    # "free shipping on every order": a universal goes beyond any one stated case; it is
    # grounded only when the context generalises too. Compared as written.
    return {low for w in words(text) if (low := w.lower()) in _UNIVERSALS}


class Prepared:
    """Sentences (each distinct text once per place) with what the checks look up in them.

    Set-wide facts (vocabulary, word pairs, name prefixes, universals) come from the
    distinct texts; per-term and per-record lookups are computed when first asked for.
    """

    def __init__(self, context: Sequence[str]) -> None:
        # Lines repeat in JSON tool results ("orders status shipped" once per order): parse
        # each distinct one once. A question asserts nothing, so it cannot support or
        # contradict a claim.
        texts: dict[str, int] = {}  # text -> its number among the distinct kept texts
        parsed: list[Parsed] = []
        questions: set[str] = set()
        kept: list[tuple[int, Place]] = []
        for n, item in enumerate(context):
            places: dict[Record | None, Place] = {}  # one tuple per record, not per line
            for sentence, record in context_sentences(item if isinstance(item, str) else str(item)):
                at = texts.get(sentence)
                if at is None:
                    if sentence in questions:
                        continue
                    one = parse(sentence)
                    if one.question:
                        questions.add(sentence)
                        continue
                    at = texts[sentence] = len(parsed)
                    parsed.append(one)
                place = places.get(record)
                if place is None:
                    place = places[record] = (n, record)
                kept.append((at, place))
        self._texts = parsed
        self._collapse(kept)
        self.sentences = tuple(parsed[t] for t in self._text_of)
        self.total = len(kept)
        self.vocabulary: frozenset[str] = frozenset().union(*(p.terms for p in parsed))
        self.pairs: frozenset[tuple[str, str]] = frozenset().union(*(p.pairs for p in parsed))
        self.prefixes = frozenset(t[:NAME_PREFIX] for t in self.vocabulary if len(t) >= NAME_PREFIX)
        self.universals = frozenset().union(*(universals(p.text) for p in parsed))
        # Stems of the context's proper-noun candidates.
        self.names: frozenset[str] = frozenset().union(*(p.names for p in parsed))
        # Alignment weight of a matched number: as rare as the rarest word.
        self.number_weight = math.log(1 + self.total) + 1
        self._postings: dict[str, tuple[int, ...]] = {}
        self._idf: dict[str, float] = {}
        self._records: dict[Place, tuple[tuple[int, ...], frozenset[str]]] = {}
        self._remembered: dict[str, Any] = {}

    def _collapse(self, kept: list[tuple[int, Place]]) -> None:
        """Each sentence once per place, with its number of copies and the sentences before
        its first copy. A line repeated in one record ("readings 0" 100,000 times) would
        otherwise be aligned with every claim once per copy; the counts keep the IDF weights
        as they were."""
        first: dict[tuple[int, Place], int] = {}
        text_of: list[int] = []
        places: list[Place] = []
        copies: list[int] = []
        before: list[tuple[int, ...]] = []
        recent: deque[int] = deque(maxlen=NAME_WINDOW)
        for key in kept:
            at = first.get(key)
            if at is None:
                at = first[key] = len(text_of)
                text_of.append(key[0])
                places.append(key[1])
                copies.append(0)
                before.append(tuple(recent))
            copies[at] += 1
            recent.append(at)
        self._text_of = text_of
        self.places = tuple(places)
        self._copies = copies
        self.before = tuple(before)

    @cached_property
    def _by_text(self) -> list[list[int]]:
        """Per distinct text, the sentences holding it, in order."""
        out: list[list[int]] = [[] for _ in self._texts]
        for i, text in enumerate(self._text_of):
            out[text].append(i)
        return out

    @cached_property
    def _texts_by_term(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for t, one in enumerate(self._texts):
            for term in one.terms:
                out.setdefault(term, []).append(t)
        return out

    @cached_property
    def _members(self) -> dict[Place, list[int]]:
        out: dict[Place, list[int]] = {}
        for i, place in enumerate(self.places):
            if place[1] is not None:
                out.setdefault(place, []).append(i)
        return out

    @cached_property
    def numbers(self) -> tuple[Number, ...]:
        """Every number in the context (what a computed number may be made of)."""
        return tuple(n for s in self.sentences for n in s.numbers)

    @cached_property
    def number_index(self) -> NumberIndex:
        """Every number in the context, by value, with its sentence."""
        return NumberIndex([(n, i) for i, s in enumerate(self.sentences) for n in s.numbers])

    def postings(self, term: str) -> tuple[int, ...]:
        """The sentences whose terms include `term`, in order."""
        found = self._postings.get(term)
        if found is None:
            by_text = self._by_text
            ids = [i for t in self._texts_by_term.get(term, ()) for i in by_text[t]]
            found = self._postings[term] = tuple(sorted(ids))
        return found

    def idf(self, term: str) -> float:
        weight = self._idf.get(term)
        if weight is None:
            ids = self.postings(term)
            weight = math.log(1 + self.total / sum(self._copies[i] for i in ids)) if ids else 0.0
            self._idf[term] = weight
        return weight

    def remember(self, key: str, compute: Callable[[], T]) -> T:
        """What the engine derived about `key` (a claim) from this context, computed once."""
        # One get, not a test then a read: another thread may clear the dict in between.
        found = self._remembered.get(key, _MISSING)
        if found is not _MISSING:
            value: T = found
            return value
        if len(self._remembered) >= REMEMBERED_CLAIMS:
            self._remembered.clear()  # a static context meets new claims with every run
        value = self._remembered[key] = compute()
        return value

    def record(self, at: int) -> tuple[tuple[int, ...], frozenset[str]]:
        """The sentences of sentence `at`'s JSON record (itself alone in prose) and their
        terms; one tuple and one set per record, shared by its sentences."""
        place = self.places[at]
        if place[1] is None:
            return (at,), self.sentences[at].terms
        found = self._records.get(place)
        if found is None:
            ids = tuple(self._members[place])
            terms = frozenset().union(*(self.sentences[i].terms for i in ids))
            found = self._records[place] = (ids, terms)
        return found


_cache: OrderedDict[bytes, tuple[Prepared, int]] = OrderedDict()
_cached_chars = 0
_lock = threading.Lock()


def prepare(context: Sequence[str]) -> Prepared:
    """The prepared form of `context`, from the cache when the same text was prepared lately."""
    global _cached_chars
    items = [item if isinstance(item, str) else str(item) for item in context]
    digest = hashlib.blake2b(digest_size=16)
    for item in items:
        data = item.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    key = digest.digest()
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit[0]
    prepared = Prepared(items)
    size = sum(len(item) for item in items)
    if size > CACHE_CHARS:
        return prepared  # would evict everything else for one context
    with _lock:
        if key not in _cache:
            _cache[key] = (prepared, size)
            _cached_chars += size
        while len(_cache) > CACHE_ENTRIES or _cached_chars > CACHE_CHARS:
            _, (_, evicted) = _cache.popitem(last=False)
            _cached_chars -= evicted
    return prepared
