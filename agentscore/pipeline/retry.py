"""When a run whose judge failed for a passing reason is tried again.

A transient failure (judge unreachable, timing out, rate-limiting, answering 5xx) says nothing
about the answer: turning it into a failed score would lose the evaluation for the length of
an outage. It is retried with exponential backoff instead, for as long as the placement allows
(a window in process, where memory holds it; `--max-age` in the service, where disk does).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from agentscore._options import check_number

__all__ = ["RetryPolicy"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`first_delay` doubles per attempt up to `max_delay` (less up to a quarter of jitter, so
    retries after one outage do not arrive together); no retry starts later than `window`
    seconds after the first attempt (None: no bound; 0: never retry)."""

    first_delay: float = 1.0
    max_delay: float = 30.0
    window: float | None = 60.0

    def __post_init__(self) -> None:
        check_number("retry first_delay", self.first_delay, low=0)
        check_number("retry max_delay", self.max_delay, low=0)
        if self.window is not None:
            check_number("retry window", self.window, low=0)

    def delay(self, attempts: int) -> float:
        """Seconds to wait after the `attempts`-th failed attempt (1 for the first)."""
        base = min(self.first_delay * 2.0 ** max(0, attempts - 1), self.max_delay)
        return base * (1.0 - 0.25 * random.random())

    def allows(self, elapsed: float, delay: float) -> bool:
        """May a run first tried `elapsed` seconds ago be tried again after `delay` more?"""
        return self.window is None or elapsed + delay <= self.window
