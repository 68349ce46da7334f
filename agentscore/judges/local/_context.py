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

import bisect
import hashlib
import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property
from typing import Any, TypeVar

from agentscore._memo import RecentValues
from agentscore.judges.local._json import Record, Step
from agentscore.judges.local._lines import Lines
from agentscore.judges.local._numbers import Number
from agentscore.judges.local._numindex import NumberIndex
from agentscore.judges.local._parse import Parsed, parse, word_pairs
from agentscore.judges.local._text import words

__all__ = ["NAME_PREFIX", "Place", "Prepared", "prepare", "universals"]

T = TypeVar("T")

# Where a context sentence comes from: its context item, and its JSON record (None in prose).
Place = tuple[int, Record | None]

# Names sharing their first letters are the same name ("Libya" / "Libyan").
NAME_PREFIX = 5

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
    """A context's lines read once (see `Lines`), with what the checks look up in them.

    Claims are aligned with texts (distinct lines), a sentence's full parse is made when a
    claim reaches it, and per-term and per-record lookups are computed when first asked for.
    """

    def __init__(self, context: Sequence[str]) -> None:
        lines = self._lines = Lines(context)
        # Lines read, copies included: each sentence once, and the repeats.
        self.total = len(lines.text_of) + sum(lines.repeats.values())
        self.vocabulary = frozenset(lines.by_term)
        self.prefixes = frozenset(t[:NAME_PREFIX] for t in self.vocabulary if len(t) >= NAME_PREFIX)
        self.names = frozenset(lines.names)
        # Alignment weight of a matched number: as rare as the rarest word.
        self.number_weight = math.log(1 + self.total) + 1
        self._parsed: dict[int, Parsed] = {}
        self._idf: dict[str, float] = {}
        self._records: dict[int, tuple[tuple[int, ...], frozenset[str]]] = {}
        self._remembered: dict[str, Any] = {}

    @cached_property
    def pairs(self) -> frozenset[tuple[str, str]]:
        """Every adjacent word pair of the context (a claim's multi-word names must occur)."""
        return frozenset(pair for line in self._lines.lines for pair in word_pairs(line))

    @cached_property
    def universals(self) -> frozenset[str]:
        """The universals the context states (no word spans the newlines joining its lines)."""
        return frozenset(universals("\n".join(self._lines.lines)))

    @cached_property
    def _spread(self) -> Counter[int]:
        """Per text, the sentences holding it."""
        return Counter(self._lines.text_of)

    @cached_property
    def number_count(self) -> int:
        """How many numbers the sentences hold, a repeated sentence's each time."""
        spread = self._spread
        return sum(len(numbers) * spread[t] for t, numbers in enumerate(self._lines.numbers))

    @cached_property
    def numbers(self) -> tuple[Number, ...]:
        """Every number in the context (what a computed number may be made of)."""
        spread = self._spread
        return tuple(
            n for t, numbers in enumerate(self._lines.numbers) for n in numbers * spread[t]
        )

    @cached_property
    def number_index(self) -> NumberIndex:
        """Every number in the context, by value, with its text."""
        return NumberIndex(
            [(n, t) for t, numbers in enumerate(self._lines.numbers) for n in numbers]
        )

    def texts(self, term: str) -> list[int]:
        """The texts whose terms include `term`, in order."""
        return self._lines.by_term.get(term, [])

    def first(self, text: int) -> int:
        """The first sentence holding `text` (texts are numbered in the order of these)."""
        return self._lines.first[text]

    def postings(self, term: str) -> Iterator[int]:
        """The sentences whose terms include `term`."""
        by_text = self._by_text
        starts = self._starts
        for text in self.texts(term):
            yield from by_text[starts[text] : starts[text + 1]]

    @cached_property
    def _starts(self) -> array[int]:
        starts = array("q", [0])
        spread = self._spread
        for text in range(len(self._lines.lines)):
            starts.append(starts[-1] + spread[text])
        return starts

    @cached_property
    def _by_text(self) -> array[int]:
        """The sentences grouped by text, each group in order (see `_starts`)."""
        filled = array("q", self._starts)
        out = array("q", bytes(8 * len(self._lines.text_of)))
        for at, text in enumerate(self._lines.text_of):
            out[filled[text]] = at
            filled[text] += 1
        return out

    def idf(self, term: str) -> float:
        weight = self._idf.get(term)
        if weight is None:
            texts = self.texts(term)
            spread, repeats = self._spread, self._lines.repeats
            copies = sum(spread[t] + repeats.get(t, 0) for t in texts)
            weight = math.log(1 + self.total / copies) if texts else 0.0
            self._idf[term] = weight
        return weight

    def sentence(self, at: int) -> Parsed:
        """Sentence `at`, parsed when first asked for (once per text)."""
        text = self._lines.text_of[at]
        found = self._parsed.get(text)
        if found is None:
            lines = self._lines
            found = self._parsed[text] = parse(lines.lines[text], lines.numbers[text])
        return found

    def place(self, at: int) -> Place:
        lines = self._lines
        owner = lines.owner_of[at]
        item = bisect.bisect_right(lines.item_starts, at) - 1
        return item, lines.objects.record(owner) if owner >= 0 else None

    def before(self, at: int) -> tuple[int, ...]:
        """The sentence read just before sentence `at`'s first copy, if any: a fact's
        sentence or this one must mention the claim's names (where "It" is introduced)."""
        found = self._lines.before[at]
        return (found,) if found >= 0 else ()

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
        lines = self._lines
        owner = lines.owner_of[at]
        if owner < 0:
            return (at,), self.sentence(at).terms
        found = self._records.get(owner)
        if found is None:
            span = range(lines.object_first[owner], lines.object_end[owner])
            ids = tuple(i for i in span if lines.owner_of[i] == owner)
            terms = frozenset().union(*(self.sentence(i).terms for i in ids))
            found = self._records[owner] = (ids, terms)
        return found

    def field(self, text: str) -> str | None:
        """`text` as the field and value of its first JSON leaf (`result.eta: 2026-11-24`),
        as a reader finds it in the tool result; None when no JSON item holds it."""
        lines = self._lines
        number = lines.texts.get(text, -1)
        owner = lines.field_owner[number] if number >= 0 else -1
        if owner < 0:
            return None
        return self._field(number, owner, lines.field_step[number])

    def field_at(self, at: int) -> str | None:
        """Sentence `at` as the field and value of its own JSON leaf, in its own record
        (`result.orders[8].status: processing`, where `field` would quote the first order
        with that status); None in prose."""
        lines = self._lines
        owner = lines.owner_of[at]
        if owner < 0:
            return None
        text = lines.text_of[at]
        return self._field(text, owner, lines.step_of.get(at, lines.field_step[text]))

    def _field(self, text: int, owner: int, step: Step) -> str:
        sentence = self._lines.field_value[text]
        keys = self._lines.objects.field(owner, step)
        return f"{keys}: {sentence}" if keys else sentence


_cache: RecentValues[Prepared] = RecentValues(entries=CACHE_ENTRIES, size=CACHE_CHARS)


def prepare(context: Sequence[str]) -> Prepared:
    """The prepared form of `context`, from the cache when the same text was prepared lately."""
    items = [item if isinstance(item, str) else str(item) for item in context]
    digest = hashlib.blake2b(digest_size=16)
    for item in items:
        data = item.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    key = digest.digest()
    prepared = _cache.get(key)
    if prepared is None:
        prepared = Prepared(items)
        _cache.put(key, prepared, sum(len(item) for item in items))
    return prepared
