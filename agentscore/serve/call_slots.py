"""Call slots for the gRPC port: how many authenticated calls may be read or processed at once,
and when a caller refused for want of a slot should come back.

gRPC's own limit (`maximum_concurrent_rpcs`) counts every call, credentials or not, and
refuses without retry information, which the Collector reads as final. Here only calls that
passed the token check take a slot, and a refused caller is told when to come back: each
refusal is given the next turn in a line that moves at the pace calls have been finishing,
so a burst of refused exporters returns spread out instead of all at once (exporters honour
the delay exactly, without jitter of their own).
"""

from __future__ import annotations

import threading
import time

__all__ = ["CallSlots"]

# The shortest wait a refused caller is asked for, and the longest: past a minute an
# exporter's own timeout has usually run out, and then it drops what it was sending.
_MIN_DELAY = 0.5
_MAX_DELAY = 60.0
# Until a call has finished, a call is assumed to hold its slot this long (seconds).
_FIRST_GUESS = 0.1
# Weight of the latest call in the running mean of how long a slot is held.
_SMOOTHING = 0.1


class CallSlots:
    """Thread-safe; `take` is called on gRPC's polling thread, so it never waits."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._held = 0
        self._mean_hold = _FIRST_GUESS
        self._next_turn = 0.0

    def take(self) -> bool:
        with self._lock:
            if self._held >= self.limit:
                return False
            self._held += 1
            return True

    def give_back(self, held_for: float) -> None:
        with self._lock:
            self._held -= 1
            self._mean_hold += _SMOOTHING * (held_for - self._mean_hold)

    def retry_delay(self) -> float:
        """Seconds until a caller refused now should try again: its turn in line."""
        with self._lock:
            now = time.monotonic()
            between_turns = self._mean_hold / self.limit  # a slot frees this often
            turn = max(self._next_turn, now + _MIN_DELAY) + between_turns
            self._next_turn = min(turn, now + _MAX_DELAY)
            return self._next_turn - now
