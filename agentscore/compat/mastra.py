"""Mastra's older metric API: `FaithfulnessMetric(model, context=[...]).measure(input, output)`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from pydantic import BaseModel, Field

from agentscore.judges.resolve import JudgeLike
from agentscore.result import ScoreResult
from agentscore.run import ScorerRun
from agentscore.scorers.faithfulness import create_faithfulness_scorer
from agentscore.scorers.options import ScorerOptions

__all__ = ["FaithfulnessMetric", "MetricResult"]


class MetricResult(BaseModel):
    """`score` plus `info.reason`, as the older API returned; `result` is the full result."""

    score: float | None
    info: dict[str, Any] = Field(default_factory=dict)
    result: ScoreResult


class FaithfulnessMetric:
    """`scale`, Mastra's one option, and the other `ScorerOptions` under their own names."""

    def __init__(
        self, model: JudgeLike = None, *, context: Sequence[str], **options: Unpack[ScorerOptions]
    ) -> None:
        self._scorer = create_faithfulness_scorer(model, context=context, **options)

    async def ameasure(self, input: str, output: str) -> MetricResult:
        result = await self._scorer.run(ScorerRun(input=input, output=output))
        return MetricResult(score=result.score, info={"reason": result.reason}, result=result)

    def measure(self, input: str, output: str) -> MetricResult:
        result = self._scorer.run_sync(ScorerRun(input=input, output=output))
        return MetricResult(score=result.score, info={"reason": result.reason}, result=result)
