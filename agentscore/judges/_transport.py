"""How a judge's Chat Completions request reaches the endpoint: one interface, two paths.

A judge that builds its own client (`base_url`, `api_key`, or the SDK's environment) sends
through `agentscore.judges._http`, about a fifth of the SDK's CPU per request; the SDK still
resolves the configuration (OPENAI_BASE_URL, OPENAI_API_KEY, organisation and project
headers). A client the user passes in may carry what only the SDK honours (its own
`http_client` with proxies or certificates, Azure's deployment URLs and token providers),
and so does a proxy set in the environment: those requests go through the SDK. Either path
answers with a `ChatReply` or raises `BadBody` or `ChatFailure`, so retries, fallbacks and
errors are decided once, in `OpenAIJudge`.
"""

from __future__ import annotations

import functools
import json
import ssl
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import openai
from openai import AsyncOpenAI

from agentscore._redact import scrub
from agentscore._wire.http import http_module as sdk_http_module
from agentscore.judges._completion import (
    PREVIEW_CHARS,
    ChatReply,
    post_chat_completion,
    read_chat_reply,
    scrubbed_start,
)
from agentscore.judges._http import HttpBodyTooLarge, HttpEndpoint, HttpError

__all__ = ["ChatFailure", "ChatTransport", "FailureKind", "direct_or_sdk", "sdk_transport"]

FailureKind = Literal["status", "timeout", "connection", "too_large", "other"]
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


class ChatTransport(ABC):
    """Sends a judge's request; `client` is the SDK client its configuration comes from."""

    def __init__(self, client: AsyncOpenAI) -> None:
        self._client = client

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    @property
    def max_retries(self) -> int:
        return self._client.max_retries

    @abstractmethod
    async def post(self, body: dict[str, Any]) -> ChatReply: ...

    async def close(self) -> None:
        await self._client.close()


class _SdkTransport(ChatTransport):
    async def post(self, body: dict[str, Any]) -> ChatReply:
        try:
            response = await post_chat_completion(self._client, body, max_retries=0)
        except openai.APIStatusError as exc:
            raise ChatFailure(
                str(exc), "status", status=exc.status_code, headers=exc.response.headers
            ) from None
        except openai.APITimeoutError as exc:
            raise ChatFailure(str(exc), "timeout") from None
        except openai.APIConnectionError as exc:
            raise ChatFailure(str(exc), "connection") from None
        except openai.OpenAIError as exc:
            raise ChatFailure(str(exc), "other") from None
        return read_chat_reply(response)


class _DirectTransport(ChatTransport):
    """Configured by `client`, which never sends: `endpoint` does."""

    def __init__(self, client: AsyncOpenAI, endpoint: HttpEndpoint) -> None:
        super().__init__(client)
        self._endpoint = endpoint

    async def post(self, body: dict[str, Any]) -> ChatReply:
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        try:
            response = await self._endpoint.post("/chat/completions", payload, "application/json")
        except HttpBodyTooLarge as exc:
            raise ChatFailure(str(exc), "too_large") from None
        except HttpError as exc:
            raise ChatFailure(str(exc), "timeout" if exc.timed_out else "connection") from None
        if not 200 <= response.status < 300:
            raise ChatFailure(
                _status_message(response.status, response.content, response.headers),
                "status",
                status=response.status,
                headers=response.headers,
                detail=response.content[:_DETAIL_BYTES].decode(errors="replace"),
            )
        return read_chat_reply(response)

    async def close(self) -> None:
        await self._endpoint.aclose()
        await super().close()


def sdk_transport(client: AsyncOpenAI) -> ChatTransport:
    return _SdkTransport(client)


def direct_or_sdk(client: AsyncOpenAI, *, timeout: float, max_reply_chars: int) -> ChatTransport:
    """The direct path for a client the judge configured, unless something only the SDK
    honours applies: a proxy from the environment, credentials in the URL, an API key that
    is a callable, a URL or header to encode."""
    base_url = str(client.base_url)
    url = urlsplit(base_url)
    if (
        url.scheme not in ("http", "https")
        or url.username is not None  # credentials in the URL: the SDK sends them as auth
        or not isinstance(client.api_key, str)
        or _proxied(url.scheme, url.hostname or "")
    ):
        return _SdkTransport(client)
    headers = {
        name: value
        for name, value in {**client.default_headers, **client.auth_headers}.items()
        if isinstance(value, str)
    }
    try:
        endpoint = HttpEndpoint(
            base_url,
            headers=headers,
            timeout=timeout,
            max_body_bytes=max(_MIN_BODY_BYTES, 16 * max_reply_chars),
            ssl_context=_ssl_context() if url.scheme == "https" else None,
        )
    except (ValueError, UnicodeError):
        # A URL or header this client does not send as given (one to percent-encode, a
        # header that is not Latin-1): the SDK's transport encodes it, or says what is wrong.
        return _SdkTransport(client)
    return _DirectTransport(client, endpoint)


def _proxied(scheme: str, host: str) -> bool:
    proxies = urllib.request.getproxies()
    if not (proxies.get(scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(host)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """The certificates the SDK's own transport trusts (SSL_CERT_FILE and SSL_CERT_DIR
    honoured), so the two paths accept the same servers. Built once: it reads the store."""
    context: ssl.SSLContext = sdk_http_module().create_ssl_context()
    return context


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


def _status_message(status: int, content: bytes, headers: Mapping[str, str]) -> str:
    """As the SDK words it ("Error code: 429 - {...}"), the body cut to a preview: an error
    page can be megabytes, and the message goes into results and logs. A redirect is not
    followed (a judge's POST would become a GET, or carry its key elsewhere); it is named."""
    location = headers.get("location")
    if 300 <= status < 400 and location:
        return f"Error code: {status} - redirected to {_without_secrets(location)}"
    text = scrubbed_start(content).strip()
    try:
        detail: object = json.loads(text)
    except ValueError:
        detail = text
    shown = str(detail)
    if len(shown) > PREVIEW_CHARS or len(content) > 4 * PREVIEW_CHARS:
        shown = f"{shown[:PREVIEW_CHARS]}... (of {len(content):,} bytes)"
    return f"Error code: {status} - {shown}" if shown else f"Error code: {status}"
