"""The judge's lean HTTP/1.1 client (`agentscore.judges._http`) against real sockets.

Every test talks to a raw TCP server on 127.0.0.1 scripted byte for byte per connection, so
what is asserted is what goes over the wire: framing, bounds, keep-alive, retries, deadlines.
The module runs on asyncio and on trio (the `anyio_backend` fixture of conftest).
"""

from __future__ import annotations

import contextlib
import gzip
import socket
import ssl
import threading
import time
import zlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from types import TracebackType

import anyio
import pytest
import sniffio
import trustme

from agentscore.judges import _http
from agentscore.judges._http import HttpBodyTooLarge, HttpEndpoint, HttpError, HttpResponse

pytestmark = pytest.mark.anyio

MAX_BODY = 1 << 20  # the endpoints' bound unless a test says otherwise
JSON = "application/json"


# -- the scripted server ----------------------------------------------------------------------


class Conn:
    """One accepted connection, as its handler sees it (blocking calls, in its own thread)."""

    def __init__(self, server: RawServer, sock: socket.socket, index: int) -> None:
        self.server = server
        self.sock = sock
        self.index = index
        self.requests: list[bytes] = []  # every request read, raw: head and body
        self.after: bytes = b""  # bytes that came when no request was expected
        self.client_closed = threading.Event()  # EOF (or a reset) from the client seen
        self.done = threading.Event()  # the handler has returned and the socket is closed
        self._buffer = bytearray()

    def read_request(self) -> bytes | None:
        """The next request, framed by its Content-Length; None when the client closed."""
        while b"\r\n\r\n" not in self._buffer:
            if not self._recv():
                return None
        end = self._buffer.index(b"\r\n\r\n") + 4
        length = 0
        for line in bytes(self._buffer[:end]).split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(self._buffer) < end + length:
            if not self._recv():
                return None
        request = bytes(self._buffer[: end + length])
        del self._buffer[: end + length]
        self.requests.append(request)
        return request

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_slowly(self, data: bytes, pieces: int, pause: float = 0.005) -> None:
        """In `pieces` writes, so the client's reads end anywhere, mid-line included."""
        step = max(1, len(data) // pieces)
        for start in range(0, len(data), step):
            self.sock.sendall(data[start : start + step])
            time.sleep(pause)

    def wait_eof(self, timeout: float) -> bool:
        """Whether the client closed within `timeout` s; what it sent meanwhile is `after`."""
        deadline = time.monotonic() + timeout
        previous = self.sock.gettimeout()
        try:
            while (left := deadline - time.monotonic()) > 0:
                self.sock.settimeout(left)
                try:
                    if not self._recv():
                        return True
                except TimeoutError:
                    break
            return False
        finally:
            self.sock.settimeout(previous)
            self.after += bytes(self._buffer)
            self._buffer.clear()

    def close_write(self) -> None:
        """FIN to the client, still reading: a client that wrongly reuses it is seen here."""
        self.sock.shutdown(socket.SHUT_WR)

    def _recv(self) -> bool:
        try:
            data = self.sock.recv(65_536)
        except ConnectionResetError:
            data = b""
        if not data:
            self.client_closed.set()
            return False
        self._buffer += data
        return True


Handler = Callable[[Conn], None]


class RawServer:
    """Listens on 127.0.0.1; the i-th connection accepted runs `handlers[i]` (the last one
    for every connection past the list) in a thread of its own."""

    def __init__(self, *handlers: Handler, tls: ssl.SSLContext | None = None) -> None:
        assert handlers
        self._handlers = handlers
        self._tls = tls
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.02)
        self.port: int = self._listener.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.conns: list[Conn] = []
        self.stopping = threading.Event()
        self._failures: list[BaseException] = []
        self._threads: list[threading.Thread] = []

    @property
    def accepted(self) -> int:
        return len(self.conns)

    def __enter__(self) -> RawServer:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stopping.set()
        self._threads[0].join(5)
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)  # wakes a handler blocked in recv
        for thread in self._threads:
            thread.join(5)
        self._listener.close()
        if kind is None and self._failures:
            raise self._failures[0]  # a scripting mistake in a handler, not a client error

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            conn = Conn(self, sock, len(self.conns))
            self.conns.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: Conn) -> None:
        handler = self._handlers[min(conn.index, len(self._handlers) - 1)]
        try:
            conn.sock.settimeout(5.0)
            if self._tls is not None:
                conn.sock = self._tls.wrap_socket(conn.sock, server_side=True)
            handler(conn)
        except OSError:
            pass  # the client went away or failed the handshake: what a test provokes
        except BaseException as exc:
            self._failures.append(exc)
        finally:
            conn.sock.close()
            conn.done.set()


