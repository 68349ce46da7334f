"""What a judge reads of a Chat Completions reply, taken from the raw HTTP body.

The SDK's response model is built field by field for every reply (a few hundred microseconds
of CPU, on a service a good share of what a score costs), and a judge reads five of those
fields. The request still goes through the SDK, with the client's configuration and errors;
only the 200 body is read here, with `json.loads`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from openai import AsyncOpenAI

from agentscore._redact import scrub
from agentscore._wire.http import http_module as sdk_http_module

__all__ = [
    "PREVIEW_CHARS",
    "BadBody",
    "ChatReply",
    "post_chat_completion",
    "read_chat_reply",
    "scrubbed_start",
]


class HttpReply(Protocol):
    """An `httpx` response (the SDK's own or a legacy `httpx` client's), its body read."""

    @property
    def content(self) -> bytes: ...

    @property
    def headers(self) -> Any: ...


class BadBody(ValueError):
    """A 200 whose body is not a chat completion; the message says what it is instead."""


@dataclass(frozen=True, slots=True)
class ChatReply:
    text: str | None  # the first choice's message
    finish_reason: str | None  # the first choice's
    finish_reasons: list[str]  # every choice's, for the chat span
    input_tokens: int | None  # None: the reply reported no usage
    output_tokens: int | None
    response_id: str | None
    model: str | None


async def post_chat_completion(
    client: AsyncOpenAI, body: dict[str, Any], *, max_retries: int
) -> HttpReply:
    """POST /chat/completions as `agentscore._wire.clients.create_chat_completion` does (same
    client, endpoint, retries, errors), answered with the HTTP response itself."""
    response: HttpReply = await client.post(
        "/chat/completions",
        body=body,
        # The SDK hands back any `httpx` client's response for this type, as it came.
        cast_to=_SDK_RESPONSE,
        options={"max_retries": max_retries},
    )
    return response


def _sdk_response() -> type[Any]:
    """The response class the installed SDK hands back as it came."""
    response: type[Any] = sdk_http_module().Response
    return response


_SDK_RESPONSE = _sdk_response()
# How much of a bad body an error message quotes.
PREVIEW_CHARS = 300


def read_chat_reply(response: HttpReply) -> ChatReply:
    """The reply in `response`, or `BadBody`: a cut or non-JSON body (a proxy's error page),
    or JSON of another shape. As lenient as the SDK's model: a field of the wrong type reads
    as missing."""
    try:
        data = json.loads(response.content)
    except RecursionError:  # nesting deeper than the parser goes: nothing a judge sends
        raise BadBody(f"a body nested too deep to read: {_preview(response.content)}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        content_type = str(response.headers.get("content-type", "")).split(";")[0]
        if not content_type.endswith("json"):
            raise BadBody(
                f"a body that is not a chat completion: {_preview(response.content)}"
            ) from None
        raise BadBody(f"a body that is not valid JSON ({exc})") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list):
        raise BadBody(f"a body that is not a chat completion: {_preview(response.content)}")
    first = _mapping(choices[0]) if choices else {}
    message = _mapping(first.get("message"))
    reasons = [_text(_mapping(choice).get("finish_reason")) for choice in choices]
    usage = data.get("usage")
    tokens = _mapping(usage)
    return ChatReply(
        text=_text(message.get("content")),
        finish_reason=_text(first.get("finish_reason")),
        finish_reasons=[reason for reason in reasons if reason],
        input_tokens=None if usage is None else _count(tokens.get("prompt_tokens")),
        output_tokens=None if usage is None else _count(tokens.get("completion_tokens")),
        response_id=_text(data.get("id")),
        model=_text(data.get("model")),
    )


def _preview(content: bytes) -> str:
    """The start of a body, for an error message: a proxy's error page can be megabytes."""
    text = scrubbed_start(content)
    if len(text) > PREVIEW_CHARS or len(content) > 4 * PREVIEW_CHARS:
        return f"{text[:PREVIEW_CHARS]!r} (of {len(content):,} bytes)"
    return repr(text)


def scrubbed_start(content: bytes) -> str:
    """The start of a body (enough to quote `PREVIEW_CHARS` of it), secrets replaced before
    any cut: a key echoed across the cut would leave its first characters behind."""
    return scrub(content[: 4 * PREVIEW_CHARS].decode(errors="replace"))


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
