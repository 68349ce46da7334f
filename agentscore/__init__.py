"""agentscore: live scoring middleware for LLM agents.

Attach scorers to an agent; every sampled generation is scored in the background by a judge
and the result lands on the generation's OpenTelemetry trace.
"""

from agentscore.agent import Agent, AgentResult
from agentscore.errors import (
    AgentScoreError,
    JudgeError,
    JudgeOutputError,
    UnreadableMessageError,
)
from agentscore.evals import Evals, SampledScorer
from agentscore.messages import Message, ToolCall
from agentscore.pipeline.runner import Runner, RunnerStats, default_runner
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.run import ConversationRun, ScorerRun, TraceRun, TraceStep, Turn
from agentscore.spans import ScoringSpanProcessor
from agentscore.telemetry import SpendBudget, Telemetry
from agentscore.telemetry.setup import TelemetrySetup, setup_telemetry
from agentscore.tools import Tool, tool
from agentscore.usage import Price

__all__ = [
    "Agent",
    "AgentResult",
    "AgentScoreError",
    "ConversationRun",
    "Evals",
    "JudgeError",
    "JudgeOutputError",
    "Message",
    "Price",
    "Runner",
    "RunnerStats",
    "SampledScorer",
    "ScoreResult",
    "ScoreStatus",
    "ScorerRun",
    "ScoringSpanProcessor",
    "SpendBudget",
    "Telemetry",
    "TelemetrySetup",
    "Tool",
    "ToolCall",
    "TraceRun",
    "TraceStep",
    "Turn",
    "UnreadableMessageError",
    "default_runner",
    "setup_telemetry",
    "tool",
]

__version__ = "0.1.0"
