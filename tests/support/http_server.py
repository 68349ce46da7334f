"""A scripted HTTP server on 127.0.0.1: it records every request and answers from a script.

Real sockets, so the real `openai` client, httpx, the OTLP exporters and other processes
(a service under test, a docs example) all reach it. A script is one `Reply`, a list of them
(in order; once it runs out, the last one again), or a function of the `Request`; a test can
change it while the server runs (`reply_with`). tests/support/chat.py builds OpenAI chat
replies on top of it.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str  # as sent, query included
    headers: dict[str, str]  # names lower-cased
    body: bytes
    client: tuple[str, int]  # the client's address: one per connection it opened

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True, slots=True)
class Reply:
    status: int = 200
    body: bytes = b"{}"
    # Sent as given (a redirect's Location, Retry-After); Content-Type is JSON unless set.
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds the server waits before it answers


def json_reply(
    payload: Any, status: int = 200, *, headers: Mapping[str, str] | None = None, delay: float = 0.0
) -> Reply:
    return Reply(status, json.dumps(payload).encode(), dict(headers or {}), delay)


Script = Reply | Sequence[Reply] | Callable[[Request], Reply]


class HttpServer:
    def __init__(self, script: Script) -> None:
        self.url = ""  # http(s)://127.0.0.1:PORT
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._script: Callable[[Request], Reply] = _as_function(script)

    @property
    def base_url(self) -> str:
        """Where an OpenAI client is pointed."""
        return f"{self.url}/v1"

    def reply_with(self, script: Script) -> None:
        """Answers every request from now on from `script` (a backend that recovers)."""
        with self._lock:
            self._script = _as_function(script)

    def _answer(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            script = self._script
        return script(request)


@contextmanager
def http_server(
    script: Script = Reply(), *, port: int = 0, tls: ssl.SSLContext | None = None
) -> Iterator[HttpServer]:
    """`port`: 0 for a free one; a given one brings a server back where a client expects it.
    `tls`: a server-side context, for HTTPS."""
    served = HttpServer(script)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real endpoints: clients pool connections

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def do_PUT(self) -> None:
            self._serve()

        def do_DELETE(self) -> None:
            self._serve()

        def _serve(self) -> None:
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = Request(
                self.command, self.path, headers, self._body(headers), self.client_address[:2]
            )
            reply = served._answer(request)
            if reply.delay:
                time.sleep(reply.delay)
            try:
                self.send_response(reply.status)
                sent = {name.lower() for name in reply.headers}
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if "content-type" not in sent:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up waiting: nothing to tell

        def _body(self, headers: dict[str, str]) -> bytes:
            if "chunked" not in headers.get("transfer-encoding", ""):
                return self.rfile.read(int(headers.get("content-length", 0)))
            body = b""
            while size := int(self.rfile.readline().split(b";")[0], 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
            return body

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = _Server(("127.0.0.1", port), Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    scheme = "https" if tls else "http"
    served.url = f"{scheme}://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: a service opening 16 connections at once
    # on a loaded machine got "connection refused", which tests then read as an outage.
    request_queue_size = 128
    # A reply held back (a judge that stalls for an hour) must not hold up the test's exit.
    daemon_threads = True


def _as_function(script: Script) -> Callable[[Request], Reply]:
    if isinstance(script, Reply):
        return lambda request: script
    if callable(script):
        return script
    replies = list(script)
    if not replies:
        raise ValueError("a script needs at least one reply")
    lock = threading.Lock()

    def in_order(request: Request) -> Reply:
        with lock:
            return replies.pop(0) if len(replies) > 1 else replies[0]

    return in_order
