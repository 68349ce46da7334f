"""Faithfulness: the share of the output's claims that the context supports (higher is better)."""

from __future__ import annotations

from collections.abc import Sequence

from agentscore.context import GetContext
from agentscore.judges.resolve import JudgeLike
from agentscore.scorers._claims import ClaimScorerOptions, build_claim_scorer, scaled_threshold
from agentscore.scorers.base import Scorer

__all__ = ["DEFAULT_THRESHOLD", "create_faithfulness_scorer"]

# Passing means at least 4 claims in 5 are supported: an answer with one claim in three
# unverified, or half invented, fails.
DEFAULT_THRESHOLD = 0.8


def create_faithfulness_scorer(
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
    id: str = "faithfulness",
) -> Scorer:
    """Score = supported claims / total claims x `scale`.

    Verdicts: yes (supported), no (contradicts the context), unsure (not in the context, or
    speculative). Context: `get_context(params)` if given, else `context`, else the tool
    results found in the run's output. An output with no claims scores 0 with status
    "no_claims". `unsure_counts_as_supported=True` is deepeval's rule (truthful = does not
    contradict). `model`: a model name for an OpenAI-compatible endpoint, "local" or None for
    the offline local judge, or any `Judge`. `threshold` is a fraction of `scale`; a run
    passes at or above it. `user_facts` (default True) counts the user's own messages as
    context, so restating what the user said is not penalised.
    """
    return build_claim_scorer(
        ClaimScorerOptions(
            mode="faithfulness",
            context=context,
            get_context=get_context,
            stepwise=stepwise,
            unsure_counts_as_supported=unsure_counts_as_supported,
            scale=scale,
            user_facts=user_facts,
        ),
        id=id,
        description="Share of the output's claims supported by the context (higher is better).",
        model=model,
        threshold=scaled_threshold(threshold, scale),
        strict_mode=strict_mode,
        include_reason=include_reason,
        verbose=verbose,
        timeout=timeout,
    )
