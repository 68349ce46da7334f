"""The one HTTP stack under every outbound request: the judge, the score sinks, OTLP export and
`serve --forward`.

The library is the one the installed openai SDK speaks (httpx, or httpx2 from openai 3), so the
judge's requests and everyone else's share one implementation and one policy:

- a redirect is never followed: a 3xx is an answer. Following it would carry the request's
  credentials (an `Authorization` header, an API key, OTLP headers) to whatever origin the
  `Location` names, and a POST that was redirected has stored nothing where it was sent.
- deadlines on every phase: connect, each read, each write, a pooled connection; `post`
  also bounds the whole exchange, headers and body together.
- a reply body is read up to a byte bound, never whole into memory on a server's say-so.
- an error's message is redacted of every secret the process knows before anyone reads it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import anyio
import openai

from agentscore._redact import redact

__all__ = [
    "Deadlines",
    "HttpFailure",
    "HttpReply",
    "async_client",
    "http_module",
    "post",
    "sync_client",
]


@dataclass(frozen=True, slots=True)
class Deadlines:
    """Seconds allowed for each phase of a request, and for the whole of one `post`."""

    connect: float = 5.0
    read: float = 30.0
    write: float = 30.0
    pool: float = 5.0
    total: float = 60.0

    def timeout(self) -> Any:
        return http_module().Timeout(
            connect=self.connect, read=self.read, write=self.write, pool=self.pool
        )


@dataclass(frozen=True, slots=True)
class HttpReply:
    status: int
    headers: Mapping[str, str]
    content: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


class HttpFailure(Exception):
    """No usable answer: refused, reset, TLS, the deadline, or a body over its bound. The
    message holds no secret the process knows; `timed_out` when a deadline passed first;
    `status` when the status line had come before the body failed (a caller to whom the
    status is the whole answer, an OTLP export, may go by it)."""

    def __init__(
        self,
        message: str,
        *,
        timed_out: bool = False,
        too_large: bool = False,
        status: int | None = None,
    ):
        super().__init__(redact(message))
        self.timed_out = timed_out
        self.too_large = too_large
        self.status = status


@functools.cache
def http_module() -> ModuleType:
    """httpx2 under openai 3, httpx under earlier releases (which `openai>=1.66` allows)."""
    if int(openai.__version__.split(".", 1)[0]) >= 3:
        import httpx2

        return httpx2
    import httpx

    return httpx


def async_client(
    deadlines: Deadlines = Deadlines(),
    *,
    headers: Mapping[str, str] | None = None,
    verify: Any = True,
    transport: Any = None,
) -> Any:
    """An async client with the policy: no redirect followed, every phase bounded."""
    return http_module().AsyncClient(
        headers=dict(headers or {}),
        timeout=deadlines.timeout(),
        follow_redirects=False,
        verify=verify,
        transport=transport,
    )


def sync_client(
    deadlines: Deadlines = Deadlines(),
    *,
    headers: Mapping[str, str] | None = None,
    verify: Any = True,
    transport: Any = None,
) -> Any:
    """A blocking client with the same policy, for exporters that run on threads of their own."""
    return http_module().Client(
        headers=dict(headers or {}),
        timeout=deadlines.timeout(),
        follow_redirects=False,
        verify=verify,
        transport=transport,
    )


async def post(
    client: Any,
    url: str,
    *,
    content: bytes,
    headers: Mapping[str, str] | None = None,
    deadlines: Deadlines = Deadlines(),
    max_body: int = 1 << 20,
) -> HttpReply:
    """POST `content` and read the reply, whole exchange within `deadlines.total`.

    Any status is an answer (3xx included: it is not followed). Raises `HttpFailure` when no
    answer came, or when the body is over `max_body` bytes.
    """
    httpx = http_module()
    status: int | None = None
    try:
        with anyio.fail_after(deadlines.total):
            async with client.stream("POST", url, content=content, headers=headers) as reply:
                status = reply.status_code
                body = bytearray()
                async for chunk in reply.aiter_bytes():
                    body += chunk
                    if len(body) > max_body:
                        raise HttpFailure(
                            f"the reply from {_origin(url)} is over {max_body} bytes",
                            too_large=True,
                            status=status,
                        )
                return HttpReply(reply.status_code, dict(reply.headers), bytes(body))
    except TimeoutError as exc:
        raise HttpFailure(
            f"no reply from {_origin(url)} within {deadlines.total:g} s",
            timed_out=True,
            status=status,
        ) from exc
    except httpx.TimeoutException as exc:
        raise HttpFailure(
            f"{type(exc).__name__} from {_origin(url)}", timed_out=True, status=status
        ) from exc
    except httpx.HTTPError as exc:
        raise HttpFailure(
            f"{type(exc).__name__} from {_origin(url)}: {exc}", status=status
        ) from exc


def _origin(url: str) -> str:
    """Scheme, host and port only: a URL's path or query may carry a token."""
    try:
        parsed = http_module().URL(url)
    except Exception:
        return "(an unreadable URL)"
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme}://{parsed.host}{port}"
