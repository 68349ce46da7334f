"""Which scorers run on a generation: sampling on the trace id, then the user's filter.

Sampling is a pure function of the trace id (cheap, decided before any message is read);
the filter only ever sees runs sampling kept. An unreadable run skips the filter: it must
surface as a failed result, not vanish. Last, a spend budget whose window is spent keeps the
run from the scorers whose judge has a price (`affordable`). Given a ledger, each decision is
counted there, per scorer: `sampled_out` for the scorers sampling skipped, `filtered` for
those the filter vetoed, `over_budget` for those the spend budget held back
(agentscore.telemetry.ledger).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import structlog

from agentscore._runtime.callbacks import call_user
from agentscore.pipeline.sampling import sample_point, sampled
from agentscore.run import ScorerRun
from agentscore.scorers.base import Scorer
from agentscore.telemetry.ledger import FILTERED, OVER_BUDGET, SAMPLED_OUT, Ledger
from agentscore.telemetry.spend import SpendBudget, costs_money
from agentscore.usage import Price

__all__ = [
    "RunFilter",
    "SampledEntry",
    "accepts",
    "accepts_async",
    "affordable",
    "sampled_scorers",
]

_log = structlog.get_logger("agentscore.pipeline")

RunFilter = Callable[[ScorerRun], bool]


class SampledEntry(Protocol):
    @property
    def scorer(self) -> Scorer: ...

    @property
    def sampling(self) -> float: ...


def sampled_scorers(
    entries: Sequence[SampledEntry],
    trace_id: str | None,
    run_id: str,
    ledger: Ledger | None = None,
    agent_name: str | None = None,
) -> list[Scorer]:
    """The scorers whose sampling rate picks this trace (or this run, when untraced); the
    others counted `sampled_out` in `ledger`."""
    if not entries:
        return []
    point = sample_point(trace_id, run_id)
    chosen = [entry.scorer for entry in entries if sampled(entry.sampling, point)]
    if ledger is not None and len(chosen) < len(entries):
        skipped = (e.scorer.id for e in entries if not sampled(e.sampling, point))
        ledger.add(SAMPLED_OUT, skipped, agent_name)
    return chosen


def accepts(
    filter_: RunFilter | None,
    run: ScorerRun,
    ledger: Ledger | None = None,
    chosen: Sequence[Scorer] = (),
) -> bool:
    """The filter's verdict on a sampled run; a filter that raises skips the run (logged).
    A vetoed run is counted `filtered` in `ledger` for each of the `chosen` scorers."""
    if filter_ is None or run.read_error is not None:
        return True
    try:
        accepted = bool(filter_(run))
    except Exception as exc:  # a broken filter must not break the caller
        _log.error("evals_filter_failed", error_type=type(exc).__name__)
        accepted = False
    return accepted or _vetoed(ledger, chosen, run)


async def accepts_async(
    filter_: RunFilter | None,
    run: ScorerRun,
    ledger: Ledger | None = None,
    chosen: Sequence[Scorer] = (),
) -> bool:
    """`accepts` off the caller's loop: a sync filter runs in a worker thread."""
    if filter_ is None or run.read_error is not None:
        return True
    try:
        accepted = bool(await call_user(filter_, run))
    except Exception as exc:
        _log.error("evals_filter_failed", error_type=type(exc).__name__)
        accepted = False
    return accepted or _vetoed(ledger, chosen, run)


def _vetoed(ledger: Ledger | None, chosen: Sequence[Scorer], run: ScorerRun) -> bool:
    if ledger is not None:
        ledger.add(FILTERED, (scorer.id for scorer in chosen), run.agent_name)
    return False


def affordable(
    chosen: Sequence[Scorer],
    spend: SpendBudget | None,
    prices: Mapping[str, Price],
    ledger: Ledger | None = None,
    agent_name: str | None = None,
) -> list[Scorer]:
    """The `chosen` scorers the spend budget lets judge a run: all of them while no window's
    budget is spent, else those whose judge has no price (they cost nothing); the others
    counted `over_budget` in `ledger`."""
    if spend is None or not chosen or not spend.reached():
        return list(chosen)
    kept = [scorer for scorer in chosen if not costs_money(scorer.judge.model_name, prices)]
    if ledger is not None and len(kept) < len(chosen):
        ledger.add(OVER_BUDGET, (s.id for s in chosen if s not in kept), agent_name)
    return kept
