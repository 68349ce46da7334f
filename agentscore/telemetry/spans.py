"""The agent's spans, per the GenAI conventions: invoke_agent, chat and execute_tool."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from openai.types.chat import ChatCompletion
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from agentscore.messages import Message
from agentscore.telemetry import semconv
from agentscore.telemetry.core import Telemetry

__all__ = [
    "agent_span",
    "chat_span",
    "messages_attribute",
    "record_chat_reply",
    "record_chat_response",
    "tool_span",
]


@contextmanager
def agent_span(
    telemetry: Telemetry,
    *,
    agent_name: str,
    model: str | None = None,
    provider: str | None = None,
    conversation_id: str | None = None,
    current: bool = True,
) -> Iterator[Span]:
    """`current=False` keeps the span out of the context: for a span held open across the
    `yield`s of a generator, where the consumer's code runs in between."""
    attributes: dict[str, Any] = {
        semconv.OPERATION_NAME: "invoke_agent",
        semconv.AGENT_NAME: agent_name,
    }
    if provider:
        attributes[semconv.PROVIDER_NAME] = provider
    if model:
        attributes[semconv.REQUEST_MODEL] = model
    if conversation_id:
        attributes[semconv.CONVERSATION_ID] = conversation_id
        attributes[semconv.SESSION_ID] = conversation_id
    with _span(
        telemetry, f"invoke_agent {agent_name}", SpanKind.INTERNAL, attributes, current=current
    ) as span:
        yield span


@contextmanager
def chat_span(
    telemetry: Telemetry,
    *,
    model: str,
    provider: str,
    temperature: float | None = None,
    agent_name: str | None = None,
    parent: Span | None = None,
) -> Iterator[Span]:
    """With `parent`, a span under it that is not made current (see `agent_span`)."""
    attributes: dict[str, Any] = {
        semconv.OPERATION_NAME: "chat",
        semconv.PROVIDER_NAME: provider,
        semconv.REQUEST_MODEL: model,
    }
    if temperature is not None:
        attributes[semconv.REQUEST_TEMPERATURE] = temperature
    if agent_name:
        attributes[semconv.AGENT_NAME] = agent_name
    with _span(
        telemetry,
        f"chat {model}",
        SpanKind.CLIENT,
        attributes,
        parent=parent,
        current=parent is None,
    ) as span:
        yield span


@contextmanager
def tool_span(telemetry: Telemetry, *, tool_name: str, call_id: str) -> Iterator[Span]:
    attributes = {
        semconv.OPERATION_NAME: "execute_tool",
        semconv.TOOL_NAME: tool_name,
        semconv.TOOL_CALL_ID: call_id,
        semconv.TOOL_TYPE: "function",
    }
    with _span(telemetry, f"execute_tool {tool_name}", SpanKind.INTERNAL, attributes) as span:
        yield span


def record_chat_response(span: Span, response: ChatCompletion) -> None:
    """The response attributes of a chat span: id, model, finish reasons, token usage."""
    if not span.is_recording():
        return
    usage = response.usage
    reasons = [choice.finish_reason for choice in response.choices if choice.finish_reason]
    record_chat_reply(
        span,
        response_id=response.id,
        model=response.model,
        finish_reasons=reasons,
        input_tokens=None if usage is None else usage.prompt_tokens,
        output_tokens=None if usage is None else usage.completion_tokens,
    )


def record_chat_reply(
    span: Span,
    *,
    response_id: str | None,
    model: str | None,
    finish_reasons: Sequence[str],
    input_tokens: int | None,
    output_tokens: int | None,
) -> None:
    """`record_chat_response` for a reply read without the SDK's model (token counts None:
    the reply reported no usage)."""
    if not span.is_recording():
        return
    attributes: dict[str, AttributeValue] = {}
    if response_id:
        attributes[semconv.RESPONSE_ID] = response_id
    if model:
        attributes[semconv.RESPONSE_MODEL] = model
    if finish_reasons:
        attributes[semconv.RESPONSE_FINISH_REASONS] = list(finish_reasons)
    if input_tokens is not None:
        attributes[semconv.USAGE_INPUT_TOKENS] = input_tokens
    if output_tokens is not None:
        attributes[semconv.USAGE_OUTPUT_TOKENS] = output_tokens
    span.set_attributes(attributes)  # one lock and one cleaning pass, not five


def messages_attribute(messages: Sequence[Message]) -> str:
    """Messages in the conventions' JSON shape: role plus parts (text, tool calls, responses)."""
    return json.dumps([_semconv_message(message) for message in messages], ensure_ascii=False)


def _semconv_message(message: Message) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if message.role == "tool":
        parts.append(
            {"type": "tool_call_response", "id": message.tool_call_id, "response": message.content}
        )
    elif message.content:
        parts.append({"type": "text", "content": message.content})
    parts.extend(
        {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
        for call in message.tool_calls
    )
    return {"role": message.role, "parts": parts}


@contextmanager
def _span(
    telemetry: Telemetry,
    name: str,
    kind: SpanKind,
    attributes: dict[str, Any],
    *,
    parent: Span | None = None,
    current: bool = True,
) -> Iterator[Span]:
    context = trace.set_span_in_context(parent) if parent is not None else None
    # Exception messages are not recorded: provider errors can quote keys or content.
    span = telemetry.tracer.start_span(
        name,
        context=context,
        kind=kind,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    )
    try:
        if current:
            with trace.use_span(
                span, end_on_exit=False, record_exception=False, set_status_on_exception=False
            ):
                yield span
        else:
            yield span
    except BaseException as exc:
        span.set_attribute(semconv.ERROR_TYPE, type(exc).__qualname__)
        span.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))
        raise
    finally:
        span.end()
