"""Which of a trace's results its trace-level score shows: the worst verdict, latest among
equals.

A trace can hold several generations (an agent called twice in one request, a retry), each
scored on its own, while a backend's trace-level score (a Phoenix trace annotation, a Langfuse
trace score) keeps one value per scorer and trace: each post replaces the last. So a trace
shows, per scorer, its most severe result: a generation that failed its threshold over one
that passed, a score over a label alone (no_claims, no_context), any verdict over a scoring
failure; among equals, the latest. A trace list is where one looks for bad traces, and a
failing generation must not be hidden by a later good one.

What was shown is remembered in process, for the latest `size` pairs of trace and scorer: a
result for a trace forgotten since (or scored by another process, or before a restart)
replaces what that trace shows.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from agentscore.result import ScoreResult, ScoreStatus

__all__ = ["TraceVerdicts", "severity"]


def severity(result: ScoreResult) -> int:
    """Lower is more severe: failed its threshold, passed, a label alone, scoring failed."""
    if result.status is ScoreStatus.SCORED:
        return 0 if result.passed is False else 1
    if result.status in (ScoreStatus.NO_CLAIMS, ScoreStatus.NO_CONTEXT):
        return 2
    return 3


class TraceVerdicts:
    """Per trace and scorer, the severity of the result its trace-level score shows."""

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self._shown: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._lock = threading.Lock()

    def replaces(self, result: ScoreResult) -> bool:
        """Whether `result` becomes what its trace shows (and is remembered as such)."""
        if not result.trace_id:
            return False
        key = (result.trace_id, result.scorer_id)
        rank = severity(result)
        with self._lock:
            shown = self._shown.get(key)
            if shown is not None and rank > shown:
                return False
            self._shown[key] = rank
            self._shown.move_to_end(key)
            if len(self._shown) > self.size:
                self._shown.popitem(last=False)
            return True
