"""A lean HTTP/1.1 client for the one request a judge makes: POST a JSON body, read the reply.

Through the `openai` SDK (option models, `httpx`, `httpcore`, two socket writes, a liveness
poll of every pooled connection) a request costs about 0.8 ms of CPU; on `agentscore serve`
with a 50 ms judge that was over a quarter of everything a score cost. This client costs
about 0.17 ms for the same exchange (`benchmarks/judge_transport.py`): the request in one
write on a kept-alive connection, the reply framed by Content-Length or chunks, nothing
more. It runs on anyio streams, so on asyncio and trio alike; each loop keeps its own
connections. No proxies, no HTTP/2, no redirects: `agentscore.judges._transport` sends
through the SDK whatever needs them.

Errors are `HttpError`: no answer at all (refused, reset, TLS, a malformed or oversized
reply, the deadline). An HTTP status, 4xx and 5xx included, is an answer and is returned.
"""

from __future__ import annotations

import re
import select
import socket
import ssl
import time
import zlib
from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio
import anyio.abc
from anyio.streams.tls import TLSStream

__all__ = ["HttpBodyTooLarge", "HttpEndpoint", "HttpError", "HttpResponse"]

_MAX_HEAD_BYTES = 64 * 1024
_READ_BYTES = 65_536
# A server closes a connection it has kept idle (5 s for uvicorn and Node, 60-75 s for
# nginx); one idle longer than this is closed here rather than tried.
_MAX_IDLE_SECONDS = 30.0
_MAX_IDLE_CONNECTIONS = 64
# Framing numbers as the grammar has them, no more. `str.isdigit` took "²", which `int` then
# refused (a ValueError out of `post`); `int(_, 16)` took "-", "+", "_" and "0x", and a negative
# chunk size lowered the running total so that the chunks after it passed the body's bound; a
# status "2" or "099" counted as a 1xx, and the next head was awaited until the deadline.
_STATUS_CODE = re.compile(r"[1-9][0-9][0-9]")
_DIGITS = re.compile(r"[0-9]+")
_HEX_DIGITS = re.compile(rb"[0-9A-Fa-f]+")
# What a request target may hold unencoded (RFC 3986's unreserved, sub-delims, ":@/?%").
_REQUEST_TARGET = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*")


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    headers: dict[str, str]  # names lower-cased; a repeated header keeps its last value
    content: bytes


class HttpError(Exception):
    """The endpoint gave no usable answer; `timed_out` when the deadline passed first."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class HttpBodyTooLarge(HttpError):
    """The reply's body, decoded, is over the bound: a runaway, never read whole."""


