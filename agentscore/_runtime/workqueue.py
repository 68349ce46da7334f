"""The bounded hand-over between a producer that must never wait (an agent's request, a span's
end) and the one consumer that does the work (the runner's dispatcher, the span reader).

`put` is O(1), never blocks and refuses what does not fit; `take` hands items over;
`finished` counts them done; `join` waits for what was put before it (a flush, for a consumer
that finishes in order) and `wait_idle` until nothing is left (one that does not).
The consumer is told of new work through `wake` (an event loop's consumer) or waits in
`wait_for_items` (a thread's consumer). The durable counterpart, for work that must outlive
the process, is the service's SQLite queue.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from enum import Enum
from typing import Generic, TypeVar

__all__ = ["Refused", "WorkQueue"]

T = TypeVar("T")


class Refused(Enum):
    """Why `put` refused an item."""

    FULL = "queue_full"
    CLOSED = "shutdown"


class WorkQueue(Generic[T]):
    """Thread-safe. `wake()` is called when an item arrives while the consumer, having found
    the queue empty in `take`, may be asleep; it must be quick and must not block."""

    def __init__(self, max_items: int, *, wake: Callable[[], object] | None = None) -> None:
        self.max_items = max_items
        self._wake = wake
        self.reset()

    def reset(self) -> None:
        """Empty and open; also the state of a forked child (the parent's items are the
        parent's to finish)."""
        # Reentrant: an owner may hold it around `put` or `finished` to keep its own counts
        # in step with the queue's.
        self.lock = threading.RLock()
        self._changed = threading.Condition(self.lock)
        self._items: deque[T] = deque()
        self._unfinished = 0
        self._put = self._finished = 0
        self._closed = False
        self._consumer_idle = False

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def unfinished(self) -> int:
        """Items put and not yet finished: queued or being worked on."""
        return self._unfinished

    def __len__(self) -> int:
        return len(self._items)

    def put(self, item: T) -> Refused | None:
        """Queue `item`; the reason when it was refused. Never blocks."""
        with self.lock:
            if self._closed:
                return Refused.CLOSED
            if len(self._items) >= self.max_items:
                return Refused.FULL
            self._items.append(item)
            self._unfinished += 1
            self._put += 1
            wake, self._consumer_idle = self._consumer_idle, False
            self._changed.notify_all()
            if wake and self._wake is not None:
                self._wake()
        return None

    def take(self, limit: int | None = None) -> list[T]:
        """Up to `limit` items (all when None), oldest first; [] marks the consumer idle, so
        the next `put` wakes it."""
        with self.lock:
            count = len(self._items) if limit is None else min(limit, len(self._items))
            taken = [self._items.popleft() for _ in range(count)]
            self._consumer_idle = not taken
            return taken

    def wait_for_items(self, timeout: float) -> None:
        """Block (a thread's consumer) until an item is queued, the queue closes, or
        `timeout` seconds pass."""
        with self._changed:
            if not self._items and not self._closed:
                self._changed.wait(timeout)

    def finished(self, count: int = 1) -> None:
        with self._changed:
            self._unfinished -= count
            self._finished += count
            self._changed.notify_all()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until as many items finished as were put before this call (items put later
        do not hold it); False if `timeout` ran out first."""
        with self._changed:
            target = self._put
            return self._changed.wait_for(lambda: self._finished >= target, timeout)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until nothing is queued or being worked on; False if `timeout` ran out."""
        with self._changed:
            return self._changed.wait_for(lambda: self._unfinished <= 0, timeout)

    def close(self) -> None:
        """Refuse new items; those queued are still handed over."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
