"""Scorers: the built-in faithfulness and hallucination scorers and the custom-scorer pipeline."""

from agentscore.claims.protocol import Verdict
from agentscore.context import ContextParams, ToolResult, extract_tool_results
from agentscore.result import ScoreError, ScoreResult, ScoreStatus
from agentscore.scorers.base import JudgePrompt, Score, Scorer, StepParams, create_scorer
from agentscore.scorers.faithfulness import create_faithfulness_scorer
from agentscore.scorers.hallucination import create_hallucination_scorer

__all__ = [
    "ContextParams",
    "JudgePrompt",
    "Score",
    "ScoreError",
    "ScoreResult",
    "ScoreStatus",
    "Scorer",
    "StepParams",
    "ToolResult",
    "Verdict",
    "create_faithfulness_scorer",
    "create_hallucination_scorer",
    "create_scorer",
    "extract_tool_results",
]
