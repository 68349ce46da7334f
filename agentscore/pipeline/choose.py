"""Which scorers run on a generation: sampling on the trace id, then the user's filter.

Sampling is a pure function of the trace id (cheap, decided before any message is read);
the filter only ever sees runs sampling kept. An unreadable run skips the filter: it must
surface as a failed result, not vanish.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import structlog

from agentscore._runtime.callbacks import call_user
from agentscore.pipeline.sampling import sample_point, sampled
from agentscore.run import ScorerRun
from agentscore.scorers.base import Scorer

__all__ = ["RunFilter", "SampledEntry", "accepts", "accepts_async", "sampled_scorers"]

_log = structlog.get_logger("agentscore.pipeline")

RunFilter = Callable[[ScorerRun], bool]


class SampledEntry(Protocol):
    @property
    def scorer(self) -> Scorer: ...

    @property
    def sampling(self) -> float: ...


def sampled_scorers(
    entries: Sequence[SampledEntry], trace_id: str | None, run_id: str
) -> list[Scorer]:
    """The scorers whose sampling rate picks this trace (or this run, when untraced)."""
    if not entries:
        return []
    point = sample_point(trace_id, run_id)
    return [entry.scorer for entry in entries if sampled(entry.sampling, point)]


def accepts(filter_: RunFilter | None, run: ScorerRun) -> bool:
    """The filter's verdict on a sampled run; a filter that raises skips the run (logged)."""
    if filter_ is None or run.read_error is not None:
        return True
    try:
        return bool(filter_(run))
    except Exception as exc:  # a broken filter must not break the caller
        _log.error("evals_filter_failed", error_type=type(exc).__name__)
        return False


async def accepts_async(filter_: RunFilter | None, run: ScorerRun) -> bool:
    """`accepts` off the caller's loop: a sync filter runs in a worker thread."""
    if filter_ is None or run.read_error is not None:
        return True
    try:
        return bool(await call_user(filter_, run))
    except Exception as exc:
        _log.error("evals_filter_failed", error_type=type(exc).__name__)
        return False