def reply(body: bytes = b"ok", *, status: str = "200 OK", headers: Sequence[str] = ()) -> bytes:
    lines = [f"HTTP/1.1 {status}", *headers, f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def answer_each(make: Callable[[Conn, int], bytes]) -> Handler:
    """Answers every request on the connection with `make(conn, i)` until the client closes."""

    def handler(conn: Conn) -> None:
        while conn.read_request() is not None:
            conn.send(make(conn, len(conn.requests) - 1))

    return handler


def which(conn: Conn, i: int) -> bytes:
    """A reply that says which connection and which of its requests it answers."""
    return reply(f"conn{conn.index} req{i}".encode())


def close_after_one(conn: Conn) -> None:
    """Answers one request, kept-alive as far as the client can tell, then closes."""
    if conn.read_request() is not None:
        conn.send(which(conn, 0))


def read_then_close(conn: Conn) -> None:
    conn.read_request()


def never_answer(conn: Conn) -> None:
    conn.read_request()
    conn.wait_eof(5)


@asynccontextmanager
async def endpoint(
    base_url: str,
    *,
    timeout: float = 5.0,
    max_body_bytes: int = MAX_BODY,
    headers: dict[str, str] | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> AsyncIterator[HttpEndpoint]:
    http = HttpEndpoint(
        base_url,
        headers=headers or {},
        timeout=timeout,
        max_body_bytes=max_body_bytes,
        ssl_context=ssl_context,
    )
    try:
        yield http
    finally:
        await http.aclose()


async def post(http: HttpEndpoint, body: bytes = b'{"q":1}') -> HttpResponse:
    return await http.post("/chat/completions", body, JSON)


async def wait_for(event: threading.Event, timeout: float = 3.0) -> None:
    """Until the server's thread sets `event` (it fails the test if that takes `timeout` s)."""
    assert await anyio.to_thread.run_sync(event.wait, timeout)


async def one_reply(data: bytes) -> HttpResponse:
    """Posts once to a server that answers the request with `data`, then waits to close."""

    def handler(conn: Conn) -> None:
        conn.read_request()
        conn.send(data)
        conn.wait_eof(5)

    with RawServer(handler) as server:
        async with endpoint(server.url) as http:
            return await post(http)


async def one_failure(data: bytes, *, close: bool = False) -> HttpError:
    """Posts once to a server that answers with `data` (then closes, if `close`): the
    HttpError it raised."""

    def handler(conn: Conn) -> None:
        conn.read_request()
        conn.send(data)
        if not close:
            conn.wait_eof(5)

    with RawServer(handler) as server:
        async with endpoint(server.url) as http:
            with pytest.raises(HttpError) as caught:
                await post(http)
    return caught.value


# -- framing ----------------------------------------------------------------------------------


async def test_content_length_body() -> None:
    body = b'{"choices": []}' + bytes(range(256))
    response = await one_reply(
        reply(body, headers=["Content-Type: application/json", "X-Req: a", "x-REQ:  b "])
    )
    assert response.status == 200
    assert response.content == body
    # Names lower-cased, values stripped, a repeated header keeps its last value.
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-req"] == "b"
    assert response.headers["content-length"] == str(len(body))


async def test_an_error_status_is_an_answer() -> None:
    response = await one_reply(
        reply(b'{"error": "slow down"}', status="429 Too Many Requests", headers=["Retry-After: 2"])
    )
    assert (response.status, response.content) == (429, b'{"error": "slow down"}')
    assert response.headers["retry-after"] == "2"


async def test_chunked_body_with_extensions_and_trailers_keeps_the_connection() -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n"
        b"5;name=value\r\nhello\r\n"
        b'1 ; quoted="a;b"\r\n \r\n'
        b"1A\r\n" + b"abcdefghijklmnopqrstuvwxyz" + b"\r\n"
        b"3\r\n\r\n!\r\n"  # a chunk whose data is CRLF and "!"
        b"0;last\r\nX-Checksum: 123\r\nX-Other: trailer\r\n\r\n"
    )

    def handler(conn: Conn) -> None:
        conn.read_request()
        conn.send_slowly(chunked, pieces=len(chunked) // 3)  # a read ends anywhere
        answer_each(which)(conn)

    with RawServer(handler) as server:
        async with endpoint(server.url) as http:
            first = await post(http)
            second = await post(http)
    assert first.status == 200
    assert first.content == b"hello abcdefghijklmnopqrstuvwxyz\r\n!"
    assert first.headers["transfer-encoding"] == "chunked"
    # The trailers were read to their end: the next reply on the connection is read whole.
    assert second.content == b"conn0 req1"
    assert server.accepted == 1


async def test_chunks_and_reply_in_one_write() -> None:
    response = await one_reply(
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    )
    assert response.content == b"abcde"


@pytest.mark.parametrize(
    "status_line", ["HTTP/1.0 200 OK", "HTTP/1.1 200 OK"], ids=["http1.0", "http1.1"]
)
async def test_body_without_length_is_read_to_eof_and_not_reused(status_line: str) -> None:
    def handler(conn: Conn) -> None:
        conn.read_request()
        conn.send(f"{status_line}\r\nContent-Type: text/plain\r\n\r\n".encode())
        conn.send_slowly(b"hello, until the end of the connection", pieces=4)
        conn.close_write()  # EOF for the client, though a request sent here would be read
        conn.wait_eof(5)

    with RawServer(handler, answer_each(which)) as server:
        async with endpoint(server.url) as http:
            first = await post(http)
            second = await post(http)
        await wait_for(server.conns[0].client_closed)
    assert first.content == b"hello, until the end of the connection"
    assert second.content == b"conn1 req0"
    assert server.accepted == 2
    assert len(server.conns[0].requests) == 1
    assert server.conns[0].after == b""  # the second request was never sent on it


@pytest.mark.parametrize(
    ("connection", "reused"),
    [(None, False), ("Connection: keep-alive", True), ("Connection: Keep-Alive", True)],
    ids=["default-close", "keep-alive", "keep-alive-mixed-case"],
)
async def test_http10_reply_reused_only_when_kept_alive(
    connection: str | None, reused: bool
) -> None:
    def http10(conn: Conn, i: int) -> bytes:
        body = f"conn{conn.index} req{i}".encode()
        extra = f"{connection}\r\n" if connection else ""
        return f"HTTP/1.0 200 OK\r\n{extra}Content-Length: {len(body)}\r\n\r\n".encode() + body

    with RawServer(answer_each(http10)) as server:  # never closes first: only the client does
        async with endpoint(server.url) as http:
            first = await post(http)
            second = await post(http)
    assert first.content == b"conn0 req0"
    assert second.content == (b"conn0 req1" if reused else b"conn1 req0")
    assert server.accepted == (1 if reused else 2)


async def test_informational_replies_before_the_answer_are_skipped() -> None:
    response = await one_reply(
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
        + reply(b"the answer", headers=["X-Final: yes"])
    )
    assert response.status == 200
    assert response.content == b"the answer"
    assert response.headers["x-final"] == "yes"
    assert "link" not in response.headers


@pytest.mark.parametrize("status", ["204 No Content", "304 Not Modified"])
async def test_a_reply_that_has_no_body_by_its_status(status: str) -> None:
    # RFC 9112 6.3: a 204 or 304 ends at its headers, whatever they say, and the connection
    # stays usable; read to EOF, it would wait on a kept-alive connection until the deadline.
    def handler(conn: Conn, i: int) -> bytes:
        return f"HTTP/1.1 {status}\r\nX-Req: {i}\r\n\r\n".encode() if i == 0 else which(conn, i)

    with RawServer(answer_each(handler)) as server:
        async with endpoint(server.url, timeout=2.0) as http:
            first = await post(http)
            second = await post(http)
    assert (first.status, first.content) == (int(status[:3]), b"")
    assert second.content == b"conn0 req1"
    assert server.accepted == 1


# -- content encodings and the body bound -----------------------------------------------------


@pytest.mark.parametrize("encoding", ["gzip", "x-gzip", "GZip", "deflate"])
async def test_a_compressed_reply_is_decoded(encoding: str) -> None:
    body = b'{"verdict": "supported"}' * 100
    packed = zlib.compress(body) if encoding == "deflate" else gzip.compress(body)
    response = await one_reply(reply(packed, headers=[f"Content-Encoding: {encoding}"]))
    assert response.content == body
    assert len(packed) < len(body)


async def test_a_gzip_bomb_is_refused_past_the_bound() -> None:
    bomb = gzip.compress(b"\0" * (20 * MAX_BODY), compresslevel=9)
    assert len(bomb) < MAX_BODY // 20  # small on the wire
    error = await one_failure(reply(bomb, headers=["Content-Encoding: gzip"]))
    assert type(error) is HttpBodyTooLarge
    assert str(error) == "a reply body over 1,048,576 bytes"
    assert not error.timed_out


async def test_a_compressed_body_just_within_the_bound_decodes() -> None:
    body = b"x" * MAX_BODY
    response = await one_reply(reply(gzip.compress(body), headers=["Content-Encoding: gzip"]))
    assert response.content == body


async def test_a_content_length_over_the_bound_is_refused_unread() -> None:
    def handler(conn: Conn) -> None:
        conn.read_request()
        conn.send(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n")
        conn.send(b"x" * 1000)  # then nothing: a client reading it all would wait
        conn.wait_eof(5)

    with RawServer(handler) as server:
        async with endpoint(server.url, timeout=5.0) as http:
            started = time.monotonic()
            with pytest.raises(HttpBodyTooLarge, match=r"^a reply body over 1,048,576 bytes$"):
                await post(http)
            elapsed = time.monotonic() - started
        await wait_for(server.conns[0].client_closed)  # and the connection closed
    assert elapsed < 2.0


@pytest.mark.parametrize(
    "chunks",
    [
        b"200000\r\n",  # one chunk of 2 MiB, announced
        b"".join(b"10000\r\n" + b"y" * 0x10000 + b"\r\n" for _ in range(17)),  # 17 x 64 KiB
    ],
    ids=["one-large-chunk", "many-chunks"],
)
async def test_a_chunked_body_over_the_bound_is_refused(chunks: bytes) -> None:
    error = await one_failure(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks)
    assert type(error) is HttpBodyTooLarge


async def test_a_body_to_eof_over_the_bound_is_refused() -> None:
    error = await one_failure(b"HTTP/1.0 200 OK\r\n\r\n" + b"z" * (MAX_BODY + 1), close=True)
    assert type(error) is HttpBodyTooLarge


async def test_an_encoding_not_asked_for_is_an_error() -> None:
    error = await one_failure(reply(b"\x1b\x00\x00", headers=["Content-Encoding: br"]))
    assert type(error) is HttpError
    assert str(error) == "a reply in a content encoding not asked for: 'br'"
    assert not error.timed_out


async def test_a_gzip_body_cut_short_is_an_error_not_a_partial_reply() -> None:
    whole = gzip.compress(b'{"choices": []}' * 50)
    cut = whole[: len(whole) // 2]
    error = await one_failure(reply(cut, headers=["Content-Encoding: gzip"]))
    assert type(error) is HttpError
    assert str(error) == "a gzip body that ends before its compressed stream does"


async def test_a_gzip_body_that_does_not_decode_is_an_error() -> None:
    error = await one_failure(reply(b"not gzip at all", headers=["Content-Encoding: gzip"]))
    assert type(error) is HttpError
    assert str(error).startswith("a gzip body that does not decode: ")


# -- malformed replies ------------------------------------------------------------------------


@pytest.mark.parametrize("ends", [True, False], ids=["whole-at-once", "never-ending"])
async def test_headers_over_64_kib_are_an_error(ends: bool) -> None:
    big = b"HTTP/1.1 200 OK\r\n" + b"".join(
        b"X-Filler-%d: %s\r\n" % (i, b"f" * 1000) for i in range(100)
    )
    data = big + b"Content-Length: 2\r\n\r\nok" if ends else big
    started = time.monotonic()
    error = await one_failure(data)
    assert type(error) is HttpError
    assert str(error) == "the reply's headers longer than 65,536 bytes"
    assert not error.timed_out
    assert time.monotonic() - started < 2.0  # not the 5 s deadline


async def test_headers_just_under_64_kib_are_read() -> None:
    filler = b"X-Filler: " + b"f" * (64 * 1024 - 100) + b"\r\n"
    response = await one_reply(b"HTTP/1.1 200 OK\r\n" + filler + b"Content-Length: 2\r\n\r\nok")
    assert response.content == b"ok"


@pytest.mark.parametrize(
    "status_line",
    [
        b"SSH-2.0-OpenSSH_9.6",
        b"HTTP/2 200",
        b"HTTP/1.1 abc OK",
        b"HTTP/1.1 2",
        b"HTTP/1.1 099 Below informational",
        b"HTTP/1.1 \xb200 OK",  # a superscript two: a digit to str.isdigit, not to int
        b"",
        b"\x16\x03\x01\x02\x00",  # a TLS record, as from an https port
    ],
)
async def test_a_garbage_status_line_is_an_error(status_line: bytes) -> None:
    error = await one_failure(status_line + b"\r\nContent-Length: 0\r\n\r\n")
    assert type(error) is HttpError
    assert str(error).startswith("not an HTTP/1.x reply: ")
    assert repr(status_line.decode("latin-1")[:80]) in str(error)


@pytest.mark.parametrize("length", [b"12abc", b"-1", b"+5", b"0x10", b"1 2", b"", b"\xb2"])
async def test_a_content_length_that_is_not_a_number_is_an_error(length: bytes) -> None:
    error = await one_failure(b"HTTP/1.1 200 OK\r\nContent-Length: " + length + b"\r\n\r\nok")
    assert type(error) is HttpError
    assert str(error) == f"a reply with Content-Length {length.decode('latin-1')!r}"


@pytest.mark.parametrize("size", [b"zz", b"-5", b"+5", b"0x5", b"5_0", b"", b"\xb2"])
async def test_a_chunk_size_that_is_not_hex_is_an_error(size: bytes) -> None:
    error = await one_failure(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + size + b"\r\nhello\r\n0\r\n\r\n"
    )
    assert type(error) is HttpError
    assert str(error).startswith("a chunk size of ")


async def test_a_negative_chunk_size_cannot_lift_the_bound() -> None:
    # -FFFFFFFF taken as a size would leave the running total so far below zero that the
    # 2 MiB chunk after it passed the 1 MiB bound.
    error = await one_failure(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"-FFFFFFFF\r\n" + b"200000\r\n" + b"y" * 0x200000 + b"\r\n0\r\n\r\n"
    )
    assert type(error) is HttpError
    assert str(error) == "a chunk size of b'-FFFFFFFF'"


async def test_a_chunk_size_line_over_its_bound_is_an_error() -> None:
    error = await one_failure(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;" + b"e" * 5000 + b"\r\nhello"
    )
    assert str(error) == "a chunk's size line longer than 1,024 bytes"


@pytest.mark.parametrize(
    "cut",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"only ten b",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nhalf a c",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Len",
    ],
    ids=["content-length", "mid-chunk", "between-chunks", "mid-headers"],
)
async def test_a_connection_closed_mid_reply_is_an_error(cut: bytes) -> None:
    error = await one_failure(cut, close=True)
    assert type(error) is HttpError
    assert str(error) == "the connection closed before the reply ended"
    assert not error.timed_out


# -- keep-alive, and idle connections the server closed -------------------------------------------


async def test_sequential_posts_share_one_connection() -> None:
    with RawServer(answer_each(which)) as server:
        async with endpoint(server.url) as http:
            replies = [(await post(http, b"%d" % i)).content for i in range(3)]
    assert replies == [b"conn0 req0", b"conn0 req1", b"conn0 req2"]
    assert server.accepted == 1
    assert [
        request.endswith(b"\r\n\r\n%d" % i) for i, request in enumerate(server.conns[0].requests)
    ] == [True] * 3


async def test_connection_close_from_the_server_is_honoured() -> None:
    def closing(conn: Conn, i: int) -> bytes:
        return reply(f"conn{conn.index} req{i}".encode(), headers=["Connection: close"])

    # The server says close but leaves the socket open: a second request sent on it would
    # be read and answered as "conn0 req1".
    with RawServer(answer_each(closing)) as server:
        async with endpoint(server.url) as http:
            first = await post(http)
            await wait_for(server.conns[0].client_closed)  # closed by the client
            second = await post(http)
    assert (first.content, second.content) == (b"conn0 req0", b"conn1 req0")
    assert server.accepted == 2
    assert len(server.conns[0].requests) == 1


async def test_an_idle_connection_the_server_closed_is_replaced_by_a_new_one() -> None:
    with RawServer(close_after_one, answer_each(which)) as server:
        async with endpoint(server.url) as http:
            first = await post(http)
            await wait_for(server.conns[0].done)  # closed while idle in the pool
            second = await post(http)
            third = await post(http)
    assert (first.content, second.content, third.content) == (
        b"conn0 req0",
        b"conn1 req0",
        b"conn1 req1",
    )
    assert server.accepted == 2


async def test_a_closed_idle_connection_is_never_sent_on() -> None:
    # The idle connection was closed (seen before sending), and the fresh one is closed
    # without an answer: an error, not a third connection, and nothing sent twice.
    with RawServer(close_after_one, read_then_close, answer_each(which)) as server:
        async with endpoint(server.url) as http:
            await post(http)
            await wait_for(server.conns[0].done)
            with pytest.raises(HttpError) as caught:
                await post(http)
        await anyio.sleep(0.2)  # a wrong third attempt would be accepted by now
    assert str(caught.value).startswith(f"connection to http://127.0.0.1:{server.port} failed: ")
    assert server.accepted == 2
    assert [len(conn.requests) for conn in server.conns] == [1, 1]


async def test_an_idle_connection_with_unasked_bytes_is_not_reused() -> None:
    # Some servers write a 408 on a connection they time out, then close it later: read as
    # the answer to the next request, it would be a wrong answer.
    def timing_out(conn: Conn) -> None:
        if conn.read_request() is not None:
            conn.send(which(conn, 0))
            conn.send(reply(b"idle too long", status="408 Request Timeout"))
            conn.wait_eof(5)

    with RawServer(timing_out, answer_each(which)) as server:
        async with endpoint(server.url) as http:
            await post(http)
            await anyio.sleep(0.1)  # the 408 arrives while the connection is idle
            second = await post(http)
    assert (second.status, second.content) == (200, b"conn1 req0")
    assert [len(conn.requests) for conn in server.conns] == [1, 1]


async def test_a_fresh_connection_closed_without_an_answer_is_not_retried() -> None:
    with RawServer(read_then_close, answer_each(which)) as server:
        async with endpoint(server.url) as http:
            with pytest.raises(HttpError) as caught:
                await post(http)
        await anyio.sleep(0.2)  # a wrong retry would be accepted by now
    assert type(caught.value) is HttpError
    assert not caught.value.timed_out
    assert str(caught.value).startswith(f"connection to http://127.0.0.1:{server.port} failed: ")
    assert server.accepted == 1


async def test_a_reused_connection_cut_mid_reply_is_not_retried() -> None:
    # Bytes of a reply came: the request may have been acted on, so it is not sent again.
    def handler(conn: Conn) -> None:
        conn.read_request()
        conn.send(which(conn, 0))
        conn.read_request()
        conn.send(b"HTTP/1.1 200 OK\r\nContent-Len")

    with RawServer(handler, answer_each(which)) as server:
        async with endpoint(server.url) as http:
            await post(http)
            with pytest.raises(HttpError, match=r"^the connection closed before the reply ended"):
                await post(http)
        await anyio.sleep(0.2)
    assert server.accepted == 1


async def test_concurrent_posts_open_a_connection_each_and_pool_them() -> None:
    def slow(conn: Conn, i: int) -> bytes:
        time.sleep(0.05)
        return which(conn, i)

    with RawServer(answer_each(slow)) as server:
        async with endpoint(server.url) as http:
            for _ in range(3):
                async with anyio.create_task_group() as group:
                    for _ in range(2):
                        group.start_soon(post, http)
    assert server.accepted == 2
    assert sorted(len(conn.requests) for conn in server.conns) == [3, 3]


async def test_a_connection_idle_too_long_is_closed_not_tried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_http, "_MAX_IDLE_SECONDS", 0.0)
    with RawServer(answer_each(which)) as server:
        async with endpoint(server.url) as http:
            first = await post(http)
            second = await post(http)
            await wait_for(server.conns[0].client_closed)
    assert (first.content, second.content) == (b"conn0 req0", b"conn1 req0")
    assert len(server.conns[0].requests) == 1


async def test_aclose_closes_the_idle_connections() -> None:
    with RawServer(answer_each(which)) as server:
        async with endpoint(server.url) as http:
            await post(http)
            assert not server.conns[0].client_closed.is_set()
        await wait_for(server.conns[0].client_closed)


# -- the deadline -----------------------------------------------------------------------------


def drip_head(conn: Conn) -> None:
    conn.read_request()
    conn.send(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    while not conn.server.stopping.wait(0.1):
        conn.send(b"a")


def drip_body(conn: Conn) -> None:
    conn.read_request()
    conn.send(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
    while not conn.server.stopping.wait(0.1):
        conn.send(b"b")


def endless_continues(conn: Conn) -> None:
    # Each 1xx is a whole, valid head; only the deadline ends a server that never stops.
    conn.read_request()
    while not conn.server.stopping.wait(0.01):
        conn.send(b"HTTP/1.1 100 Continue\r\n\r\n")


@pytest.mark.parametrize("handler", [never_answer, drip_head, drip_body, endless_continues])
async def test_the_deadline_bounds_the_whole_request(handler: Handler) -> None:
    with RawServer(handler) as server:
        async with endpoint(server.url, timeout=0.5) as http:
            started = time.monotonic()
            with pytest.raises(HttpError) as caught:
                await post(http)
            elapsed = time.monotonic() - started
        await wait_for(server.conns[0].done)  # gave up and closed: the handler saw it
    assert type(caught.value) is HttpError
    assert caught.value.timed_out
    assert str(caught.value) == f"no reply within 0.5 s from http://127.0.0.1:{server.port}"
    assert 0.45 <= elapsed < 3.0


async def test_a_refused_connection_is_an_error_naming_the_origin() -> None:
    with socket.socket() as placeholder:  # bound, never listening: connecting is refused
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
        async with endpoint(f"http://127.0.0.1:{port}/v1", timeout=5.0) as http:
            started = time.monotonic()
            with pytest.raises(HttpError) as caught:
                await post(http)
    assert type(caught.value) is HttpError
    assert not caught.value.timed_out
    assert str(caught.value).startswith(f"cannot connect to http://127.0.0.1:{port}: ")
    assert time.monotonic() - started < 2.0


@pytest.mark.parametrize("reused", [False, True], ids=["fresh", "reused"])
async def test_a_cancelled_request_leaves_no_connection_behind(reused: bool) -> None:
    def slow(conn: Conn) -> None:
        if reused:
            conn.read_request()
            conn.send(which(conn, 0))
        conn.read_request()
        if not conn.wait_eof(3):  # a pooled connection would get this stale answer next
            conn.send(reply(b"stale answer to the cancelled request"))
            answer_each(which)(conn)

    with RawServer(slow, answer_each(which)) as server:
        async with endpoint(server.url) as http:
            if reused:
                assert (await post(http)).content == b"conn0 req0"
            with anyio.move_on_after(0.2) as scope:
                await post(http)
            assert scope.cancelled_caught
            after = await post(http)
            await wait_for(server.conns[0].client_closed)
    assert after.content == b"conn1 req0"
    assert server.accepted == 2


# -- the request on the wire ------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Title": "ok\r\nX-Injected: 1"},
        {"X-Title": "ok\n"},
        {"X-Title": "ok\r"},
        {"X-Title": "nul\0"},
        {"X-Title\r\nX-Injected": "1"},
        {"X-Title: x": "1"},
    ],
)
def test_a_header_that_could_inject_is_refused_at_construction(headers: dict[str, str]) -> None:
    name = next(iter(headers))
    with pytest.raises(ValueError, match="has a character a header cannot carry") as caught:
        HttpEndpoint("http://127.0.0.1:1", headers=headers, timeout=1.0, max_body_bytes=1)
    assert repr(name) in str(caught.value)


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/", "http://", "127.0.0.1:8000", "unix:///x"])
def test_a_base_url_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="not an http"):
        HttpEndpoint(url, headers={}, timeout=1.0, max_body_bytes=1)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1/v 1", "http://127.0.0.1/v1?a=b c", "http://127.0.0.1/v1\r\nX: y"]
)
def test_a_base_url_that_would_break_the_request_line_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="needs percent-encoding"):
        HttpEndpoint(url, headers={}, timeout=1.0, max_body_bytes=1)


