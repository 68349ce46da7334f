"""Judges: an OpenAI-compatible endpoint, or the offline local judge."""

from agentscore.judges._cache import ResponseCache
from agentscore.judges.base import Judge, JudgeReply, JudgeRequest, JudgeUsage
from agentscore.judges.cascade import CascadeJudge
from agentscore.judges.local import LocalJudge
from agentscore.judges.openai import OpenAIJudge
from agentscore.judges.resolve import JudgeLike, resolve_judge

__all__ = [
    "CascadeJudge",
    "Judge",
    "JudgeLike",
    "JudgeReply",
    "JudgeRequest",
    "JudgeUsage",
    "LocalJudge",
    "OpenAIJudge",
    "ResponseCache",
    "resolve_judge",
]
