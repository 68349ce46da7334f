"""A bare HTTP/2 client over a socket, for what no well-behaved gRPC client sends: calls whose
message never finishes. Frames by hand (RFC 9113), header blocks as HPACK literals without
Huffman coding (RFC 7541), which every server must read."""

from __future__ import annotations

import socket
import struct

__all__ = ["H2Connection"]

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DATA, _HEADERS, _RST_STREAM, _SETTINGS, _PING, _GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7
_END_STREAM, _ACK, _END_HEADERS = 0x1, 0x1, 0x4


def _integer(value: int, prefix_bits: int, first: int = 0) -> bytes:
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = bytearray([first | limit])
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def _literal(name: str, value: str) -> bytes:
    """A literal header field without indexing, new name, neither part Huffman coded."""
    raw_name, raw_value = name.encode(), value.encode()
    return b"\x00" + _integer(len(raw_name), 7) + raw_name + _integer(len(raw_value), 7) + raw_value


class H2Connection:
    """One connection: `open_call` starts a gRPC call and sends the start of its message."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.sendall(_PREFACE + self._frame(_SETTINGS, 0, 0, b""))
        self._next_stream = 1
        self._buffer = b""
        self.ended: set[int] = set()  # streams the server answered in full or reset
        self.goaway = False
        # The server's SETTINGS must be acknowledged, or it closes the connection.
        while not self._read_frame():
            pass

    @staticmethod
    def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
        return (
            struct.pack(">I", len(payload))[1:]
            + bytes([kind, flags])
            + struct.pack(">I", stream)
            + payload
        )

    def open_call(
        self,
        path: str,
        *,
        declared: int,
        sent: bytes,
        metadata: tuple[tuple[str, str], ...] = (),
        authority: str = "127.0.0.1",
    ) -> int:
        """A call whose message declares `declared` bytes and carries only `sent`; the
        stream stays open. Returns its stream id."""
        stream = self._next_stream
        self._next_stream += 2
        fields = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", path),
            (":authority", authority),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            *metadata,
        ]
        block = b"".join(_literal(name, value) for name, value in fields)
        message = b"\x00" + struct.pack(">I", declared) + sent
        self.sock.sendall(
            self._frame(_HEADERS, _END_HEADERS, stream, block)
            + self._frame(_DATA, 0, stream, message)
        )
        return stream

    def read_for(self, seconds: float) -> None:
        """Read what the server sends for `seconds` (acknowledging SETTINGS and PINGs)."""
        self.sock.settimeout(seconds)
        try:
            while True:
                self._read_frame()
        except (TimeoutError, ConnectionError, OSError):
            return

    def _read_frame(self) -> bool:
        """One frame; True when it was the server's SETTINGS."""
        while len(self._buffer) < 9:
            self._fill()
        length = int.from_bytes(self._buffer[:3], "big")
        while len(self._buffer) < 9 + length:
            self._fill()
        kind, flags = self._buffer[3], self._buffer[4]
        stream = int.from_bytes(self._buffer[5:9], "big") & 0x7FFFFFFF
        payload = self._buffer[9 : 9 + length]
        self._buffer = self._buffer[9 + length :]
        if kind == _SETTINGS and not flags & _ACK:
            self.sock.sendall(self._frame(_SETTINGS, _ACK, 0, b""))
            return True
        if kind == _PING and not flags & _ACK:
            self.sock.sendall(self._frame(_PING, _ACK, 0, payload))
        elif kind == _RST_STREAM or (kind in (_HEADERS, _DATA) and flags & _END_STREAM):
            self.ended.add(stream)
        elif kind == _GOAWAY:
            self.goaway = True
        return False

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        self._buffer += chunk

    def close(self) -> None:
        self.sock.close()
