"""What keeps the service from doing its work right now, for /healthz.

A passing outage (the judge unreachable, the backend refusing exports, the disk full) delays
work without losing it, so the service stays up and says `degraded` with the reason and since
when, until the next success clears it.
"""

from __future__ import annotations

import threading
import time
from typing import Literal

__all__ = ["Problem", "ServiceHealth"]

Problem = Literal["judge_unavailable", "export_failing", "disk_full"]


class ServiceHealth:
    """Thread-safe: the worker reports, the HTTP side reads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since: dict[Problem, tuple[float, str]] = {}

    def failing(self, problem: Problem, detail: str) -> None:
        """`problem` is happening (`detail`: an error type, never a message); the first
        report of a run of failures sets the time."""
        with self._lock:
            since = self._since.get(problem, (time.time(), detail))[0]
            self._since[problem] = (since, detail)

    def recovered(self, problem: Problem) -> None:
        with self._lock:
            self._since.pop(problem, None)

    def snapshot(self) -> dict[str, dict[str, object]]:
        """Each current problem with `since` (Unix time) and `detail`."""
        with self._lock:
            return {
                problem: {"since": round(since, 3), "detail": detail}
                for problem, (since, detail) in sorted(self._since.items())
            }
