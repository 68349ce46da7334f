"""Chat messages as the agent records them.

Everything downstream of the adapters (`agentscore.adapters.coerce_messages`, which reads the
shapes other frameworks hand us) handles this one shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "Message",
    "MessagesLike",
    "Role",
    "ToolCall",
    "assistant_text",
    "last_user_text",
    "pair_tool_calls",
]

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """A function call requested by the model. `arguments` is the raw JSON text it produced."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: str = "{}"


class Message(BaseModel):
    """One chat message. Tool results are `role="tool"` messages naming their call and tool."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def to_openai(self) -> dict[str, Any]:
        """The Chat Completions wire shape of this message."""
        payload: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            payload["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        if self.tool_call_id is not None:
            payload["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role != "tool":
            payload["name"] = self.name
        return payload


MessagesLike = str | Message | Mapping[str, Any] | Sequence[Message | Mapping[str, Any] | Any]


def pair_tool_calls(messages: Sequence[Message]) -> list[ToolCall | None]:
    """For each message, the call a tool message answers (None for other messages).

    Pairs with the most recent call of that id before the result, because some servers reuse
    ids such as "call_0" on every turn.
    """
    latest: dict[str, ToolCall] = {}
    paired: list[ToolCall | None] = []
    for message in messages:
        latest.update((call.id, call) for call in message.tool_calls)
        is_result = message.role == "tool" and message.tool_call_id is not None
        paired.append(latest.get(message.tool_call_id or "") if is_result else None)
    return paired


def assistant_text(messages: Sequence[Message]) -> str:
    """The whole answer: the text of every assistant message, in order."""
    return "\n\n".join(
        message.content.strip()
        for message in messages
        if message.role == "assistant" and message.content and message.content.strip()
    )


def last_user_text(messages: Sequence[Message]) -> str:
    """The text of the last user message, which is what the answer responds to."""
    for message in reversed(messages):
        if message.role == "user" and message.content:
            return message.content
    return ""
