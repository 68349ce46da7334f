"""Chat messages as the agent records them, and conversion from the shapes users hand us.

A scorer run may carry its input and output as a plain string, as OpenAI chat-completion
messages (dicts or the SDK's pydantic objects, with multi-part content and tool calls), or as
these `Message` models. `coerce_messages` turns any of them into `Message`s, so everything
downstream handles one shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "Message",
    "MessagesLike",
    "Role",
    "ToolCall",
    "assistant_text",
    "coerce_messages",
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


def coerce_messages(value: object, *, default_role: Role = "assistant") -> list[Message]:
    """Normalise a string, a message, or a sequence of messages in any supported shape.

    A bare string becomes one message with `default_role`. Raises `TypeError` for anything
    else that is not message-shaped, naming what it got.
    """
    if value is None:
        return []
    if isinstance(value, str):
        return [Message(role=default_role, content=value)]
    if isinstance(value, Message | Mapping) or hasattr(value, "model_dump"):
        return [_coerce_one(value)]
    if isinstance(value, Iterable):
        messages = [_coerce_one(item) for item in value]
        return _attach_tool_names(messages)
    raise TypeError(f"expected a string or chat messages, got {type(value).__name__}")


def _coerce_one(item: object) -> Message:
    if isinstance(item, Message):
        return item
    if isinstance(item, str):
        return Message(role="assistant", content=item)
    if not isinstance(item, Mapping):
        dump = getattr(item, "model_dump", None)
        if dump is None:
            raise TypeError(f"expected a chat message, got {type(item).__name__}")
        item = dump(exclude_none=True)
    assert isinstance(item, Mapping)
    role = item.get("role", "assistant")
    if role not in ("system", "user", "assistant", "tool", "developer", "function"):
        raise TypeError(f"unknown message role {role!r}")
    normalised_role: Role = (
        "system" if role == "developer" else "tool" if role == "function" else role
    )
    return Message(
        role=normalised_role,
        content=_content_text(item.get("content")),
        tool_calls=tuple(_coerce_tool_call(call) for call in item.get("tool_calls") or ()),
        tool_call_id=item.get("tool_call_id"),
        name=item.get("name"),
    )


def _content_text(content: object) -> str | None:
    """Flatten multi-part content (text parts only) into one string."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, Sequence) and all(_is_content_part(part) for part in content):
        return "\n".join(
            part if isinstance(part, str) else part["text"]
            for part in content
            if isinstance(part, str) or isinstance(part.get("text"), str)
        )
    # Anything else (a tool's list or object result, a number) is data: keep it as JSON.
    return _to_json_text(content)


def _is_content_part(part: object) -> bool:
    return isinstance(part, str) or (isinstance(part, Mapping) and "type" in part)


def _coerce_tool_call(call: object) -> ToolCall:
    if isinstance(call, ToolCall):
        return call
    if not isinstance(call, Mapping):
        dump = getattr(call, "model_dump", None)
        if dump is None:
            raise TypeError(f"expected a tool call, got {type(call).__name__}")
        call = dump()
    assert isinstance(call, Mapping)
    function = call.get("function") or {}
    arguments = function.get("arguments", call.get("arguments", "{}"))
    return ToolCall(
        id=str(call.get("id") or ""),
        name=str(function.get("name") or call.get("name") or ""),
        arguments=arguments if isinstance(arguments, str) else _to_json_text(arguments),
    )


def _attach_tool_names(messages: list[Message]) -> list[Message]:
    """Tool messages from the OpenAI wire format carry only the call id; recover the tool name."""
    named: list[Message] = []
    for message, call in zip(messages, pair_tool_calls(messages), strict=True):
        if message.role == "tool" and message.name is None and call is not None:
            message = message.model_copy(update={"name": call.name})
        named.append(message)
    return named


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


def _to_json_text(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


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