async def test_the_request_bytes() -> None:
    body = b'{"messages":[{"content":"caf\xc3\xa9\r\n\\u0000"}]}'
    headers = {
        "Authorization": "Bearer sk-test",
        "OpenAI-Organization": "org-1",
        # Framed by the client itself: never sent as given.
        "Host": "evil.example",
        "content-length": "999",
        "Content-Type": "text/evil",
        "Connection": "close",
        "Accept-Encoding": "br",
        "Transfer-Encoding": "chunked",
    }
    with RawServer(answer_each(which)) as server:
        base = f"{server.url}/openai/deployments/judge/?api-version=2024-06-01"
        async with endpoint(base, headers=headers) as http:
            await http.post("/chat/completions", body, JSON)
            await http.post("/embeddings", b"", "text/plain; charset=utf-8")
    assert server.conns[0].requests == [
        b"POST /openai/deployments/judge/chat/completions?api-version=2024-06-01 HTTP/1.1\r\n"
        b"Host: 127.0.0.1:%d\r\n"
        b"Authorization: Bearer sk-test\r\n"
        b"OpenAI-Organization: org-1\r\n"
        b"Accept-Encoding: identity\r\n"
        b"Content-Type: application/json\r\n"
        b"Content-Length: %d\r\n"
        b"\r\n" % (server.port, len(body)) + body,
        b"POST /openai/deployments/judge/embeddings?api-version=2024-06-01 HTTP/1.1\r\n"
        b"Host: 127.0.0.1:%d\r\n"
        b"Authorization: Bearer sk-test\r\n"
        b"OpenAI-Organization: org-1\r\n"
        b"Accept-Encoding: identity\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\n"
        b"Content-Length: 0\r\n"
        b"\r\n" % server.port,
    ]


