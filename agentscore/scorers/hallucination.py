"""Hallucination: the share of the output's claims that contradict or go beyond the context."""

from __future__ import annotations

from typing import Unpack

from agentscore.judges.resolve import JudgeLike
from agentscore.scorers._claims import build_claim_scorer
from agentscore.scorers.base import Scorer
from agentscore.scorers.options import ClaimOptions

__all__ = ["DEFAULT_THRESHOLD", "create_hallucination_scorer"]

# The mirror of faithfulness's 0.8: at most one claim in five may go beyond the context;
# an answer with half its claims invented fails.
DEFAULT_THRESHOLD = 0.2


def create_hallucination_scorer(
    model: JudgeLike = None, *, id: str = "hallucination", **options: Unpack[ClaimOptions]
) -> Scorer:
    """Score = hallucinated claims / total claims x `scale` (lower is better).

    A claim is hallucinated when it contradicts the context or is not supported by it;
    subjective claims count unless supported; speculation about facts in the context and
    approximations are allowed. An output with no claims scores 0 ("no_claims"). Context:
    `get_context(params)` if given, else `context`, else the run's tool results; with
    `user_facts` (default True) the user's own messages too. `threshold`
    is in fractions of `scale`; a run passes at or below it.
    Options: `ClaimOptions` (which include `ScorerOptions`).
    """
    return build_claim_scorer("hallucination", model, options, id=id, threshold=DEFAULT_THRESHOLD)
