"""What `Agent.stream` yields, and how streamed chunks become one reply again.

A streamed run yields `TextDelta`s as the model writes, a `ToolCallEvent` for each tool call
once its pieces are complete, a `ToolResultEvent` for each result, and ends with `StreamDone`
carrying the same `AgentResult` `generate` returns. The run is scored once the stream is
complete; a stream left before `StreamDone` (a `break`, a cancellation, an error) scores
nothing and is counted as abandoned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openai.types.chat import ChatCompletion, ChatCompletionChunk

from agentscore.messages import Message, ToolCall

if TYPE_CHECKING:
    from agentscore.agent import AgentResult

__all__ = [
    "ChunkAccumulator",
    "StreamDone",
    "StreamEvent",
    "TextDelta",
    "ToolCallEvent",
    "ToolResultEvent",
]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the answer, as the model wrote it."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """A tool call, whole: its arguments assembled from every streamed piece."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    """What a tool returned (a `role="tool"` message)."""

    message: Message


@dataclass(frozen=True, slots=True)
class StreamDone:
    """The last event: the finished generation, exactly as `generate` would return it."""

    result: AgentResult


StreamEvent = TextDelta | ToolCallEvent | ToolResultEvent | StreamDone


@dataclass(slots=True)
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ChunkAccumulator:
    """Folds `ChatCompletionChunk`s back into the `ChatCompletion` they stream.

    Tool calls arrive in pieces keyed by index: the first piece names the call, later ones
    append to its arguments. Usage comes in a final chunk without choices.
    """

    id: str = ""
    model: str = ""
    content: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Any = None

    def add(self, chunk: ChatCompletionChunk) -> str | None:
        """Take one chunk; returns its text piece, if it has one."""
        self.id = self.id or chunk.id
        self.model = self.model or chunk.model
        if chunk.usage is not None:
            self.usage = chunk.usage
        if not chunk.choices:
            return None
        choice = chunk.choices[0]
        self.finish_reason = choice.finish_reason or self.finish_reason
        delta = choice.delta
        for piece in delta.tool_calls or ():
            pending = self.calls.setdefault(piece.index, _PendingCall())
            pending.id = piece.id or pending.id
            if piece.function is not None:
                pending.name = piece.function.name or pending.name
                if piece.function.arguments:
                    pending.arguments.append(piece.function.arguments)
        if delta.content:
            self.content.append(delta.content)
            return delta.content
        return None

    def completion(self) -> ChatCompletion:
        calls = [
            {
                "id": pending.id,
                "type": "function",
                "function": {"name": pending.name, "arguments": "".join(pending.arguments)},
            }
            for _, pending in sorted(self.calls.items())
        ]
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if calls:
            message["tool_calls"] = calls
        return ChatCompletion.model_validate(
            {
                "id": self.id,
                "object": "chat.completion",
                "created": 0,
                "model": self.model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": self.finish_reason or "stop",
                        "message": message,
                    }
                ],
                "usage": self.usage.model_dump() if self.usage is not None else None,
            }
        )
