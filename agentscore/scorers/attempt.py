"""Which try of its run a scoring is, so that a failure that will be tried again is not
reported as one.

The pipeline tries a run again when its judge failed for a passing reason (outage, 429,
timeout), while its driver allows (`agentscore.pipeline.retry`). It says so around each try
(`trying`); a scorer's failed result then logs `scorer_attempt_delayed` (info) instead of
`scorer_failed` (warning) for a passing failure that will be retried. Outside the pipeline
(`scorer.run` called directly) every try is the only one, and final.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["Attempt", "current_attempt", "trying"]


@dataclass(frozen=True, slots=True)
class Attempt:
    """`number`: 1 for a run's first try. `may_retry`: a passing failure of this try will be
    tried again, so it is not the run's result."""

    number: int = 1
    may_retry: bool = False


_FIRST = Attempt()
_attempt: ContextVar[Attempt] = ContextVar("agentscore_attempt", default=_FIRST)


def current_attempt() -> Attempt:
    return _attempt.get()


@contextmanager
def trying(attempt: Attempt) -> Iterator[None]:
    """Scoring in this context is `attempt` of its run."""
    token = _attempt.set(attempt)
    try:
        yield
    finally:
        _attempt.reset(token)
