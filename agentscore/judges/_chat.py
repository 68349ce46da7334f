"""A judge's Chat Completions exchange, through the openai SDK.

A judge that builds its own client (`base_url`, `api_key`, or the SDK's environment) gets an
`AsyncOpenAI` whose `http_client` is agentscore's (`agentscore._wire.http`): no redirect
followed, every phase and the whole request within `timeout`, the reply body bounded as it is
read. A client the user passes in is used as it is. The SDK makes no retry of its own (the
judge's pass the request gate), and the 200 body is read here: a judge needs five of its
fields, not the SDK's response model built field by field. Every failure is a `ChatFailure`
or a `BadBody`, so retries, fallbacks and errors are decided once, in `OpenAIJudge`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

import anyio
import openai
from openai import AsyncOpenAI

from agentscore._redact import scrub
from agentscore._wire.http import Deadlines, HttpFailure, async_client, http_module, origin

__all__ = [
    "PREVIEW_CHARS",
    "BadBody",
    "ChatFailure",
    "ChatReply",
    "FailureKind",
    "own_client",
    "read_chat_reply",
    "send_chat",
]

FailureKind = Literal["status", "timeout", "connection", "too_large", "other"]
# How much of a body an error message quotes.
PREVIEW_CHARS = 300
# Verdicts fill a few kilobytes; a body this large is a runaway or not a judge at all.
_MIN_BODY_BYTES = 4 * 1024 * 1024
_DETAIL_BYTES = 4096


class ChatFailure(Exception):
    """No chat completion came back. `status` is the HTTP status when the endpoint answered
    with one; `headers` are that answer's (Retry-After)."""

    def __init__(
        self,
        message: str,
        kind: FailureKind,
        *,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        detail: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: FailureKind = kind
        self.status = status
        self.headers: Mapping[str, str] = headers if headers is not None else {}
        # What the endpoint said, longer than the message quotes (what a 400 objects to).
        self.detail = message if detail is None else detail


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


class HttpReply(Protocol):
    """An `httpx` response (the SDK's own or a legacy `httpx` client's), its body read."""

    @property
    def content(self) -> bytes: ...

    @property
    def headers(self) -> Any: ...


def own_client(
    *,
    api_key: str | None,
    base_url: str | None,
    timeout: float,
    max_retries: int,
    max_reply_chars: int,
) -> AsyncOpenAI:
    """The client of a judge configured by URL or environment; the SDK resolves the
    configuration (OPENAI_BASE_URL, OPENAI_API_KEY, organisation and project headers)."""
    deadlines = Deadlines(connect=timeout, read=timeout, write=timeout, pool=timeout, total=timeout)
    return AsyncOpenAI(
        api_key=api_key,
        base_url=base_url,
        timeout=timeout,
        max_retries=max_retries,
        http_client=async_client(deadlines, max_body=max(_MIN_BODY_BYTES, 16 * max_reply_chars)),
    )


async def send_chat(
    client: AsyncOpenAI, body: dict[str, Any], *, deadline: float | None
) -> ChatReply:
    """POST /chat/completions once (the SDK retries nothing), within `deadline` seconds when
    given; the reply, or `ChatFailure` / `BadBody`."""
    where = origin(str(client.base_url))
    try:
        with anyio.fail_after(deadline):
            response: HttpReply = await client.post(
                "/chat/completions",
                body=body,
                # The SDK hands back any `httpx` client's response for this type, as it came.
                cast_to=_SDK_RESPONSE,
                options={"max_retries": 0},
            )
    except TimeoutError:
        within = f" within {deadline:g} s" if deadline is not None else ""
        raise ChatFailure(f"no reply{within} from {where}", "timeout") from None
    except HttpFailure as exc:  # the body's bound, from agentscore's client (openai 3)
        raise _refused(exc) from None
    except openai.APIStatusError as exc:
        reply = exc.response
        raise ChatFailure(
            _status_message(reply.status_code, reply.content, reply.headers),
            "status",
            status=reply.status_code,
            headers=reply.headers,
            detail=reply.content[:_DETAIL_BYTES].decode(errors="replace"),
        ) from None
    except openai.APITimeoutError as exc:
        raise ChatFailure(f"{_cause_name(exc)} from {where}", "timeout") from None
    except openai.APIConnectionError as exc:
        if isinstance(exc.__cause__, HttpFailure):  # the same, as earlier SDKs wrap it
            raise _refused(exc.__cause__) from None
        raise ChatFailure(_no_answer(exc, where), "connection") from None
    except openai.OpenAIError as exc:
        raise ChatFailure(str(exc), "other") from None
    return read_chat_reply(response)


# The response class of the HTTP library the installed SDK speaks (httpx2 or httpx).
_SDK_RESPONSE: type[Any] = http_module().Response


def _refused(exc: HttpFailure) -> ChatFailure:
    kind: FailureKind = (
        "too_large" if exc.too_large else "timeout" if exc.timed_out else "connection"
    )
    return ChatFailure(str(exc), kind)


def _cause_name(exc: BaseException) -> str:
    cause = exc.__cause__
    return type(cause if cause is not None else exc).__name__


def _no_answer(exc: openai.APIConnectionError, where: str) -> str:
    """What went wrong on the way (refused, reset, TLS), which the SDK's "Connection error."
    does not say: the first words down the chain of causes (on trio, a TLS failure's
    `ConnectError` says nothing, the `SSLError` under it does)."""
    said = ""
    cause: BaseException | None = exc.__cause__
    for _ in range(8):
        if cause is None or said:
            break
        said = str(cause)
        cause = cause.__cause__ or cause.__context__
    return (
        f"{_cause_name(exc)} from {where}: {said}" if said else f"{_cause_name(exc)} from {where}"
    )


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


def _status_message(status: int, content: bytes, headers: Mapping[str, str]) -> str:
    """As the SDK words it ("Error code: 429 - {...}"), the body cut to a preview: an error
    page can be megabytes, and the message goes into results and logs. A redirect is not
    followed (a judge's POST would become a GET, or carry its key elsewhere); it is named."""
    location = headers.get("location")
    if 300 <= status < 400 and location:
        return f"Error code: {status} - redirected to {_without_secrets(location)}"
    text = _scrubbed_start(content).strip()
    try:
        detail: object = json.loads(text)
    except ValueError:
        detail = text
    shown = str(detail)
    if len(shown) > PREVIEW_CHARS or len(content) > 4 * PREVIEW_CHARS:
        shown = f"{shown[:PREVIEW_CHARS]}... (of {len(content):,} bytes)"
    return f"Error code: {status} - {shown}" if shown else f"Error code: {status}"


def _without_secrets(url: str) -> str:
    """A URL less what may carry a credential: user and password, query, fragment; a key in
    the path scrubbed before the cut (else its first characters would be left)."""
    try:
        parts = urlsplit(url[: 4 * PREVIEW_CHARS])
        host, port = parts.hostname or "", parts.port
    except ValueError:  # "http://[x", a port that is not a number: a server's to make up
        return "a URL that does not parse"
    shown = urlunsplit((parts.scheme, f"{host}:{port}" if port else host, parts.path, "", ""))
    return scrub(shown)[:PREVIEW_CHARS]


def _preview(content: bytes) -> str:
    """The start of a body, for an error message: a proxy's error page can be megabytes."""
    text = _scrubbed_start(content)
    if len(text) > PREVIEW_CHARS or len(content) > 4 * PREVIEW_CHARS:
        return f"{text[:PREVIEW_CHARS]!r} (of {len(content):,} bytes)"
    return repr(text)


def _scrubbed_start(content: bytes) -> str:
    """The start of a body (enough to quote `PREVIEW_CHARS` of it), secrets replaced before
    any cut: a key echoed across the cut would leave its first characters behind."""
    return scrub(content[: 4 * PREVIEW_CHARS].decode(errors="replace"))


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
