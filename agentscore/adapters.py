"""Foreign message shapes -> `Message`: one reader for every shape agents hand us.

Read here: plain strings; OpenAI Chat Completions messages (dicts or SDK objects, multi-part
content, tool calls); OpenAI Responses API / Agents SDK items (`message`, `function_call`,
`function_call_output`, `output_text` parts, run items holding a `raw_item`; reasoning items
are skipped; hosted tools such as file search, MCP, code interpreter and shell become tool
calls with their text results); pydantic-ai `ModelRequest` / `ModelResponse` (objects or
their JSON); and the OpenTelemetry GenAI semantic-convention message JSON (`role` + `parts`,
with `tool_call` and `tool_call_response` parts, and `gen_ai.system_instructions` part lists).

A shape it cannot read raises `UnreadableMessageError` naming what it got: a run whose
messages were misread would be scored as if it had no answer or no tool results, which is a
wrong score, not a missing one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from agentscore.errors import UnreadableMessageError
from agentscore.messages import Message, Role, ToolCall, pair_tool_calls

__all__ = ["MALFORMED", "coerce_messages", "system_instructions"]

_CHAT_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
}
# Items that carry no answer text and no evidence: the model's private reasoning.
_SKIPPED_ITEM_TYPES = frozenset({"reasoning", "thinking", "item_reference"})
_SKIPPED_PART_TYPES = frozenset({"reasoning", "thinking", "refusal"})
_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})


def coerce_messages(value: object, *, default_role: Role = "assistant") -> list[Message]:
    """Normalise a string, one message, or a sequence of messages in any supported shape.

    A bare string becomes one message with `default_role`. Raises `UnreadableMessageError`
    (a `TypeError`) for anything else that is not message-shaped, naming what it got.
    """
    try:
        return _coerce(value, default_role)
    except UnreadableMessageError:
        raise
    except MALFORMED as exc:
        # A field of the wrong type deep inside (parts that are a number, JSON nested past
        # the parser's depth): the same outcome as an unknown shape, never a stray error.
        raise UnreadableMessageError(
            f"malformed messages ({type(exc).__name__}: {str(exc)[:200]})"
        ) from None


# What a malformed field raises while it is read: an unreadable shape, not a bug of ours.
MALFORMED = (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError)


def _coerce(value: object, default_role: Role) -> list[Message]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Message(role=default_role, content=value)]
    if isinstance(value, bytes | bytearray):
        return _coerce(_decode_json(bytes(value)), default_role)
    items = [value] if _is_single_message(value) else value
    assert isinstance(items, Iterable)
    messages: list[Message] = []
    for item in items:
        messages.extend(_read_item(item))
    return _attach_tool_names(messages)


def system_instructions(parts: object) -> list[Message]:
    """`gen_ai.system_instructions` (a list of parts, or a JSON string of one) as a message."""
    if isinstance(parts, str):
        try:
            parts = json.loads(parts)
        except ValueError:
            return [Message(role="system", content=parts)] if parts else []
    text = _parts_text(parts) if isinstance(parts, Sequence) else None
    return [Message(role="system", content=text)] if text else []


def _is_single_message(value: object) -> bool:
    # pydantic models iterate over their fields, so they are told apart before Iterable.
    return isinstance(value, Message | Mapping) or (
        hasattr(value, "model_dump") or not isinstance(value, Iterable)
    )


def _read_item(item: object) -> list[Message]:
    """One foreign item as zero or more messages."""
    if isinstance(item, Message):
        return [item]
    if isinstance(item, str):
        return [Message(role="assistant", content=item)]
    raw = _attr(item, "raw_item")  # Agents SDK run items wrap the Responses API item
    if raw is not None and not isinstance(item, Mapping):
        return _read_item(raw)
    fields = _fields(item)
    if fields is None:
        raise UnreadableMessageError(f"expected a chat message, got {_kind(item)}")
    if fields.get("kind") in ("request", "response") and "parts" in fields:
        return _read_pydantic_ai(fields)
    item_type = fields.get("type")
    if isinstance(item_type, str) and item_type != "message":
        return _read_responses_item(item_type, fields, item)
    if "parts" in fields and "content" not in fields:
        return _read_semconv(fields)
    if "role" not in fields and "content" not in fields and "tool_calls" not in fields:
        raise UnreadableMessageError(
            f"cannot read {_kind(item)} with fields {sorted(map(str, fields))[:8]} as a message"
        )
    return [_read_chat(fields)]


def _fields(item: object) -> Mapping[str, Any] | None:
    if isinstance(item, Mapping):
        return item
    dump = _attr(item, "model_dump")
    if callable(dump):
        dumped = dump(exclude_none=True)
        return dumped if isinstance(dumped, Mapping) else None
    parts = _attr(item, "parts")
    if _attr(item, "kind") in ("request", "response") and parts is not None:
        return {"kind": _attr(item, "kind"), "parts": parts}
    return None


def _read_chat(fields: Mapping[str, Any]) -> Message:
    role = _role(fields.get("role", "assistant"))
    content = fields.get("content")
    return Message(
        role=role,
        content=_content_text(content),
        tool_calls=tuple(_chat_tool_call(call) for call in fields.get("tool_calls") or ()),
        tool_call_id=fields.get("tool_call_id"),
        name=fields.get("name"),
    )


def _role(value: object) -> Role:
    role = _CHAT_ROLES.get(str(value))
    if role is None:
        raise UnreadableMessageError(f"unknown message role {value!r}")
    return role


def _chat_tool_call(call: object) -> ToolCall:
    if isinstance(call, ToolCall):
        return call
    fields = _fields(call)
    if fields is None:
        raise UnreadableMessageError(f"expected a tool call, got {_kind(call)}")
    function = fields.get("function") or {}
    return ToolCall(
        id=str(fields.get("id") or ""),
        name=str(function.get("name") or fields.get("name") or ""),
        arguments=_arguments_text(function.get("arguments", fields.get("arguments"))),
    )


def _read_responses_item(item_type: str, fields: Mapping[str, Any], item: object) -> list[Message]:
    if item_type in _SKIPPED_ITEM_TYPES:
        return []
    if item_type == "function_call":
        call = ToolCall(
            id=str(fields.get("call_id") or fields.get("id") or ""),
            name=str(fields.get("name") or ""),
            arguments=_arguments_text(fields.get("arguments")),
        )
        return [Message(role="assistant", tool_calls=(call,))]
    if item_type in ("function_call_output", "custom_tool_call_output", "apply_patch_call_output"):
        return [_tool_result(fields.get("call_id"), _content_text(fields.get("output")))]
    if item_type in _METADATA_ITEM_TYPES:
        return []
    hosted = _HOSTED_TOOLS.get(item_type)
    if hosted is None:
        raise UnreadableMessageError(
            f"cannot read a Responses API item of type {item_type!r} ({_kind(item)})"
        )
    return hosted(fields)


# What the Responses API says about its MCP servers and approvals, not a call or a result.
_METADATA_ITEM_TYPES = frozenset(
    {"mcp_list_tools", "mcp_approval_request", "mcp_approval_response"}
)


def _hosted_call(
    fields: Mapping[str, Any], name: str, arguments: object, result: str | None
) -> list[Message]:
    """A tool the model ran on the provider's side: the call, and its result when the item
    carries one as text (search hits, logs, an MCP tool's output). Web search pages,
    screenshots and images are not in the item, so those calls have no result here."""
    call_id = str(fields.get("call_id") or fields.get("id") or "")
    call = ToolCall(id=call_id, name=name, arguments=_arguments_text(arguments))
    messages = [Message(role="assistant", tool_calls=(call,))]
    if result is not None:
        messages.append(_tool_result(call_id, result))
    return messages


def _tool_result(call_id: object, content: str | None) -> Message:
    return Message(role="tool", content=content, tool_call_id=str(call_id or ""))


def _file_search(fields: Mapping[str, Any]) -> list[Message]:
    # Results are present only when the request asked for them (`include`).
    hits = fields.get("results")
    result = None
    if isinstance(hits, Sequence) and not isinstance(hits, str):
        result = _to_json_text(
            [
                {key: hit[key] for key in ("filename", "text") if key in hit}
                for hit in hits
                if isinstance(hit, Mapping)
            ]
        )
    return _hosted_call(fields, "file_search", {"queries": fields.get("queries")}, result)


def _code_interpreter(fields: Mapping[str, Any]) -> list[Message]:
    outputs = fields.get("outputs")
    logs = [
        out["logs"]
        for out in outputs or ()
        if isinstance(out, Mapping)
        and out.get("type") == "logs"
        and isinstance(out.get("logs"), str)
    ]
    result = "\n".join(logs) if logs else None
    return _hosted_call(fields, "code_interpreter", {"code": fields.get("code")}, result)


def _mcp(fields: Mapping[str, Any]) -> list[Message]:
    output, error = fields.get("output"), fields.get("error")
    result = _content_text(output) if output is not None else None
    if result is None and error:
        result = _to_json_text(error)
    return _hosted_call(fields, str(fields.get("name") or "mcp"), fields.get("arguments"), result)


def _shell_output(fields: Mapping[str, Any]) -> list[Message]:
    output = fields.get("output")
    if isinstance(output, Sequence) and not isinstance(output, str):  # shell_call_output
        output = "\n".join(
            str(chunk.get(stream))
            for chunk in output
            if isinstance(chunk, Mapping)
            for stream in ("stdout", "stderr")
            if chunk.get(stream)
        )
    return [_tool_result(fields.get("call_id") or fields.get("id"), _content_text(output))]


_HOSTED_TOOLS: dict[str, Callable[[Mapping[str, Any]], list[Message]]] = {
    "custom_tool_call": lambda f: _hosted_call(f, str(f.get("name") or ""), f.get("input"), None),
    "file_search_call": _file_search,
    "web_search_call": lambda f: _hosted_call(f, "web_search", f.get("action"), None),
    "code_interpreter_call": _code_interpreter,
    "mcp_call": _mcp,
    "image_generation_call": lambda f: _hosted_call(f, "image_generation", None, None),
    "computer_call": lambda f: _hosted_call(f, "computer", f.get("action"), None),
    # A screenshot: no text to judge against.
    "computer_call_output": lambda f: [],
    "local_shell_call": lambda f: _hosted_call(f, "shell", f.get("action"), None),
    "shell_call": lambda f: _hosted_call(f, "shell", f.get("action"), None),
    "local_shell_call_output": _shell_output,
    "shell_call_output": _shell_output,
    "apply_patch_call": lambda f: _hosted_call(f, "apply_patch", f.get("operation"), None),
}


def _read_semconv(fields: Mapping[str, Any]) -> list[Message]:
    """One GenAI semantic-convention message; tool responses become tool messages."""
    role = _role(fields.get("role", "assistant"))
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[Message] = []
    for part in fields.get("parts") or ():
        if not isinstance(part, Mapping):
            raise UnreadableMessageError(f"expected a message part, got {_kind(part)}")
        part_type = part.get("type")
        if part_type in _TEXT_PART_TYPES:
            texts.append(_part_content(part, "content", "text"))
        elif part_type == "tool_call":
            calls.append(
                ToolCall(
                    id=str(part.get("id") or ""),
                    name=str(part.get("name") or ""),
                    arguments=_arguments_text(part.get("arguments")),
                )
            )
        elif part_type == "tool_call_response":
            results.append(
                Message(
                    role="tool",
                    content=_part_content(part, "response", "result"),
                    tool_call_id=str(part.get("id") or ""),
                    name=part.get("name"),
                )
            )
        elif part_type in _SKIPPED_PART_TYPES or part_type in ("uri", "blob", "file"):
            continue  # no evidence a text judge can read
        else:
            raise UnreadableMessageError(f"cannot read a message part of type {part_type!r}")
    messages: list[Message] = []
    if texts or calls or not results:
        text = "\n".join(texts) if texts else None
        messages.append(Message(role=role, content=text, tool_calls=tuple(calls)))
    return messages + results


def _part_content(part: Mapping[str, Any], *keys: str) -> str:
    """A part's text. Instrumentations drop the content and keep the part when capture is
    off; judging what is left would judge an empty answer, so that is unreadable."""
    for key in keys:
        if key in part:
            return _content_text(part[key]) or ""
    raise UnreadableMessageError(
        f"a {part.get('type')!r} part without its content: turn on the instrumentation's "
        "message content capture"
    )


def _read_pydantic_ai(fields: Mapping[str, Any]) -> list[Message]:
    """A pydantic-ai `ModelRequest` / `ModelResponse`, as objects or as their JSON."""
    messages: list[Message] = []
    texts: list[str] = []
    calls: list[ToolCall] = []
    for part in fields.get("parts") or ():
        kind = _attr(part, "part_kind")
        if kind == "system-prompt":
            messages.append(Message(role="system", content=str(_attr(part, "content"))))
        elif kind == "user-prompt":
            messages.append(Message(role="user", content=_content_text(_attr(part, "content"))))
        elif kind in ("tool-return", "builtin-tool-return"):
            messages.append(
                Message(
                    role="tool",
                    content=_content_text(_attr(part, "content")),
                    tool_call_id=str(_attr(part, "tool_call_id") or ""),
                    name=_attr(part, "tool_name"),
                )
            )
        elif kind == "retry-prompt":
            continue  # the framework's own complaint to the model, not evidence
        elif kind == "text":
            texts.append(str(_attr(part, "content")))
        elif kind in ("tool-call", "builtin-tool-call"):
            calls.append(
                ToolCall(
                    id=str(_attr(part, "tool_call_id") or ""),
                    name=str(_attr(part, "tool_name") or ""),
                    arguments=_arguments_text(_attr(part, "args")),
                )
            )
        elif kind in ("thinking", "file"):
            continue
        else:
            raise UnreadableMessageError(f"cannot read a pydantic-ai part of kind {kind!r}")
    if texts or calls:
        messages.append(
            Message(role="assistant", content="".join(texts) or None, tool_calls=tuple(calls))
        )
    return messages


def _content_text(content: object) -> str | None:
    """Text of a message's content: a string, or its text parts joined; data stays JSON."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, Sequence) and content and all(_is_part(part) for part in content):
        return _parts_text(content)
    return _to_json_text(content)


def _is_part(part: object) -> bool:
    return isinstance(part, str) or (isinstance(part, Mapping) and "type" in part)


def _parts_text(parts: Sequence[Any]) -> str:
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping):
            text = part.get("text", part.get("content"))
            if isinstance(text, str) and part.get("type") not in _SKIPPED_PART_TYPES:
                texts.append(text)
    return "\n".join(texts)


def _arguments_text(arguments: object) -> str:
    if arguments is None:
        return "{}"
    return arguments if isinstance(arguments, str) else _to_json_text(arguments)


def _attach_tool_names(messages: list[Message]) -> list[Message]:
    """Tool messages in several shapes carry only the call id; recover the tool name."""
    named: list[Message] = []
    for message, call in zip(messages, pair_tool_calls(messages), strict=True):
        if message.role == "tool" and message.name is None and call is not None:
            message = message.model_copy(update={"name": call.name})
        named.append(message)
    return named


def _attr(item: object, name: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def _decode_json(value: bytes) -> object:
    try:
        return json.loads(value)
    except ValueError as exc:
        raise UnreadableMessageError("bytes that are not JSON messages") from exc


def _to_json_text(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _kind(value: object) -> str:
    cls = type(value)
    module = cls.__module__
    return cls.__name__ if module == "builtins" else f"{module.split('.')[0]}.{cls.__name__}"
