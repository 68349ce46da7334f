"""Hallucination: the share of the output's claims that contradict or go beyond the context."""

from __future__ import annotations

from collections.abc import Sequence

from agentscore.context import GetContext
from agentscore.judges.resolve import JudgeLike
from agentscore.scorers._claims import ClaimScorerOptions, build_claim_scorer, scaled_threshold
from agentscore.scorers.base import Scorer

__all__ = ["DEFAULT_THRESHOLD", "create_hallucination_scorer"]

# The mirror of faithfulness's 0.8: at most one claim in five may go beyond the context;
# an answer with half its claims invented fails.
DEFAULT_THRESHOLD = 0.2


def create_hallucination_scorer(
    model: JudgeLike = None,
    *,
    context: Sequence[str] | None = None,
    get_context: GetContext | None = None,
    scale: float = 1.0,
    threshold: float | None = DEFAULT_THRESHOLD,
    strict_mode: bool = False,
    include_reason: bool = True,
    verbose: bool = False,
    stepwise: bool = False,
    unsure_counts_as_supported: bool = False,
    user_facts: bool = True,
    timeout: float | None = None,
    id: str = "hallucination",
) -> Scorer:
    """Score = hallucinated claims / total claims x `scale` (lower is better).

    A claim is hallucinated when it contradicts the context or is not supported by it;
    subjective claims count unless supported; speculation about facts in the context and
    approximations are allowed. An output with no claims scores 0 ("no_claims"). Context:
    `get_context(params)` if given, else `context`, else the run's tool results; with
    `user_facts` (default True) the user's own messages too. `threshold`
    is in fractions of `scale`; a run passes at or below it.
    """
    return build_claim_scorer(
        ClaimScorerOptions(
            mode="hallucination",
            context=context,
            get_context=get_context,
            stepwise=stepwise,
            unsure_counts_as_supported=unsure_counts_as_supported,
            scale=scale,
            user_facts=user_facts,
        ),
        id=id,
        description="Share of the output's claims not grounded in the context (lower is better).",
        model=model,
        threshold=scaled_threshold(threshold, scale),
        strict_mode=strict_mode,
        include_reason=include_reason,
        verbose=verbose,
        timeout=timeout,
    )
