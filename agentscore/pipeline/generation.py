"""One generation scored: the pipeline's composition, written once for every driver.

The scorers chosen for one generation share one judge request (`Together`: its LLM scorers on
the same judge ask once) -> each is evaluated under its evaluation span (`evaluate`) -> a try
that failed for a passing reason is tried again with backoff while the driver allows
(`retry`) -> the result goes to the sinks (`deliver`).

The thread runner, the service's worker and `agentscore eval` all score through
`score_generation`; what they differ in is a `Scoring`. The runner and the service run each
scorer of a generation as a job of its own (a slot each, counted each): the generation is made
once, where its scorers are chosen (`Evals` for the runner, a batch of due jobs in the
service), each job carries its shared request, and scores its scorer alone with it
(`generation.alone(scorer)`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import anyio
import structlog

from agentscore._runtime.courtesy import give_way
from agentscore.judges.base import Judge
from agentscore.pipeline.deliver import ScoreSink, deliver
from agentscore.pipeline.evaluate import evaluate
from agentscore.pipeline.retry import RetryPolicy
from agentscore.result import ScoreError, ScoreResult, ScoreStatus
from agentscore.run import ScorerRun
from agentscore.scorers.base import Scorer
from agentscore.scorers.together import Together
from agentscore.telemetry.core import Telemetry
from agentscore.telemetry.evaluations import record_outcome
from agentscore.telemetry.ledger import FAILED

__all__ = ["Backoff", "Generation", "Scoring", "failed_result", "score_generation"]

_log = structlog.get_logger("agentscore.runner")


@dataclass(frozen=True, slots=True)
class Generation:
    """The scorers chosen for one generation, and the judge request their LLM scorers share
    (None when no two of them ask the same judge). Make it with `Generation.of`."""

    scorers: tuple[Scorer, ...]
    shared: Together | None = None

    @classmethod
    def of(cls, scorers: Iterable[Scorer]) -> Generation:
        chosen = tuple(scorers)
        together = Together(chosen) if len(chosen) > 1 else None
        return cls(chosen, together if together is not None and together.sharing else None)

    def alone(self, scorer: Scorer) -> Generation:
        """`scorer` of this generation, scored as a job of its own: it still shares the
        generation's judge request with the others' jobs."""
        return Generation((scorer,), self.shared)


class Backoff(Protocol):
    """Where a run waits between its tries: the driver's, which may count the waits and end
    them (the runner: they count as delayed, and its shutdown ends them)."""

    @property
    def policy(self) -> RetryPolicy: ...

    def stopped(self) -> bool:
        """True once no run may wait any more: its next try is its last."""
        ...

    async def wait(self, delay: float) -> None: ...


@dataclass(frozen=True, slots=True)
class Scoring:
    """What the drivers differ in.

    `retry`: a `Backoff` tries a passing judge failure again in memory, within its policy's
    window; True makes one try whose passing failure is not final (its span says delayed, no
    record counts it: the driver tries again later, from disk); False makes one final try.
    `crash_fails`: an exception of agentscore's own (telemetry trouble, a broken scorer
    object) ends the run as its scorer's failed result; False lets it propagate, to a driver
    that keeps the run and tries it again (the service).
    `tried`: the run's tries before these (the service's, counted on the job's row), so
    each evaluation span numbers its attempt.
    """

    telemetry: Telemetry | None = None
    timeout: float | None = None
    retry: Backoff | bool = False
    sinks: tuple[ScoreSink | None, ...] = ()
    sink_timeout: float = 30.0
    crash_fails: bool = True
    tried: int = 0


async def score_generation(
    generation: Generation,
    run: ScorerRun,
    scoring: Scoring,
    *,
    read: Callable[[], ScorerRun] | None = None,
) -> list[ScoreResult]:
    """Score `run` with each scorer of `generation`; each result goes to `scoring.sinks` as
    it ends, and all come back in the scorers' order.

    `read`, when given, reads the run's messages at each try (until then `run` holds only its
    ids); a read that raises ends the run as failed. Never raises but for cancellation, and
    for crashes when `scoring.crash_fails` is False.
    """
    if generation.shared is None:
        return await _score_each(generation, run, scoring, read)
    # Started: the generation's shared request waits for these scorers past its window.
    with generation.shared.on_the_way(generation.scorers):
        return await _score_each(generation, run, scoring, read)


async def _score_each(
    generation: Generation,
    run: ScorerRun,
    scoring: Scoring,
    read: Callable[[], ScorerRun] | None,
) -> list[ScoreResult]:
    scorers = generation.scorers
    if len(scorers) == 1:  # a job of its own: no task group on the runner's path
        return [await _score(generation, scorers[0], run, read, scoring)]
    results: list[ScoreResult | None] = [None] * len(scorers)

    async def one(index: int, scorer: Scorer) -> None:
        results[index] = await _score(generation, scorer, run, read, scoring)

    async with anyio.create_task_group() as group:
        for index, scorer in enumerate(scorers):
            group.start_soon(one, index, scorer)
    return [result for result in results if result is not None]


async def _score(
    generation: Generation,
    scorer: Scorer,
    run: ScorerRun,
    read: Callable[[], ScorerRun] | None,
    scoring: Scoring,
) -> ScoreResult:
    try:
        result = await _until_final(generation, scorer, run, read, scoring)
    except Exception as exc:  # a broken scorer object: the run still ends, as failed
        if not scoring.crash_fails:
            raise
        # Delivered like any result: a sink waiting on this run hears that it ended.
        result = _crashed(scorer, run, exc, scoring)
    if scoring.sinks:
        give_way()
        try:
            await deliver(
                result, scoring.sinks, timeout=scoring.sink_timeout, telemetry=scoring.telemetry
            )
        except Exception as exc:  # even a broken sink list must not lose the result
            _log.error(
                "scorer_job_crashed", scorer=_scorer_name(scorer), error_type=type(exc).__name__
            )
    return result


def _crashed(scorer: Scorer, run: ScorerRun, exc: Exception, scoring: Scoring) -> ScoreResult:
    """The failed result of a run that ended without `evaluate` emitting it: counted `failed`
    in the ledger here, since nothing else counts it."""
    if scoring.telemetry is not None:
        record_outcome(scoring.telemetry, FAILED, _scorer_name(scorer), run.agent_name)
    return failed_result(scorer, run, exc)


async def _until_final(
    generation: Generation,
    scorer: Scorer,
    run: ScorerRun,
    read: Callable[[], ScorerRun] | None,
    scoring: Scoring,
) -> ScoreResult:
    """Tries until one is final: while the judge fails for a passing reason, again after a
    backoff, as long as the driver's `Backoff` allows (the run keeps its slot meanwhile:
    during an outage new work waits in the driver's bounded queue instead of failing)."""
    backoff = None if isinstance(scoring.retry, bool) else scoring.retry
    started = time.monotonic()
    attempts = 0
    while True:
        attempts += 1
        if backoff is None:
            delay, may_retry = 0.0, bool(scoring.retry)
        else:
            delay = backoff.policy.delay(attempts)
            may_retry = not backoff.stopped() and backoff.policy.allows(
                time.monotonic() - started, delay
            )
        try:
            if read is not None:
                run = read()
            result = await _attempt(
                generation, scorer, run, scoring, scoring.tried + attempts, may_retry
            )
        except Exception as exc:  # telemetry export trouble: the run ends, as failed
            if not scoring.crash_fails:
                raise
            return _crashed(scorer, run, exc, scoring)
        if backoff is None or not (may_retry and result.retryable):
            return result
        await backoff.wait(delay)


