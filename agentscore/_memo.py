"""What a run's scorers derive from its context, kept for the run's other scorers.

Every scorer of a run asks for the same derived context (its tool results as chunks, the
local judge's prepared form): the first computes it, the others find it here. Values are
kept by key, most recently used last, within a bound on their number and on their total
size (in the caller's unit: characters, bytes); a value over the size bound is not kept,
since it would evict every other one. The judge's reply cache is one too. Thread-safe
(scorers run on several loops), and usable in a forked child (a fork while another thread
held the lock would leave the child's copy held).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Any, Generic, TypeVar

__all__ = ["RecentValues"]

V = TypeVar("V")

_instances: weakref.WeakSet[RecentValues[Any]] = weakref.WeakSet()


class RecentValues(Generic[V]):
    def __init__(self, *, entries: int, size: int) -> None:
        self.entries = entries
        self.size = size
        self._values: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()
        _instances.add(self)

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            hit = self._values.get(key)
            if hit is None:
                return None
            self._values.move_to_end(key)
            return hit[0]

    def put(self, key: Hashable, value: V, size: int) -> None:
        """Keeps `value` under `key` (replacing what was kept there), evicting the least
        recently used values while a bound is passed."""
        with self._lock:
            previous = self._values.pop(key, None)
            if previous is not None:
                self._total -= previous[1]
            if size > self.size:
                return
            self._values[key] = (value, size)
            self._total += size
            while len(self._values) > self.entries or self._total > self.size:
                _, (_, evicted) = self._values.popitem(last=False)
                self._total -= evicted

    def discard(self, keys: Iterable[Hashable]) -> None:
        with self._lock:
            for key in keys:
                dropped = self._values.pop(key, None)
                if dropped is not None:
                    self._total -= dropped[1]

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._total = 0

    def __len__(self) -> int:
        return len(self._values)

    @property
    def total_size(self) -> int:
        return self._total

    def values(self) -> list[V]:
        with self._lock:
            return [value for value, _ in self._values.values()]

    def _after_fork(self) -> None:
        self._lock = threading.Lock()


def _after_fork_in_child() -> None:
    for instance in list(_instances):
        instance._after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)
