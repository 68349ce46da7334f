"""A TCP server on 127.0.0.1 whose replies are scripted byte for byte: a body over its
Content-Length, chunks, a body framed by the connection's end, a gzip bomb, a reply dripped
one byte at a time. For what an HTTP server library would not send."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Conn:
    sock: socket.socket
    stopping: threading.Event
    closed_by_client: threading.Event = field(default_factory=threading.Event)

    def read_request(self) -> bytes:
        """One request, head and body (framed by its Content-Length)."""
        data = bytearray()
        while b"\r\n\r\n" not in data:
            chunk = self.sock.recv(65_536)
            if not chunk:
                return bytes(data)
            data += chunk
        head, _, body = bytes(data).partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            chunk = self.sock.recv(65_536)
            if not chunk:
                break
            body += chunk
        return head + b"\r\n\r\n" + body

    def wait_for_the_client_to_close(self) -> None:
        """Until the client closes (or the server stops): what a client that gave up does."""
        self.sock.settimeout(0.1)
        while not self.stopping.is_set():
            try:
                if not self.sock.recv(65_536):
                    self.closed_by_client.set()
                    return
            except TimeoutError:
                continue
            except OSError:
                self.closed_by_client.set()
                return


@dataclass
class TcpServer:
    url: str
    requests: list[bytes] = field(default_factory=list)
    conns: list[Conn] = field(default_factory=list)


def reply(body: bytes, *, status: str = "200 OK", headers: tuple[str, ...] = ()) -> bytes:
    lines = [f"HTTP/1.1 {status}", *headers, f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@contextmanager
def tcp_server(handler: Callable[[Conn], None]) -> Iterator[TcpServer]:
    """Each connection runs `handler` in a thread of its own; the request it reads is kept.
    Yields the base URL (`http://127.0.0.1:<port>/v1`)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    stopping = threading.Event()
    server = TcpServer(url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1")
    threads: list[threading.Thread] = []

    def serve(conn: Conn) -> None:
        with contextlib.suppress(OSError), conn.sock:
            handler(conn)

    def accept() -> None:
        while not stopping.is_set():
            try:
                sock, _ = listener.accept()
            except TimeoutError:
                continue
            conn = Conn(sock, stopping)
            server.conns.append(conn)
            original = conn.read_request

            def read_and_keep(original: Callable[[], bytes] = original) -> bytes:
                request = original()
                server.requests.append(request)
                return request

            conn.read_request = read_and_keep  # type: ignore[method-assign]
            thread = threading.Thread(target=serve, args=(conn,), daemon=True)
            thread.start()
            threads.append(thread)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield server
    finally:
        stopping.set()
        acceptor.join(5)
        for conn in server.conns:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join(5)
        listener.close()
