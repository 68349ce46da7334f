"""Turn what users pass as `model=` into a `Judge`."""

from __future__ import annotations

from agentscore.errors import ConfigurationError
from agentscore.judges.base import Judge

__all__ = ["JudgeLike", "resolve_judge"]

JudgeLike = str | Judge | None
_CASCADE = "local+"


def resolve_judge(model: JudgeLike) -> Judge:
    """None or "local": the offline local judge. "local+MODEL": a `CascadeJudge` of the local
    judge and MODEL (the spelling of its `model_name`, so a command line or config file can
    name it). A string: that model on an OpenAI-compatible endpoint configured by the SDK's
    environment (OPENAI_API_KEY, OPENAI_BASE_URL)."""
    if model is None or model == "local":
        from agentscore.judges.local import LocalJudge

        return LocalJudge()
    if isinstance(model, str) and model.startswith(_CASCADE):
        from agentscore.judges.cascade import CascadeJudge

        return CascadeJudge(then=model.removeprefix(_CASCADE))
    if isinstance(model, str):
        if not model.strip():
            raise ConfigurationError("model name must not be empty")
        from agentscore.judges.openai import OpenAIJudge

        return OpenAIJudge(model)
    if isinstance(model, Judge):
        return model
    raise ConfigurationError(
        f"model must be a model name, 'local', or a Judge, got {type(model).__name__}"
    )
