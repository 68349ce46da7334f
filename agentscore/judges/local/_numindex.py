"""The context's numbers indexed by value, for the local judge.

A claim's number can only match context numbers close to it in value (or dates sharing its
month and day, or its year), so the candidates come from a sorted list and two maps instead
of a pass over every number in the context: a tool result with 100,000 numbers costs a
lookup per claim number, not 100,000 comparisons. The engine still decides each candidate
with its own comparison; this only has to return every number that comparison could accept.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Sequence
from operator import itemgetter

from agentscore.judges.local._numbers import Number

__all__ = ["NumberIndex"]

# Wider than every tolerance the engine applies to a plain number: half a unit when either
# side hedges or the claim rounds, and 10% of the context's value when hedged (at most
# 1/9 of the claim's).
_ABSOLUTE = 0.5
_RELATIVE = 0.12

Entry = tuple[Number, int]  # a context number and its sentence


class NumberIndex:
    def __init__(self, entries: Sequence[Entry]) -> None:
        # By value, then sentence: two stable sorts on plain keys, no key tuple per entry (a
        # large tool result has one per line, and each is garbage to collect).
        plain = [e for e in entries if _plain(e[0])]
        plain.sort(key=itemgetter(1))
        plain.sort(key=_value)
        self._values = [number.value for number, _ in plain]
        self._plain = plain
        self._by_day: dict[int, list[Entry]] = {}
        self._by_year: dict[int, list[Entry]] = {}
        # Ranges match any number inside them, so they are always candidates; they are rare.
        self._always: list[Entry] = []
        for entry in entries:
            number = entry[0]
            if number.kind == "date":
                self._by_day.setdefault(int(number.value) % 10000, []).append(entry)
                self._by_year.setdefault(int(number.value) // 10000, []).append(entry)
            elif not _plain(number):
                self._always.append(entry)

    def candidates(self, number: Number) -> Iterator[Entry]:
        """Every context number the engine might find equal to `number`, and more."""
        if number.kind == "date":
            yield from self._by_day.get(int(number.value) % 10000, ())
            return
        if number.kind == "year" and number.value.is_integer():
            yield from self._by_year.get(int(number.value), ())
        yield from self._always
        if not math.isfinite(number.value):
            yield from self._plain
            return
        yield from self._near(number.value)
        if number.high is not None and math.isfinite(number.high):
            yield from self._near(number.high)  # "450-550" restates 550

    def _near(self, value: float) -> Iterator[Entry]:
        radius = max(_ABSOLUTE, _RELATIVE * abs(value))
        start = bisect.bisect_left(self._values, value - radius)
        end = bisect.bisect_right(self._values, value + radius)
        yield from self._plain[start:end]


def _value(entry: Entry) -> float:
    return entry[0].value


def _plain(number: Number) -> bool:
    return number.kind != "date" and number.high is None and math.isfinite(number.value)
