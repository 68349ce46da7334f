"""One scorer on one run, under its evaluation span."""

from __future__ import annotations

from collections.abc import Mapping

from agentscore._runtime.courtesy import give_way
from agentscore.judges.base import Judge
from agentscore.result import ScoreResult
from agentscore.run import ScorerRun
from agentscore.scorers.attempt import Attempt, trying
from agentscore.scorers.base import Scorer
from agentscore.telemetry.core import Telemetry, prices_from_env, scoring_scope
from agentscore.telemetry.evaluations import (
    emit_result,
    evaluation_span,
    record_attempt,
    record_delayed,
    record_usage,
)
from agentscore.usage import Price, judge_cost

__all__ = ["evaluate", "priced", "replay"]


async def evaluate(
    telemetry: Telemetry | None,
    scorer: Scorer,
    run: ScorerRun,
    *,
    timeout: float | None,
    may_retry: bool = False,
    attempt: int = 1,
    judge: Judge | None = None,
) -> ScoreResult:
    """Run `scorer` on `run` (its `attempt`-th try) and emit the result (span, log record,
    metrics).

    With `may_retry`, a result that failed for a passing reason is only an attempt: nothing
    says failed (its span says delayed, with its number and cause; its scorer logs
    `scorer_attempt_delayed`), and no log record or outcome counts it, because the caller
    will try again (what its judge spent is counted all the same). Without `telemetry` (a
    bare runner job, a batch run) nothing is emitted, and the prices come from
    AGENTSCORE_JUDGE_PRICES. `judge` replaces the scorer's own for this run (`Together`
    passes one that shares the generation's request).
    """
    with trying(Attempt(attempt, may_retry)):
        if telemetry is None:
            result = await scorer.run(run, timeout=timeout, judge=judge)
            return priced(result, prices_from_env())
        with scoring_scope(), evaluation_span(telemetry, scorer.id, run) as span:
            result = priced(await scorer.run(run, timeout=timeout, judge=judge), telemetry.prices)
            if telemetry.spend is not None:  # every attempt's cost: it was spent, final or not
                telemetry.spend.charge(result.cost)
            give_way()
            final = not (may_retry and result.retryable)
            attributes = record_attempt(span, telemetry, result, final=final, attempt=attempt)
    record_usage(telemetry, result)
    if final:
        emit_result(telemetry, result, run, attributes)
    else:
        record_delayed(telemetry, result)
    return result


def priced(result: ScoreResult, prices: Mapping[str, Price]) -> ScoreResult:
    """`result` with its judge's cost at `prices`; itself when its model has no price."""
    cost = judge_cost(result.judge_usage, result.judge_model, prices)
    return result if cost is None else result.model_copy(update={"cost": cost})


def replay(
    telemetry: Telemetry,
    scorer_id: str,
    result: ScoreResult,
    run: ScorerRun,
    *,
    counted: bool = True,
) -> None:
    """Emit a result computed earlier (stored by a durable queue) without judging again. Its
    judge's spending is not counted again: no request is sent now. `counted=False` leaves it
    out of the outcome metrics (the caller counted it otherwise)."""
    with evaluation_span(telemetry, scorer_id, run) as span:
        attributes = record_attempt(span, telemetry, result, final=True)
    emit_result(telemetry, result, run, attributes, counted=counted)
