"""What happens to a score job a runner cannot take: counted in telemetry, told to the
user's `on_drop`, and logged at a limited rate (a full queue drops thousands a second)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from agentscore.telemetry.evaluations import record_dropped

if TYPE_CHECKING:
    from agentscore.pipeline.runner import ScoreJob

__all__ = ["DropHandler", "DropReporter"]

_log = structlog.get_logger("agentscore.runner")

DropHandler = Callable[["ScoreJob", str], object]


class DropReporter:
    """Reports dropped jobs; thread-safe."""

    def __init__(self, on_drop: DropHandler | None, *, log_interval: float, max_queue: int) -> None:
        self._on_drop = on_drop
        self._log_interval = log_interval
        self._max_queue = max_queue
        self._lock = threading.Lock()
        self._unlogged = 0
        self._last_log = 0.0

    def reset(self) -> None:
        """A forked child's start: its copy of the lock may be held by a parent's thread."""
        self._lock = threading.Lock()
        self._unlogged = 0

    def report(self, job: ScoreJob, reason: str) -> None:
        if job.telemetry is not None:
            record_dropped(job.telemetry, job.scorer.id, job.run.agent_name)
        if self._on_drop is not None:
            try:
                self._on_drop(job, reason)
            except Exception as exc:
                _log.error("on_drop_failed", error_type=type(exc).__name__)
        now = time.monotonic()
        with self._lock:
            self._unlogged += 1
            if now - self._last_log < self._log_interval:
                return
            count, self._unlogged, self._last_log = self._unlogged, 0, now
        _log.warning(
            "scorer_runs_dropped",
            reason=reason,
            count=count,
            max_queue=self._max_queue,
            scorer_id=job.scorer.id,
        )