async def test_the_request_path_without_a_prefix() -> None:
    with RawServer(answer_each(which)) as server:
        async with endpoint(server.url) as http:
            await post(http)
    assert server.conns[0].requests[0].startswith(b"POST /chat/completions HTTP/1.1\r\n")


# -- HTTPS ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def server_tls(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    return context


@pytest.fixture(scope="module")
def client_tls(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


async def test_https_with_a_trusted_certificate(
    server_tls: ssl.SSLContext, client_tls: ssl.SSLContext
) -> None:
    with RawServer(answer_each(which), tls=server_tls) as server:
        async with endpoint(f"{server.url}/v1", ssl_context=client_tls) as http:
            first = await post(http)
            second = await post(http)
    assert (first.status, first.content, second.content) == (200, b"conn0 req0", b"conn0 req1")
    assert server.accepted == 1
    assert server.conns[0].requests[0].startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")


async def test_https_closed_idle_connection_is_replaced(
    server_tls: ssl.SSLContext, client_tls: ssl.SSLContext
) -> None:
    with RawServer(close_after_one, answer_each(which), tls=server_tls) as server:
        async with endpoint(server.url, ssl_context=client_tls) as http:
            await post(http)
            await wait_for(server.conns[0].done)
            second = await post(http)
    assert second.content == b"conn1 req0"
    assert server.accepted == 2


@pytest.mark.parametrize("trust", ["system", "another-ca"])
async def test_https_with_an_untrusted_certificate_fails(
    server_tls: ssl.SSLContext, trust: str
) -> None:
    context = None
    if trust == "another-ca":
        context = ssl.create_default_context()
        trustme.CA().configure_trust(context)
    with RawServer(answer_each(which), tls=server_tls) as server:
        async with endpoint(server.url, ssl_context=context) as http:
            started = time.monotonic()
            with pytest.raises(HttpError) as caught:
                await post(http)
            # The connection is closed at once, not left to the server's own timeout.
            await wait_for(server.conns[0].done, timeout=2.0)
            elapsed = time.monotonic() - started
    assert elapsed < 2.0
    assert type(caught.value) is HttpError
    assert not caught.value.timed_out
    message = str(caught.value)
    assert message.startswith(f"cannot connect to https://127.0.0.1:{server.port}: ")
    assert "CERTIFICATE_VERIFY_FAILED" in message or "certificate verify failed" in message
    assert all(not conn.requests for conn in server.conns)


async def test_https_handshake_is_within_the_deadline(client_tls: ssl.SSLContext) -> None:
    # A plain TCP server that never speaks TLS: the handshake waits, the deadline ends it.
    with RawServer(never_answer) as server:
        url = f"https://127.0.0.1:{server.port}"
        async with endpoint(url, timeout=0.5, ssl_context=client_tls) as http:
            started = time.monotonic()
            with pytest.raises(HttpError) as caught:
                await post(http)
            await wait_for(server.conns[0].client_closed, timeout=2.0)  # not left open
    assert caught.value.timed_out
    assert str(caught.value) == f"no reply within 0.5 s from https://127.0.0.1:{server.port}"
    assert time.monotonic() - started < 3.0


# -- trio, explicitly -------------------------------------------------------------------------


def test_keep_alive_on_trio_explicitly() -> None:
    async def main(url: str) -> list[bytes]:
        assert sniffio.current_async_library() == "trio"
        async with endpoint(url) as http:
            return [(await post(http)).content for _ in range(2)]

    with RawServer(answer_each(which)) as server:
        contents = anyio.run(main, server.url, backend="trio")
    assert contents == [b"conn0 req0", b"conn0 req1"]
    assert server.accepted == 1
