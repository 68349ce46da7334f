"""deepeval's shape: `FaithfulnessMetric(threshold=...).measure(LLMTestCase(...))`.

Truthful means "does not contradict the context" here, as in deepeval, so claims the context
does not mention count as truthful; pass `unsure_counts_as_supported=False` for Mastra's rule.
"""

from __future__ import annotations

from pydantic import BaseModel

from agentscore._options import check_flag
from agentscore.judges.resolve import JudgeLike, resolve_judge
from agentscore.result import ScoreResult
from agentscore.run import ScorerRun
from agentscore.scorers.base import Scorer
from agentscore.scorers.faithfulness import create_faithfulness_scorer
from agentscore.scorers.options import ClaimOptions

__all__ = ["FaithfulnessMetric", "LLMTestCase"]


class LLMTestCase(BaseModel):
    input: str
    actual_output: str
    retrieval_context: list[str] | None = None
    expected_output: str | None = None


class FaithfulnessMetric:
    """After `measure`, read `score`, `reason`, `success` and `is_successful()`."""

    def __init__(
        self,
        threshold: float = 0.5,
        model: JudgeLike = None,
        include_reason: bool = True,
        strict_mode: bool = False,
        async_mode: bool = True,
        verbose_mode: bool = False,
        unsure_counts_as_supported: bool = True,
    ) -> None:
        del async_mode  # one judge call per case: nothing to run concurrently inside measure()
        check_flag("verbose_mode", verbose_mode)  # its error names deepeval's spelling
        # deepeval's names onto the scorer options; only `verbose_mode` is spelt otherwise.
        self._options: ClaimOptions = {
            "threshold": threshold,
            "include_reason": include_reason,
            "strict_mode": strict_mode,
            "verbose": verbose_mode,
            "unsure_counts_as_supported": unsure_counts_as_supported,
        }
        self.model = resolve_judge(model)  # one judge (one client, one cache) for every case
        create_faithfulness_scorer(self.model, **self._options)  # a bad option fails here
        self.threshold = 1.0 if strict_mode else threshold
        self.include_reason = include_reason
        self.strict_mode = strict_mode
        self.verbose_mode = verbose_mode
        self.unsure_counts_as_supported = unsure_counts_as_supported
        self.score: float | None = None
        self.reason: str | None = None
        self.success: bool | None = None
        self.error: str | None = None
        self.result: ScoreResult | None = None

    def measure(self, test_case: LLMTestCase) -> float | None:
        return self._record(self._scorer(test_case).run_sync(_run_of(test_case)))

    async def a_measure(self, test_case: LLMTestCase) -> float | None:
        return self._record(await self._scorer(test_case).run(_run_of(test_case)))

    def is_successful(self) -> bool:
        return bool(self.success)

    def _scorer(self, test_case: LLMTestCase) -> Scorer:
        options: ClaimOptions = {**self._options, "context": test_case.retrieval_context or []}
        return create_faithfulness_scorer(self.model, **options)

    def _record(self, result: ScoreResult) -> float | None:
        self.result = result
        self.score = result.score
        self.reason = result.reason
        self.success = result.passed
        self.error = (
            None if result.error is None else f"{result.error.type}: {result.error.message}"
        )
        return self.score


def _run_of(test_case: LLMTestCase) -> ScorerRun:
    return ScorerRun(
        input=test_case.input,
        output=test_case.actual_output,
        ground_truth=test_case.expected_output,
    )