class HttpEndpoint:
    """Kept-alive connections to one origin, for the event loop that opened them.

    `base_url` is the origin and path prefix (`https://api.openai.com/v1`); `headers` are
    sent with every request. Each request must finish within `timeout` seconds, connecting
    included, and its reply body (decoded) within `max_body_bytes`.
    """

    def __init__(
        self,
        base_url: str,
        *,
        headers: dict[str, str],
        timeout: float,
        max_body_bytes: int,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        if not _REQUEST_TARGET.fullmatch(url.path + url.query):
            # A space or a line break would end the request line early: sent as is, the
            # rest would be read as headers (request smuggling).
            raise ValueError("a base URL whose path or query needs percent-encoding")
        self._tls = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port or (443 if self._tls else 80)
        self._prefix = url.path.rstrip("/")
        self._query = url.query
        self._ssl_context = ssl_context if self._tls else None
        self._timeout = timeout
        self._max_body_bytes = max_body_bytes
        default_port = self._port == (443 if self._tls else 80)
        host = f"[{self._host}]" if ":" in self._host else self._host
        lines = [f"Host: {host if default_port else f'{host}:{self._port}'}"]
        lines += _header_lines(headers)
        # Identity, so a reply is never a compressed body to bound; gzip is still read.
        lines.append("Accept-Encoding: identity")
        self._headers = ("\r\n".join(lines) + "\r\n").encode("latin-1")
        # (connection, idle since, its socket: looked up once, `extra` costs 5 us a call)
        self._idle: list[tuple[anyio.abc.ByteStream, float, socket.socket | None]] = []

    async def post(self, path: str, body: bytes, content_type: str) -> HttpResponse:
        target = f"{self._prefix}{path}" + (f"?{self._query}" if self._query else "")
        request = b"".join(
            (
                f"POST {target} HTTP/1.1\r\n".encode("latin-1"),
                self._headers,
                f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode(),
                body,
            )
        )
        try:
            with anyio.fail_after(self._timeout):
                stream, sock = await self._take_idle() or await self._connect()
                return await self._exchange(stream, sock, request)
        except TimeoutError:
            raise HttpError(
                f"no reply within {self._timeout:g} s from {self._origin()}", timed_out=True
            ) from None

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for stream, _, _ in idle:
            await anyio.aclose_forcefully(stream)

    async def _take_idle(self) -> tuple[anyio.abc.ByteStream, socket.socket | None] | None:
        now = time.monotonic()
        while self._idle:
            stream, since, sock = self._idle.pop()
            if now - since < _MAX_IDLE_SECONDS and _still_open(sock):
                return stream, sock
            await anyio.aclose_forcefully(stream)
        return None

    async def _connect(self) -> tuple[anyio.abc.ByteStream, socket.socket | None]:
        try:
            stream: anyio.abc.ByteStream = await anyio.connect_tcp(self._host, self._port)
            if self._tls:
                tcp = stream
                try:
                    stream = await TLSStream.wrap(
                        tcp,
                        hostname=self._host,
                        ssl_context=self._ssl_context,
                        standard_compatible=False,
                    )
                except BaseException:
                    # A failed or cancelled handshake leaves the socket open (TLSStream.wrap
                    # does not close it): the server held it until its own timeout.
                    await anyio.aclose_forcefully(tcp)
                    raise
        except (OSError, anyio.BrokenResourceError, ssl.SSLError) as exc:
            raise HttpError(f"cannot connect to {self._origin()}: {_reason(exc)}") from None
        return stream, stream.extra(anyio.abc.SocketAttribute.raw_socket, None)

    async def _exchange(
        self, stream: anyio.abc.ByteStream, sock: socket.socket | None, request: bytes
    ) -> HttpResponse:
        reader = _Reader(stream, self._max_body_bytes)
        try:
            try:
                await stream.send(request)
                response, keep_alive = await reader.response()
            except (OSError, anyio.BrokenResourceError, anyio.EndOfStream, ssl.SSLError) as exc:
                # Not resent here: the server may have read the request. The judge's own
                # retries decide, counted and spaced like any other connection failure.
                reason = (
                    "closed without answering"
                    if isinstance(exc, anyio.EndOfStream)
                    else _reason(exc)
                )
                raise HttpError(f"connection to {self._origin()} failed: {reason}") from None
        except BaseException:
            # Cancelled or failed midway: what is left on the wire belongs to no request.
            await anyio.aclose_forcefully(stream)
            raise
        if keep_alive and len(self._idle) < _MAX_IDLE_CONNECTIONS:
            self._idle.append((stream, time.monotonic(), sock))
        else:
            await anyio.aclose_forcefully(stream)
        return response

    def _origin(self) -> str:
        return f"{'https' if self._tls else 'http'}://{self._host}:{self._port}"


class _Reader:
    """Reads one response from `stream`, bounded in every dimension an attacker controls."""

    def __init__(self, stream: anyio.abc.ByteStream, max_body_bytes: int) -> None:
        self._stream = stream
        self._max_body_bytes = max_body_bytes
        self._buffer = bytearray()
        self._answered = False

    async def response(self) -> tuple[HttpResponse, bool]:
        while True:
            status, version, headers = await self._head()
            if status >= 200:
                break  # 1xx (100 Continue, 103 Early Hints) come before the real answer
        if status in (204, 304):
            # No body, whatever the headers say (RFC 9112 6.3). Read to the connection's end
            # instead, a kept-alive one waited until the deadline.
            content, framed = b"", True
        else:
            content, framed = await self._body(headers)
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", ""):
            content = self._decode(content, encoding)
        connection = headers.get("connection", "").lower()
        # Bytes past the reply answer no request of ours (a 408 a server writes before it
        # closes an idle connection): read with the next request, they would be its answer.
        keep_alive = (
            framed
            and not self._buffer
            and ("keep-alive" in connection if version == "HTTP/1.0" else "close" not in connection)
        )
        return HttpResponse(status, headers, content), keep_alive

    async def _head(self) -> tuple[int, str, dict[str, str]]:
        end = await self._find(b"\r\n\r\n", _MAX_HEAD_BYTES, "the reply's headers")
        head = bytes(self._buffer[:end]).decode("latin-1")
        del self._buffer[: end + 4]
        status_line, *lines = head.split("\r\n")
        version, _, rest = status_line.partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not _STATUS_CODE.fullmatch(code):
            raise HttpError(f"not an HTTP/1.x reply: {status_line[:80]!r}")
        headers: dict[str, str] = {}
        for line in lines:
            name, colon, value = line.partition(":")
            if colon:
                headers[name.strip().lower()] = value.strip()
        return int(code), version, headers

    async def _body(self, headers: dict[str, str]) -> tuple[bytes, bool]:
        """The body, and whether its end was framed (so the connection can carry another)."""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return await self._chunks(), True
        length = headers.get("content-length")
        if length is not None:
            if not _DIGITS.fullmatch(length):
                raise HttpError(f"a reply with Content-Length {length[:40]!r}")
            size = int(length)
            self._check_size(size)
            await self._fill(size)
            content = bytes(self._buffer[:size])
            del self._buffer[:size]
            return content, True
        while await self._read(required=False):  # framed by the connection's end
            self._check_size(len(self._buffer))
        content = bytes(self._buffer)
        self._buffer.clear()
        return content, False

    async def _chunks(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            end = await self._find(b"\r\n", 1024, "a chunk's size line")
            size_text = bytes(self._buffer[:end]).split(b";", 1)[0].strip()
            del self._buffer[: end + 2]
            if not _HEX_DIGITS.fullmatch(size_text):
                raise HttpError(f"a chunk size of {size_text[:40]!r}")
            size = int(size_text, 16)
            if size == 0:
                while (end := await self._find(b"\r\n", _MAX_HEAD_BYTES, "trailers")) > 0:
                    del self._buffer[: end + 2]
                del self._buffer[:2]
                return b"".join(parts)
            total += size
            self._check_size(total)
            await self._fill(size + 2)
            parts.append(bytes(self._buffer[:size]))
            del self._buffer[: size + 2]

    def _decode(self, content: bytes, encoding: str) -> bytes:
        if encoding not in ("gzip", "x-gzip", "deflate"):
            raise HttpError(f"a reply in a content encoding not asked for: {encoding[:40]!r}")
        wbits = 47 if encoding != "deflate" else 15  # 47: gzip or zlib header, detected
        decoder = zlib.decompressobj(wbits)
        try:
            # One byte over the bound is enough to know the bound is passed (a zip bomb).
            decoded = decoder.decompress(content, self._max_body_bytes + 1)
        except zlib.error as exc:
            raise HttpError(f"a {encoding} body that does not decode: {exc}") from None
        self._check_size(len(decoded))
        if not decoder.eof:  # cut short: what decoded is part of a reply, not a reply
            raise HttpError(f"a {encoding} body that ends before its compressed stream does")
        return decoded

    def _check_size(self, size: int) -> None:
        if size > self._max_body_bytes:
            raise HttpBodyTooLarge(f"a reply body over {self._max_body_bytes:,} bytes")

    async def _find(self, marker: bytes, limit: int, what: str) -> int:
        start = 0
        while (end := self._buffer.find(marker, start)) < 0:
            if len(self._buffer) > limit:
                raise HttpError(f"{what} longer than {limit:,} bytes")
            start = max(0, len(self._buffer) - len(marker) + 1)
            await self._read(required=True)
        if end > limit:  # found in the read that passed the limit: still over it
            raise HttpError(f"{what} longer than {limit:,} bytes")
        return end

    async def _fill(self, size: int) -> None:
        while len(self._buffer) < size:
            await self._read(required=True)

    async def _read(self, *, required: bool) -> bool:
        try:
            data = await self._stream.receive(_READ_BYTES)
        except anyio.EndOfStream:
            if not required:
                return False
            if not self._answered:
                raise  # closed without a word: a connection failure, worded by the caller
            raise HttpError("the connection closed before the reply ended") from None
        self._answered = True
        self._buffer += data
        return True


_FRAMED_HERE = frozenset(
    ("host", "content-length", "content-type", "accept-encoding", "connection", "transfer-encoding")
)


def _header_lines(headers: dict[str, str]) -> list[str]:
    """The caller's headers, less those this client frames itself. A CR or LF in one would
    end it early and start another (header injection), so it is refused, not sent."""
    lines = []
    for name, value in headers.items():
        if name.lower() in _FRAMED_HERE:
            continue
        if any(char in name + value for char in "\r\n\0") or ":" in name:
            raise ValueError(f"the header {name!r} has a character a header cannot carry")
        lines.append(f"{name}: {value}")
    return lines


def _still_open(sock: socket.socket | None) -> bool:
    """Whether an idle kept-alive connection can carry a request: the server closes one it
    has kept idle long enough, and a request sent on it would fail. An idle connection has
    nothing to read; one the peer closed stays readable (its FIN, a TLS close_notify, stray
    bytes), even after asyncio's transport took them. One zero-timeout poll, as httpcore."""
    if sock is None or sock.fileno() < 0:
        return False
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return not poller.poll(0)


def _reason(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