async def _attempt(
    generation: Generation,
    scorer: Scorer,
    run: ScorerRun,
    scoring: Scoring,
    number: int,
    may_retry: bool,
) -> ScoreResult:
    async def attempt(judge: Judge | None) -> ScoreResult:
        return await evaluate(
            scoring.telemetry,
            scorer,
            run,
            timeout=scoring.timeout,
            may_retry=may_retry,
            attempt=number,
            judge=judge,
        )

    # A retry finds the generation's shared request gone: it asks alone.
    if generation.shared is None:
        return await attempt(None)
    return await generation.shared.score(scorer, attempt)


def failed_result(scorer: Scorer, run: ScorerRun, exc: Exception) -> ScoreResult:
    """The scorer's own failed result for `run`; a bare one when even that raises (a scorer
    object broken enough), so that the run still ends and its sinks hear of it."""
    try:
        return scorer.failed_result(run, exc)
    except Exception as broken:
        _log.error(
            "scorer_job_crashed", scorer=_scorer_name(scorer), error_type=type(broken).__name__
        )
        return ScoreResult(
            scorer_id=_scorer_name(scorer),
            run_id=run.run_id,
            status=ScoreStatus.FAILED,
            error=ScoreError.of(exc),
        )


def _scorer_name(scorer: Scorer) -> str:
    return str(getattr(scorer, "id", type(scorer).__name__))
