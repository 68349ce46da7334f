"""The snapshot of one completed generation that scorers judge."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentscore.adapters import coerce_messages
from agentscore.messages import Message, assistant_text, last_user_text

__all__ = ["ScorerRun"]


class ScorerRun(BaseModel):
    """Input and output of one generation, plus the ids that tie a score back to its trace.

    `input` and `output` accept a string, OpenAI chat messages or `Message`s; a string input
    is a user message and a string output an assistant message.
    """

    model_config = ConfigDict(frozen=True)

    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    input: list[Message] = Field(default_factory=list)
    output: list[Message] = Field(default_factory=list)
    ground_truth: Any = None
    request_context: dict[str, Any] = Field(default_factory=dict)
    documents: list[str] = Field(
        default_factory=list,
        description="Documents retrieved for this generation (RAG): context for scorers, "
        "beside the tool results in the output.",
    )
    agent_name: str | None = None
    # The tools the agent could call, as Chat Completions tool definitions (what the model was
    # sent); tool-call accuracy checks calls against them. Empty: not recorded.
    tools: list[dict[str, Any]] = Field(default_factory=list)
    conversation_id: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    response_id: str | None = None
    read_error: str | None = Field(
        default=None,
        description="Why the generation's messages could not be read; scoring it fails with "
        "UnreadableMessageError instead of judging an empty answer.",
    )

    @classmethod
    def unchecked(cls, **fields: Any) -> ScorerRun:
        """A run built without validation, from fields that already have the right types.

        Every field is handed to `model_construct`: for one it must default, pydantic takes
        `inspect.signature` of the default factory on each call, about 0.3 ms, which
        `Evals.submit` would spend on the caller's path.
        """
        defaults: dict[str, Any] = {
            "run_id": uuid.uuid4().hex if "run_id" not in fields else None,
            "input": [],
            "output": [],
            "ground_truth": None,
            "request_context": {},
            "documents": [],
            "agent_name": None,
            "tools": [],
            "conversation_id": None,
            "trace_id": None,
            "span_id": None,
            "response_id": None,
            "read_error": None,
        }
        return cls.model_construct(**(defaults | fields))

    @field_validator("input", mode="before")
    @classmethod
    def _coerce_input(cls, value: object) -> list[Message]:
        return coerce_messages(value, default_role="user")

    @field_validator("output", mode="before")
    @classmethod
    def _coerce_output(cls, value: object) -> list[Message]:
        return coerce_messages(value, default_role="assistant")

    @property
    def input_text(self) -> str:
        """The last user message, which the output answers."""
        return last_user_text(self.input)

    @property
    def output_text(self) -> str:
        """Every assistant message of the output, joined: the answer is scored whole."""
        return assistant_text(self.output)
