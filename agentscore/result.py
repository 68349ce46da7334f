"""The one result type every scorer returns, successful or not."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentscore._redact import redact
from agentscore.errors import is_transient
from agentscore.messages import Message
from agentscore.usage import JudgeUsage

__all__ = ["ScoreError", "ScoreResult", "ScoreStatus"]


class ScoreStatus(StrEnum):
    SCORED = "scored"
    NO_CLAIMS = "no_claims"
    # The scorer needs context and the run gave none: nothing was judged, so no score.
    NO_CONTEXT = "no_context"
    # The judge could not tell items that decide pass or fail: no score, the reason says why.
    UNDECIDED = "undecided"
    FAILED = "failed"


class ScoreError(BaseModel):
    """Why a run failed: the exception class name and a message free of secrets.

    `transient`: the cause will likely pass (judge outage, rate limit, timeout), so the
    pipeline retries the run later before it lets this result stand.
    """

    model_config = ConfigDict(frozen=True)

    type: str
    message: str
    transient: bool = False

    @classmethod
    def of(cls, exc: BaseException) -> ScoreError:
        """`exc` described, its message redacted; never raises, whatever `exc` is."""
        try:
            message = redact(str(exc)) or repr(exc)
        except Exception:  # an exception whose __str__ raises: its type still says something
            message = "(its message could not be read)"
        return cls(type=type(exc).__name__, message=message, transient=is_transient(exc))


class ScoreResult(BaseModel):
    """Mastra's `.run()` fields in snake_case, plus pass/fail, status, error and judge cost.

    `score` is None when `status` is "failed", "no_context" or "undecided"; it is never NaN.
    `cost`: what the judge requests cost at the price set for `judge_model`
    (`Telemetry(prices=...)`, AGENTSCORE_JUDGE_PRICES), in that price's currency; None
    without a price, or when requests were sent and none reported its tokens.
    `conversation_id`: set on the result of a conversation scorer, the conversation it
    scored (a backend shows it on the session); None for a generation or a trace.
    """

    model_config = ConfigDict(frozen=True)

    scorer_id: str
    run_id: str
    status: ScoreStatus
    score: float | None = None
    passed: bool | None = None
    label: str | None = None
    reason: str | None = None
    error: ScoreError | None = None
    input: list[Message] = Field(default_factory=list)
    output: list[Message] = Field(default_factory=list)
    ground_truth: Any = None
    context: list[str] | None = None
    preprocess_step_result: Any = None
    preprocess_prompt: str | None = None
    analyze_step_result: Any = None
    analyze_prompt: str | None = None
    generate_reason_prompt: str | None = None
    judge_usage: JudgeUsage = Field(default_factory=JudgeUsage)
    judge_model: str | None = None
    cost: float | None = None
    trace_id: str | None = None
    span_id: str | None = None
    response_id: str | None = None
    agent_name: str | None = None
    conversation_id: str | None = None

    @property
    def failed(self) -> bool:
        return self.status is ScoreStatus.FAILED

    @property
    def retryable(self) -> bool:
        """Failed for a reason that will likely pass: worth scoring again later."""
        return self.error is not None and self.error.transient
