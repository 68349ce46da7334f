"""What scorers judge, at three levels: one generation (`ScorerRun`), everything under one
trace (`TraceRun`), and a conversation once it has ended (`ConversationRun`).

A trace and a conversation are runs too (subclasses of `ScorerRun`, with the same ids), so
the pipeline, the telemetry and the sinks handle every level the same way: `input` is what
the user asked, `output` the answer with every tool call and result, and the level's own
detail (`steps`, `turns`) rides beside them. A scorer says which level it judges
(`Scorer.level`); the placements hand it runs of that level.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Self, cast

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from agentscore.adapters import coerce_messages
from agentscore.messages import Message, assistant_text, last_user_text, pair_tool_calls

__all__ = [
    "ConversationRun",
    "Level",
    "ScorerRun",
    "StepKind",
    "TraceRun",
    "TraceStep",
    "Turn",
    "level_of",
]

Level = Literal["generation", "trace", "conversation"]
StepKind = Literal["agent", "llm", "tool", "retrieval"]
# What was asked and what was answered, in any shape the adapters read: a string is a user
# message on the way in and an assistant message on the way out.
AskedMessages = Annotated[
    list[Message], BeforeValidator(lambda value: coerce_messages(value, default_role="user"))
]
AnsweredMessages = Annotated[
    list[Message], BeforeValidator(lambda value: coerce_messages(value, default_role="assistant"))
]


class ScorerRun(BaseModel):
    """Input and output of one generation, plus the ids that tie a score back to its trace.

    `input` and `output` accept a string, OpenAI chat messages or `Message`s; a string input
    is a user message and a string output an assistant message.
    """

    model_config = ConfigDict(frozen=True)

    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    input: AskedMessages = Field(default_factory=list)
    output: AnsweredMessages = Field(default_factory=list)
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
    def unchecked(cls, **fields: Any) -> Self:
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
        return cast(Self, cls.model_construct(**(defaults | fields)))

    @property
    def input_text(self) -> str:
        """The last user message, which the output answers."""
        return last_user_text(self.input)

    @property
    def output_text(self) -> str:
        """Every assistant message of the output, joined: the answer is scored whole."""
        return assistant_text(self.output)


class TraceStep(BaseModel):
    """One step of a trace, in the order the steps started: an agent invocation, a model
    call, a tool call (its arguments as the model wrote them, its result or error), or a
    retrieval (its documents)."""

    model_config = ConfigDict(frozen=True)

    kind: StepKind
    name: str
    span_id: str | None = None
    parent_span_id: str | None = None
    start_time: float | None = Field(default=None, description="Seconds since the epoch.")
    duration_ms: float | None = None
    arguments: str | None = None
    result: str | None = None
    error: str | None = None
    documents: list[str] = Field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None


class TraceRun(ScorerRun):
    """Everything under one trace: `steps` in order; `input` the user's request and `output`
    the final answer with every tool call and result of the trace (so a generation scorer
    reads a trace as one long generation)."""

    steps: list[TraceStep] = Field(default_factory=list)

    @property
    def tool_steps(self) -> list[TraceStep]:
        return [step for step in self.steps if step.kind == "tool"]

    @classmethod
    def of(cls, run: ScorerRun) -> TraceRun:
        """`run` as a trace: itself when it is one, else the trajectory its messages tell
        (each model turn, each tool call with its result) under the run's own ids. Only this
        generation's own steps: those after the user's last message (earlier turns in its
        input history were traces of their own); a conversation's trajectory is every
        turn's."""
        if isinstance(run, TraceRun):
            return run
        fields = {name: getattr(run, name) for name in ScorerRun.model_fields}
        if isinstance(run, ConversationRun):
            done = [message for turn in run.turns for message in turn.output]
            return cls.unchecked(**fields, steps=steps_from_messages(done))
        asked = max((i for i, m in enumerate(run.input) if m.role == "user"), default=-1)
        own = [*run.input[asked + 1 :], *run.output]
        return cls.unchecked(**fields, steps=steps_from_messages(own))


class Turn(BaseModel):
    """One exchange of a conversation: what the user sent, and the agent's answer with its
    tool calls and results."""

    model_config = ConfigDict(frozen=True)

    input: AskedMessages = Field(default_factory=list)
    output: AnsweredMessages = Field(default_factory=list)
    run_id: str | None = None
    trace_id: str | None = None

    @classmethod
    def of(cls, run: ScorerRun) -> Turn:
        """The turn a generation (or a trace) adds to its conversation: what the user sent
        since the agent last spoke, and the answer. The history before it is the earlier
        turns' business."""
        last_reply = max(
            (i for i, m in enumerate(run.input) if m.role in ("assistant", "tool")), default=-1
        )
        return cls(
            input=run.input[last_reply + 1 :],
            output=run.output,
            run_id=run.run_id,
            trace_id=run.trace_id,
        )


class ConversationRun(ScorerRun):
    """Every turn sharing a conversation id, once the conversation has ended: `turns` in
    order; `input` is the history before the last answer and `output` that answer."""

    turns: list[Turn] = Field(default_factory=list)

    @classmethod
    def from_turns(cls, conversation_id: str, turns: Sequence[Turn], **ids: Any) -> ConversationRun:
        history = [message for turn in turns[:-1] for message in [*turn.input, *turn.output]]
        last = turns[-1] if turns else Turn()
        return cls(
            conversation_id=conversation_id,
            input=[*history, *last.input],
            output=list(last.output),
            turns=list(turns),
            **ids,
        )


def level_of(run: ScorerRun) -> Level:
    if isinstance(run, ConversationRun):
        return "conversation"
    if isinstance(run, TraceRun):
        return "trace"
    return "generation"


def steps_from_messages(messages: Sequence[Message]) -> list[TraceStep]:
    """The trajectory a message history tells: a model step for each assistant message, a
    tool step for each call it made, with the result the history pairs with it."""
    results: dict[int, Message] = {}
    for message, call in zip(messages, pair_tool_calls(messages), strict=True):
        if call is not None:
            results.setdefault(id(call), message)
    steps: list[TraceStep] = []
    for message in messages:
        if message.role != "assistant":
            continue
        steps.append(TraceStep(kind="llm", name=message.name or "model", result=message.content))
        for call in message.tool_calls:
            answer = results.get(id(call))
            steps.append(
                TraceStep(
                    kind="tool",
                    name=call.name,
                    arguments=call.arguments,
                    result=answer.content if answer is not None else None,
                )
            )
    return steps
