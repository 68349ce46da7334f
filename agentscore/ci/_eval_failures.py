"""Judge failures during `agentscore eval`: counted by type, and a circuit breaker.

One line per error type replaces one warning per record and scorer; the breaker stops a run
whose judge keeps failing the same way, instead of retrying every remaining record.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

__all__ = ["Breaker", "FailureTally", "JudgeKeepsFailing"]

# Failures that say nothing about the record and will hit the next one too. Auth is not
# transient, but it does not heal during a run either.
_RUN_WIDE = frozenset(
    {
        "JudgeConnectionError",
        "JudgeTimeoutError",
        "JudgeRateLimitError",
        "JudgeServerError",
        "JudgeResponseError",
        "JudgeAuthError",
    }
)


@dataclass(slots=True)
class FailureTally:
    """Failed scores by error type, each with its first example."""

    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, error_type: str, where: str, message: str) -> None:
        self.counts[error_type] += 1
        self.examples.setdefault(error_type, f"{where}: {message}")

    def lines(self) -> list[str]:
        return [
            f"{count} failed with {error_type} (first: {self.examples[error_type]})"
            for error_type, count in self.counts.most_common()
        ]


class JudgeKeepsFailing(Exception):
    """Raised from the result callback to stop the run; carries what tripped the breaker."""

    def __init__(self, error_type: str, count: int, example: str) -> None:
        super().__init__(f"{count} judge calls in a row failed with {error_type}")
        self.error_type = error_type
        self.count = count
        self.example = example


class Breaker:
    """Trips after `limit` consecutive scores failed with the same run-wide error type; any
    other outcome starts the count again. A limit of 0 never trips."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._type: str | None = None
        self._count = 0
        self._first = ""

    def observe(self, error_type: str | None, example: str) -> None:
        if error_type is None or error_type not in _RUN_WIDE:
            self._type, self._count = None, 0
            return
        if error_type != self._type:
            self._type, self._count, self._first = error_type, 0, example
        self._count += 1
        if self._limit and self._count >= self._limit:
            raise JudgeKeepsFailing(error_type, self._count, self._first)
