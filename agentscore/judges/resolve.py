"""Turn what users pass as `model=` into a `Judge`."""

from __future__ import annotations

from agentscore.judges._plain import JudgeLike, plain_judge
from agentscore.judges.base import Judge
from agentscore.judges.cascade import CascadeJudge

__all__ = ["JudgeLike", "resolve_judge"]

_CASCADE = "local+"


def resolve_judge(model: JudgeLike) -> Judge:
    """None or "local": the offline local judge. "local+MODEL": a `CascadeJudge` of the local
    judge and MODEL (the spelling of its `model_name`, so a command line or config file can
    name it). A string: that model on an OpenAI-compatible endpoint configured by the SDK's
    environment (OPENAI_API_KEY, OPENAI_BASE_URL)."""
    if isinstance(model, str) and model.startswith(_CASCADE):
        return CascadeJudge(then=model.removeprefix(_CASCADE))
    return plain_judge(model)
