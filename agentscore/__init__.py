"""agentscore: live scoring middleware for LLM agents."""

from agentscore.errors import AgentScoreError, JudgeError, JudgeOutputError
from agentscore.messages import Message, ToolCall
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.run import ScorerRun

__all__ = [
    "AgentScoreError",
    "JudgeError",
    "JudgeOutputError",
    "Message",
    "ScoreResult",
    "ScoreStatus",
    "ScorerRun",
    "ToolCall",
]

__version__ = "0.1.0"
