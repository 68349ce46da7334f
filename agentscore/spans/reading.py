"""What a span says: its role in a generation, the messages it carries, the documents it
retrieved.

Two conventions are read, and agentscore's own spans (which follow the first):

- OpenTelemetry GenAI: `gen_ai.operation.name` (invoke_agent, chat, execute_tool, retrieval),
  `gen_ai.input.messages` / `gen_ai.output.messages` / `gen_ai.system_instructions` (JSON),
  `gen_ai.tool.call.*` on tool spans, `gen_ai.retrieval.documents` (JSON) on retrieval spans;
  pydantic-ai's `pydantic_ai.all_messages` on its agent span.
- OpenInference: `openinference.span.kind` (AGENT, LLM, TOOL, RETRIEVER), `llm.input_messages.*`
  / `llm.output_messages.*` (flattened), `input.value` / `output.value`, `tool.name`,
  `retrieval.documents.N.document.content`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentscore.adapters import MALFORMED, coerce_messages, system_instructions
from agentscore.errors import UnreadableMessageError
from agentscore.messages import Message, ToolCall
from agentscore.spans.records import SpanRecord

__all__ = [
    "Conversation",
    "SpanRole",
    "retrieved_documents",
    "span_conversation",
    "span_role",
    "tool_exchange",
]

SpanRole = Literal["agent", "llm", "tool", "retrieval", "evaluation"]

_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_OI_KIND = "openinference.span.kind"


def span_role(attributes: Mapping[str, Any]) -> SpanRole | None:
    """The part a span plays; None for spans span reading does not use (HTTP, database...)."""
    kind = attributes.get(_OI_KIND)
    operation = attributes.get("gen_ai.operation.name")
    if kind == "EVALUATOR" or "gen_ai.evaluation.name" in attributes:
        return "evaluation"
    if operation == "invoke_agent" or kind == "AGENT":
        return "agent"
    if operation in _LLM_OPERATIONS or kind == "LLM":
        return "llm"
    if operation == "execute_tool" or kind == "TOOL":
        return "tool"
    if operation == "retrieval" or kind == "RETRIEVER":
        return "retrieval"
    return None


@dataclass(frozen=True, slots=True)
class Conversation:
    """The messages a span carries: what went in, and what came out."""

    input: list[Message]
    output: list[Message]

    @property
    def is_final(self) -> bool:
        """True when the model answered rather than asking for tools."""
        return not any(message.tool_calls for message in self.output)


def span_conversation(span: SpanRecord) -> Conversation | None:
    """The conversation recorded on `span`, or None when it carries no messages.

    Raises `UnreadableMessageError` when it carries messages in a shape no adapter reads.
    """
    try:
        return _conversation(span.attributes)
    except UnreadableMessageError:
        raise
    except MALFORMED as exc:  # hostile or broken attributes (OTLP input is anyone's)
        raise UnreadableMessageError(
            f"span {span.name!r} carries malformed messages ({type(exc).__name__}: "
            f"{str(exc)[:200]})"
        ) from None


def _conversation(attributes: Mapping[str, Any]) -> Conversation | None:
    system = system_instructions(attributes.get("gen_ai.system_instructions"))
    if "gen_ai.input.messages" in attributes or "gen_ai.output.messages" in attributes:
        return Conversation(
            system + _json_messages(attributes.get("gen_ai.input.messages"), "user"),
            _json_messages(attributes.get("gen_ai.output.messages"), "assistant"),
        )
    if "pydantic_ai.all_messages" in attributes:
        return Conversation(
            system + _json_messages(attributes["pydantic_ai.all_messages"], "user"), []
        )
    flattened_in = _flattened_messages(attributes, "llm.input_messages.")
    flattened_out = _flattened_messages(attributes, "llm.output_messages.")
    if flattened_in or flattened_out:
        return Conversation(flattened_in, flattened_out)
    if "input.value" in attributes or "output.value" in attributes:
        return Conversation(
            _value_messages(attributes.get("input.value"), "user"),
            _value_messages(attributes.get("output.value"), "assistant"),
        )
    return None


def tool_exchange(span: SpanRecord) -> tuple[ToolCall, Message] | None:
    """A tool span as the call and the result message it stands for; None without a result."""
    attributes = span.attributes
    if "gen_ai.tool.call.result" in attributes:
        name = attributes.get("gen_ai.tool.name")
        arguments = attributes.get("gen_ai.tool.call.arguments")
        result = attributes["gen_ai.tool.call.result"]
    elif "output.value" in attributes:
        name = attributes.get("tool.name")
        arguments = attributes.get("input.value")
        result = attributes["output.value"]
    else:
        return None
    call_id = str(
        attributes.get("gen_ai.tool.call.id")
        or attributes.get("tool_call.id")
        or f"span-{span.span_id:016x}"
    )
    name = str(name or span.name)
    call = ToolCall(id=call_id, name=name, arguments=_text(arguments) if arguments else "{}")
    return call, Message(role="tool", content=_text(result), tool_call_id=call_id, name=name)


_OI_DOCUMENTS = "retrieval.documents."
_OI_CONTENT = ".document.content"


def retrieved_documents(span: SpanRecord) -> list[str]:
    """The text of each document a retrieval span returned, in order; documents recorded
    without their text (ids and scores only) are left out.

    Raises `UnreadableMessageError` when `gen_ai.retrieval.documents` is in a shape no
    reading fits: scoring without documents the application retrieved would be wrong.
    """
    attributes = span.attributes
    if "gen_ai.retrieval.documents" in attributes:
        return _genai_documents(span.name, attributes["gen_ai.retrieval.documents"])
    by_index: dict[int, str] = {}
    for key, value in attributes.items():
        if key.startswith(_OI_DOCUMENTS) and key.endswith(_OI_CONTENT):
            index = key[len(_OI_DOCUMENTS) : -len(_OI_CONTENT)]
            if index.isdigit() and isinstance(value, str) and value.strip():
                by_index[int(index)] = value
    return [by_index[index] for index in sorted(by_index)]


def _genai_documents(name: str, value: object) -> list[str]:
    try:
        parsed = json.loads(value) if isinstance(value, str) else value
    except (ValueError, RecursionError):
        parsed = None
    if not isinstance(parsed, Sequence) or isinstance(parsed, str):
        raise UnreadableMessageError(
            f"span {name!r}: gen_ai.retrieval.documents is not a JSON list of documents"
        )
    documents = []
    for item in parsed:
        # The convention's objects carry id and score, and the text when content is captured.
        text = item.get("content", item.get("text")) if isinstance(item, Mapping) else item
        if isinstance(text, str) and text.strip():
            documents.append(text)
    return documents


def _json_messages(value: object, default_role: Literal["user", "assistant"]) -> list[Message]:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return coerce_messages(value, default_role=default_role)
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise UnreadableMessageError(
            f"expected a JSON list of messages, got {type(value).__name__}"
        )
    return coerce_messages(value, default_role=default_role)


def _value_messages(value: object, default_role: Literal["user", "assistant"]) -> list[Message]:
    """`input.value` / `output.value`: JSON messages when they parse as such, else text."""
    if not isinstance(value, str) or not value:
        return []
    try:
        parsed = json.loads(value)
    except ValueError:
        return [Message(role=default_role, content=value)]
    if isinstance(parsed, list) and parsed and all(isinstance(item, Mapping) for item in parsed):
        try:
            return coerce_messages(parsed, default_role=default_role)
        except UnreadableMessageError:
            pass  # a JSON list that is data, not messages: the text is what was said
    if isinstance(parsed, Mapping) and isinstance(parsed.get("messages"), list):
        return coerce_messages(parsed["messages"], default_role=default_role)
    return [Message(role=default_role, content=value)]


def _flattened_messages(attributes: Mapping[str, Any], prefix: str) -> list[Message]:
    """OpenInference's `llm.input_messages.0.message.role`-style keys, back into messages."""
    by_index: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        index_text, _, rest = key[len(prefix) :].partition(".message.")
        if not index_text.isdigit() or not rest:
            continue
        _set_path(by_index.setdefault(int(index_text), {}), rest.split("."), value)
    return coerce_messages([_openinference_message(by_index[index]) for index in sorted(by_index)])


def _set_path(target: dict[str, Any], path: list[str], value: object) -> None:
    for step in path[:-1]:
        target = target.setdefault(step, {})
    target[path[-1]] = value


def _openinference_message(fields: Mapping[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": fields.get("role", "assistant")}
    content = fields.get("content")
    if content is None and isinstance(fields.get("contents"), Mapping):
        parts = [
            fields["contents"][key].get("message_content", {})
            for key in sorted(fields["contents"], key=int)
        ]
        content = "\n".join(str(part.get("text")) for part in parts if part.get("text"))
    message["content"] = content
    calls = fields.get("tool_calls")
    if isinstance(calls, Mapping):
        message["tool_calls"] = [
            {
                "id": call.get("tool_call", {}).get("id", ""),
                "function": call.get("tool_call", {}).get("function", {}),
            }
            for _, call in sorted(calls.items(), key=lambda item: int(item[0]))
        ]
    for key in ("tool_call_id", "name"):
        if key in fields:
            message[key] = fields[key]
    return message


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
