"""The coverage ledger: every scorer run offered to the pipeline, counted once by how it ended.

For each scorer, the outcomes add up to the generations offered to it: `sampled_out` (its
sampling rate did not pick the trace), `filtered` (the evals filter vetoed it), `over_budget`
(reserved: a spend budget refused it), `dropped` (no room in a queue, or too old), `scored`,
`no_context` (nothing to judge against), `undecided` (judged, but the judge could not tell
pass from fail: the local judge's answer relevancy) and `failed`. Each is counted where the pipeline
decides it: choose (sampling, filter), the queues (drops), evaluate (a final result), the
runner (a run that ended before its scorer could return a result).

Counts are kept here and read by an observable counter when metrics are collected: the
decisions before the queue are on the caller's path, where a synchronous counter's `add`
would cost several times what sampling a generation out costs. One ledger per meter
provider, because a provider keeps the first callback registered under a name.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from typing import Final

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from agentscore._runtime.hooks import after_fork_in_child
from agentscore.telemetry import semconv

__all__ = [
    "ABANDONED",
    "DROPPED",
    "FAILED",
    "FILTERED",
    "NO_CONTEXT",
    "OUTCOMES",
    "OVER_BUDGET",
    "RUNS_METRIC",
    "SAMPLED_OUT",
    "SCORED",
    "UNDECIDED",
    "Ledger",
    "ledger_for",
]

RUNS_METRIC: Final = "agentscore.evaluation.runs"
SAMPLED_OUT: Final = "sampled_out"
FILTERED: Final = "filtered"
OVER_BUDGET: Final = "over_budget"
DROPPED: Final = "dropped"
SCORED: Final = "scored"
NO_CONTEXT: Final = "no_context"
UNDECIDED: Final = "undecided"
FAILED: Final = "failed"
# The outcomes of one scorer run: each run offered to a scorer ends as exactly one of them.
OUTCOMES: Final = (
    SAMPLED_OUT,
    FILTERED,
    OVER_BUDGET,
    DROPPED,
    SCORED,
    NO_CONTEXT,
    UNDECIDED,
    FAILED,
)
# A generation whose stream was left before it completed: never offered to a scorer, so it
# is counted per agent, without a scorer, and is not one of OUTCOMES.
ABANDONED: Final = "abandoned"

# (outcome, scorer id, agent name, label); "" where there is none.
_Key = tuple[str, str, str, str]


class Ledger:
    """Counts of scorer runs by outcome; thread-safe, O(1) a count."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[_Key, int] = {}

    def add(
        self,
        outcome: str,
        scorer_ids: Iterable[str],
        agent_name: str | None = None,
        label: str | None = None,
    ) -> None:
        """One run of each scorer in `scorer_ids` ended as `outcome`."""
        agent, tag = agent_name or "", label or ""
        with self._lock:
            counts = self._counts
            for scorer_id in scorer_ids:
                key = (outcome, scorer_id, agent, tag)
                counts[key] = counts.get(key, 0) + 1

    def counts(self) -> dict[_Key, int]:
        with self._lock:
            return dict(self._counts)

    def observe(self, options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(count, _attributes(*key)) for key, count in sorted(self.counts().items())
        ]

    def _reset(self) -> None:
        # A forked child counts its own runs: the parent's counts are the parent's to report.
        self._lock = threading.Lock()
        self._counts = {}


def _attributes(outcome: str, scorer_id: str, agent: str, label: str) -> dict[str, str]:
    attributes = {semconv.EVALUATION_OUTCOME: outcome}
    if scorer_id:
        attributes[semconv.EVALUATION_NAME] = scorer_id
    if agent:
        attributes[semconv.AGENT_NAME] = agent
    if label:
        attributes[semconv.EVALUATION_SCORE_LABEL] = label
    return attributes


_ledgers: weakref.WeakKeyDictionary[MeterProvider, Ledger] = weakref.WeakKeyDictionary()
_global: Ledger | None = None
_lock = threading.Lock()


def ledger_for(meter_provider: MeterProvider | None, scope: str) -> Ledger:
    """The ledger of `meter_provider` (None: the global one), its counter registered once."""
    global _global
    with _lock:
        ledger = _global if meter_provider is None else _ledgers.get(meter_provider)
        if ledger is not None:
            return ledger
        ledger = Ledger()
        if meter_provider is None:
            _global = ledger
        else:
            _ledgers[meter_provider] = ledger
    metrics.get_meter(scope, meter_provider=meter_provider).create_observable_counter(
        RUNS_METRIC,
        [ledger.observe],
        unit="{run}",
        description="Scorer runs by outcome: sampled_out, filtered, over_budget, dropped, "
        "scored, no_context, undecided, failed (they add up to the runs offered to each scorer); "
        "abandoned streams by agent",
    )
    return ledger


def _reset_in_child() -> None:
    for ledger in [_global, *_ledgers.values()]:
        if ledger is not None:
            ledger._reset()


after_fork_in_child(_reset_in_child)
