"""A judge from what users pass as `model=`, short of a cascade (which is built from these)."""

from __future__ import annotations

from agentscore.errors import ConfigurationError
from agentscore.judges.base import Judge
from agentscore.judges.local import LocalJudge
from agentscore.judges.openai import OpenAIJudge

__all__ = ["JudgeLike", "plain_judge"]

JudgeLike = str | Judge | None


def plain_judge(model: JudgeLike) -> Judge:
    """None or "local": the offline local judge; a string: that model on the OpenAI-compatible
    endpoint the SDK's environment configures; a `Judge`: itself."""
    if model is None or model == "local":
        return LocalJudge()
    if isinstance(model, str):
        if not model.strip():
            raise ConfigurationError("model name must not be empty")
        return OpenAIJudge(model)
    if isinstance(model, Judge):
        return model
    raise ConfigurationError(
        f"model must be a model name, 'local', or a Judge, got {type(model).__name__}"
    )
