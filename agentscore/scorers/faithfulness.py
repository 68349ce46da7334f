"""Faithfulness: the share of the output's claims that the context supports (higher is better)."""

from __future__ import annotations

from typing import Unpack

from agentscore.judges.resolve import JudgeLike
from agentscore.scorers._claims import build_claim_scorer
from agentscore.scorers.base import Scorer
from agentscore.scorers.options import ClaimOptions

__all__ = ["DEFAULT_THRESHOLD", "create_faithfulness_scorer"]

# Passing means at least 4 claims in 5 are supported: an answer with one claim in three
# unverified, or half invented, fails.
DEFAULT_THRESHOLD = 0.8


def create_faithfulness_scorer(
    model: JudgeLike = None, *, id: str = "faithfulness", **options: Unpack[ClaimOptions]
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
    Options: `ClaimOptions` (which include `ScorerOptions`).
    """
    return build_claim_scorer("faithfulness", model, options, id=id, threshold=DEFAULT_THRESHOLD)
