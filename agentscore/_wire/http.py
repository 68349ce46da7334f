"""The one HTTP stack under every outbound request: the judge, the score sinks, OTLP export and
`serve --forward`.

The library is the one the installed openai SDK speaks (httpx, or httpx2 from openai 3), so the
judge's requests and everyone else's share one implementation and one policy:

- a redirect is never followed: a 3xx is an answer. Following it would carry the request's
  credentials (an `Authorization` header, an API key, OTLP headers) to whatever origin the
  `Location` names, and a POST that was redirected has stored nothing where it was sent.
- deadlines on every phase: connect, each read, each write, a pooled connection; `post`
  also bounds the whole exchange, headers and body together.
- a reply body is read up to a byte bound, never whole into memory on a server's say-so:
  `post` bounds what it reads, and a client made with `max_body` bounds every reply it reads
  (for a caller that reads through another library, the openai SDK), decoded: a few
  kilobytes of gzip can decode to gigabytes.
- an error's message is redacted of every secret the process knows before anyone reads it.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
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
    "origin",
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
    max_body: int | None = None,
) -> Any:
    """An async client with the policy: no redirect followed, every phase bounded. With
    `max_body`, every reply body it reads, decoded, fails past that many bytes
    (`HttpFailure`, `too_large`), however it is read."""
    sent = dict(headers or {})
    hooks: dict[str, list[Any]] = {}
    if max_body is not None:
        if not any(name.lower() == "accept-encoding" for name in sent):
            # Only the encodings decoded here, under the bound (the library would also ask
            # for br or zstd when their packages are installed, and decode those unbounded).
            sent["Accept-Encoding"] = "gzip, deflate"
        hooks["response"] = [functools.partial(_bound_body, max_body=max_body)]
    return http_module().AsyncClient(
        headers=sent,
        timeout=deadlines.timeout(),
        follow_redirects=False,
        verify=verify,
        transport=transport,
        event_hooks=hooks,
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
                            f"the reply from {origin(url)} is over {max_body} bytes",
                            too_large=True,
                            status=status,
                        )
                return HttpReply(reply.status_code, dict(reply.headers), bytes(body))
    except TimeoutError as exc:
        raise HttpFailure(
            f"no reply from {origin(url)} within {deadlines.total:g} s",
            timed_out=True,
            status=status,
        ) from exc
    except httpx.TimeoutException as exc:
        raise HttpFailure(
            f"{type(exc).__name__} from {origin(url)}", timed_out=True, status=status
        ) from exc
    except httpx.HTTPError as exc:
        raise HttpFailure(f"{type(exc).__name__} from {origin(url)}: {exc}", status=status) from exc


def origin(url: str) -> str:
    """Scheme, host and port only: a URL's path or query may carry a token."""
    try:
        parsed = http_module().URL(url)
    except Exception:
        return "(an unreadable URL)"
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme}://{parsed.host}{port}"


# zlib's window bits: 47 reads a gzip or a zlib header, 15 a zlib one.
_DECODED_HERE = {"gzip": 47, "x-gzip": 47, "deflate": 15}


async def _bound_body(response: Any, *, max_body: int) -> None:
    """A response hook: before anyone reads the body, its stream is replaced by one that
    decodes it (gzip, deflate) and fails past `max_body` bytes. A Content-Length over the
    bound is refused unread."""
    where = origin(str(response.request.url))
    headers = response.headers
    encoding = headers.get("content-encoding", "identity").strip().lower()
    decoder = None
    if encoding not in ("", "identity"):
        wbits = _DECODED_HERE.get(encoding)
        if wbits is None:
            raise HttpFailure(
                f"a reply in a content encoding not asked for ({encoding[:40]!r}) from {where}"
            )
        decoder = zlib.decompressobj(wbits)
        # Decoded by the stream below, so the library must not decode it again; the
        # Content-Length (the compressed size) no longer describes the body that is read.
        del headers["content-encoding"]
        headers.pop("content-length", None)
    length = headers.get("content-length", "")
    if length.isascii() and length.isdigit() and int(length) > max_body:
        raise _too_large(max_body, where)
    response.stream = _BoundedBody(response.stream, max_body, decoder, encoding, where)


def _too_large(max_body: int, where: str) -> HttpFailure:
    return HttpFailure(f"a reply body over {max_body:,} bytes from {where}", too_large=True)


class _BoundedBody(http_module().AsyncByteStream):  # type: ignore[misc]
    def __init__(self, stream: Any, max_body: int, decoder: Any, encoding: str, where: str) -> None:
        self._stream = stream
        self._max_body = max_body
        self._decoder = decoder
        self._encoding = encoding
        self._where = where

    @property
    def elapsed(self) -> Any:  # what a response reports as its `elapsed`
        return getattr(self._stream, "elapsed", None)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        fed = False
        chunks = self._stream.__aiter__()
        try:
            async for raw in chunks:
                fed = fed or bool(raw)
                # One byte past the bound is enough to know it is passed.
                chunk = self._decode(raw, self._max_body - size + 1)
                size += len(chunk)
                if size > self._max_body:
                    raise _too_large(self._max_body, self._where)
                if chunk:
                    yield chunk
        finally:
            if isinstance(chunks, AsyncGenerator):
                await chunks.aclose()
        if self._decoder is not None and fed:  # an empty body is empty in any encoding
            rest = self._decoder.flush()
            if size + len(rest) > self._max_body:
                raise _too_large(self._max_body, self._where)
            if not self._decoder.eof:  # cut short: what decoded is part of a body, not one
                raise HttpFailure(
                    f"a {self._encoding} body that ends before its compressed stream does, "
                    f"from {self._where}"
                )
            if rest:
                yield rest

    async def aclose(self) -> None:
        await self._stream.aclose()

    def _decode(self, raw: bytes, limit: int) -> bytes:
        if self._decoder is None:
            return raw
        try:
            decoded: bytes = self._decoder.decompress(raw, limit)
        except zlib.error as exc:
            raise HttpFailure(
                f"a {self._encoding} body that does not decode ({exc}), from {self._where}"
            ) from None
        return decoded
