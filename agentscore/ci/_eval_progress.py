"""Progress of `agentscore eval` on stderr: a bar on a terminal, plain lines elsewhere.

A CI log is not a terminal: a carriage-return bar there becomes one smeared line, so a
non-terminal gets a whole line every few seconds instead (done / total, rate, ETA).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]

_MIN_SHOWN = 20  # shorter runs finish before a progress line would help
_BAR_REFRESH = 0.2


class Progress:
    def __init__(self, total: int, *, every: float = 5.0, stream: TextIO | None = None) -> None:
        self.total = total
        self.done = 0
        self._stream = stream or sys.stderr
        self._terminal = self._stream.isatty()
        self._every = _BAR_REFRESH if self._terminal else every
        self._shown = total >= _MIN_SHOWN
        self._start = time.monotonic()
        self._last = self._start

    def advance(self) -> None:
        self.done += 1
        now = time.monotonic()
        if self._shown and now - self._last >= self._every and self.done < self.total:
            self._last = now
            self._show(now)

    def close(self) -> None:
        """The last state, on a line of its own."""
        if not self._shown or not self.done:
            return
        self._show(time.monotonic())
        if self._terminal:
            print(file=self._stream)

    def _show(self, now: float) -> None:
        elapsed = max(now - self._start, 1e-9)
        rate = self.done / elapsed
        if self.done >= self.total:
            timing = f"{rate:.1f} records/s, took {_duration(elapsed)}"
        else:
            timing = f"{rate:.1f} records/s, ETA {_duration((self.total - self.done) / rate)}"
        counts = f"{self.done}/{self.total}"
        if self._terminal:
            filled = int(30 * self.done / self.total)
            bar = "#" * filled + "-" * (30 - filled)
            print(f"\rscoring [{bar}] {counts} {timing}", end="", file=self._stream, flush=True)
        else:
            share = f"{self.done / self.total:.0%}"
            print(f"scoring: {counts} records ({share}), {timing}", file=self._stream, flush=True)


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
