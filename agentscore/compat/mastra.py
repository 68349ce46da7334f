"""Mastra's older metric API: `FaithfulnessMetric(model, context=[...]).measure(input, output)`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from agentscore.judges.resolve import JudgeLike
from agentscore.result import ScoreResult
from agentscore.run import ScorerRun
from agentscore.scorers.faithfulness import create_faithfulness_scorer

__all__ = ["FaithfulnessMetric", "MetricResult"]


class MetricResult(BaseModel):
    """`score` plus `info.reason`, as the older API returned; `result` is the full result."""

    score: float | None
    info: dict[str, Any] = Field(default_factory=dict)
    result: ScoreResult


class FaithfulnessMetric:
    def __init__(self, model: JudgeLike = None, *, context: Sequence[str], scale: float = 1.0):
        self._scorer = create_faithfulness_scorer(model, context=context, scale=scale)

    async def ameasure(self, input: str, output: str) -> MetricResult:
        result = await self._scorer.run(ScorerRun(input=input, output=output))
        return MetricResult(score=result.score, info={"reason": result.reason}, result=result)

    def measure(self, input: str, output: str) -> MetricResult:
        result = self._scorer.run_sync(ScorerRun(input=input, output=output))
        return MetricResult(score=result.score, info={"reason": result.reason}, result=result)
