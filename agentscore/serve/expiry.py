"""Jobs that outlived `--max-age` without being judged.

Age only ends work that was never judged: a job whose result is stored was paid for, and is
exported whatever its age. An expired job ends as a failed result whose error type is
`ExpiredError`, exported like any result (an evaluation span and log record under the
generation's span) and logged with its trace and span ids, so that a team can find the
generation that went unscored. It counts as dropped, not failed: nothing was judged.
"""

from __future__ import annotations

import time

import structlog

from agentscore.errors import AgentScoreError
from agentscore.result import ScoreError, ScoreResult, ScoreStatus
from agentscore.serve.queue import Job

__all__ = ["ExpiredError", "expired_result", "is_expired", "log_expired"]

_log = structlog.get_logger("agentscore.serve")


class ExpiredError(AgentScoreError):
    """A queued job was not judged within the service's `--max-age`."""


def expired_result(job: Job, max_age: float) -> ScoreResult:
    """The failed result that ends `job`; it carries the run's ids, not its messages (the
    job's row has them)."""
    run = job.run
    tries = "never tried" if job.attempts == 0 else f"{job.attempts} tries delayed"
    error = ExpiredError(f"not judged within --max-age ({max_age:g} s); {tries}")
    return ScoreResult(
        scorer_id=job.scorer_id,
        run_id=run.run_id,
        status=ScoreStatus.FAILED,
        error=ScoreError.of(error),
        trace_id=run.trace_id,
        span_id=run.span_id,
        response_id=run.response_id,
        agent_name=run.agent_name,
    )


def is_expired(result: ScoreResult) -> bool:
    """True for the result `expired_result` made (also when read back from a job's row)."""
    return result.error is not None and result.error.type == ExpiredError.__name__


def log_expired(job: Job, max_age: float) -> None:
    trace_id, span_id, scorer_id = job.key
    _log.warning(
        "serve_job_expired",
        trace_id=trace_id,
        span_id=span_id,
        scorer_id=scorer_id,
        run_id=job.run.run_id,
        age_s=round(time.time() - job.created, 1),
        max_age_s=max_age,
        attempts=job.attempts,
    )
