"""`agentscore._wire.http.async_client(max_body=...)`: every reply body it reads is bounded,
decoded, however it is read (the openai SDK reads it whole, with `send`). Against a TCP server
on 127.0.0.1 scripted byte for byte; on asyncio and trio."""

from __future__ import annotations

import gzip
import zlib
from typing import Any

import pytest

from agentscore._wire.http import HttpFailure, async_client, http_module
from tests.support.raw_tcp import Conn, reply, tcp_server

pytestmark = pytest.mark.anyio

MAX_BODY = 1 << 20


def answer(data: bytes) -> Any:
    def handler(conn: Conn) -> None:
        conn.read_request()
        conn.sock.sendall(data)
        conn.wait_for_the_client_to_close()

    return handler


async def read(data: bytes, *, max_body: int = MAX_BODY) -> Any:
    """POSTs once, as the SDK does (`send`, which reads the body whole): the response."""
    with tcp_server(answer(data)) as server:
        async with async_client(max_body=max_body) as client:
            return await client.post(server.url, content=b"{}")


async def refusal(data: bytes, *, close: bool = False) -> HttpFailure:
    def handler(conn: Conn) -> None:
        conn.read_request()
        conn.sock.sendall(data)
        if not close:
            conn.wait_for_the_client_to_close()

    with tcp_server(handler) as server:
        async with async_client(max_body=MAX_BODY) as client:
            with pytest.raises(HttpFailure) as caught:
                await client.post(server.url, content=b"{}")
    assert not caught.value.timed_out
    return caught.value


@pytest.mark.parametrize("encoding", ["gzip", "x-gzip", "GZip", "deflate"])
async def test_a_compressed_reply_is_decoded(encoding: str) -> None:
    body = b'{"verdict": "supported"}' * 100
    packed = zlib.compress(body) if encoding == "deflate" else gzip.compress(body)
    response = await read(reply(packed, headers=(f"Content-Encoding: {encoding}",)))
    assert response.content == body
    assert "content-encoding" not in response.headers  # decoded once, here


async def test_only_the_encodings_decoded_under_the_bound_are_asked_for() -> None:
    # (httpx would add br and zstd when their packages are installed, decoded unbounded.)
    with tcp_server(answer(reply(b"ok"))) as server:
        async with async_client(max_body=MAX_BODY) as client:
            await client.post(server.url, content=b"{}")
    [head] = server.requests
    assert b"\r\naccept-encoding: gzip, deflate\r\n" in head.lower()


async def test_a_body_just_within_the_bound_is_read() -> None:
    body = b"x" * MAX_BODY
    assert (await read(reply(body))).content == body
    packed = reply(gzip.compress(body), headers=("Content-Encoding: gzip",))
    assert (await read(packed)).content == body


async def test_a_gzip_bomb_is_refused_past_the_bound() -> None:
    bomb = gzip.compress(b"\0" * (20 * MAX_BODY), compresslevel=9)
    assert len(bomb) < MAX_BODY // 20  # small on the wire
    error = await refusal(reply(bomb, headers=("Content-Encoding: gzip",)))
    assert error.too_large
    assert str(error).startswith("a reply body over 1,048,576 bytes from http://127.0.0.1:")


async def test_a_content_length_over_the_bound_is_refused_unread() -> None:
    # 1,000 bytes of a billion, then nothing: a client that read on would wait for the rest
    # until its deadline, and fail as timed out.
    error = await refusal(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n" + b"x" * 1000)
    assert error.too_large


@pytest.mark.parametrize(
    "chunks",
    [
        b"200000\r\n" + b"y" * 0x200000 + b"\r\n0\r\n\r\n",  # one chunk of 2 MiB
        b"".join(b"10000\r\n" + b"y" * 0x10000 + b"\r\n" for _ in range(17)),  # 17 x 64 KiB
    ],
    ids=["one-large-chunk", "many-chunks"],
)
async def test_a_chunked_body_over_the_bound_is_refused(chunks: bytes) -> None:
    error = await refusal(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks)
    assert error.too_large


async def test_a_body_to_the_connections_end_over_the_bound_is_refused() -> None:
    error = await refusal(b"HTTP/1.0 200 OK\r\n\r\n" + b"z" * (MAX_BODY + 1), close=True)
    assert error.too_large


async def test_an_encoding_not_asked_for_is_refused() -> None:
    error = await refusal(reply(b"\x1b\x00\x00", headers=("Content-Encoding: br",)))
    assert not error.too_large
    assert str(error).startswith("a reply in a content encoding not asked for ('br') from ")


async def test_a_gzip_body_cut_short_is_refused_not_read_in_part() -> None:
    whole = gzip.compress(b'{"choices": []}' * 50)
    error = await refusal(reply(whole[: len(whole) // 2], headers=("Content-Encoding: gzip",)))
    assert str(error).startswith("a gzip body that ends before its compressed stream does")


async def test_a_gzip_body_that_does_not_decode_is_refused() -> None:
    error = await refusal(reply(b"not gzip at all", headers=("Content-Encoding: gzip",)))
    assert str(error).startswith("a gzip body that does not decode (")


async def test_an_empty_body_marked_gzip_is_empty() -> None:
    response = await read(reply(b"", status="302 Found", headers=("Content-Encoding: gzip",)))
    assert (response.status_code, response.content) == (302, b"")


async def test_a_streamed_read_is_bounded_too() -> None:
    chunks = b"".join(b"10000\r\n" + b"y" * 0x10000 + b"\r\n" for _ in range(17))
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    read: list[int] = []

    async def read_streamed(client: Any, url: str) -> None:
        async with client.stream("POST", url, content=b"{}") as response:
            assert isinstance(response, http_module().Response)
            async for chunk in response.aiter_bytes():
                read.append(len(chunk))

    with tcp_server(answer(head + chunks)) as server:
        async with async_client(max_body=MAX_BODY) as client:
            with pytest.raises(HttpFailure) as caught:
                await read_streamed(client, server.url)
    assert caught.value.too_large
    assert 0 < sum(read) <= MAX_BODY
