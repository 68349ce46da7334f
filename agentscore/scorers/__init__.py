"""Scorers: the built-in scorers, the custom-scorer pipeline, and scoring several together."""

from agentscore.context import ContextParams, ToolResult, extract_tool_results
from agentscore.protocol.protocol import Verdict
from agentscore.result import ScoreError, ScoreResult, ScoreStatus
from agentscore.scorers.answer_relevancy import create_answer_relevancy_scorer
from agentscore.scorers.base import JudgePrompt, Score, Scorer, StepParams, create_scorer
from agentscore.scorers.checks import (
    create_contains_scorer,
    create_json_schema_scorer,
    create_regex_scorer,
)
from agentscore.scorers.completeness import create_completeness_scorer
from agentscore.scorers.context_relevance import create_context_relevance_scorer
from agentscore.scorers.conversation_completeness import create_conversation_completeness_scorer
from agentscore.scorers.efficiency import create_tool_efficiency_scorer
from agentscore.scorers.faithfulness import create_faithfulness_scorer
from agentscore.scorers.hallucination import create_hallucination_scorer
from agentscore.scorers.knowledge_retention import create_knowledge_retention_scorer
from agentscore.scorers.options import ClaimOptions, ContextOptions, ScorerOptions
from agentscore.scorers.rubric import create_rubric_scorer
from agentscore.scorers.task_completion import create_task_completion_scorer
from agentscore.scorers.tool_calls import create_tool_call_accuracy_scorer
from agentscore.scorers.trajectory import ExpectedStep, create_trajectory_scorer

__all__ = [
    "ClaimOptions",
    "ContextOptions",
    "ContextParams",
    "ExpectedStep",
    "JudgePrompt",
    "Score",
    "ScoreError",
    "ScoreResult",
    "ScoreStatus",
    "Scorer",
    "ScorerOptions",
    "StepParams",
    "ToolResult",
    "Verdict",
    "create_answer_relevancy_scorer",
    "create_completeness_scorer",
    "create_contains_scorer",
    "create_context_relevance_scorer",
    "create_conversation_completeness_scorer",
    "create_faithfulness_scorer",
    "create_hallucination_scorer",
    "create_json_schema_scorer",
    "create_knowledge_retention_scorer",
    "create_regex_scorer",
    "create_rubric_scorer",
    "create_scorer",
    "create_task_completion_scorer",
    "create_tool_call_accuracy_scorer",
    "create_tool_efficiency_scorer",
    "create_trajectory_scorer",
    "extract_tool_results",
]
