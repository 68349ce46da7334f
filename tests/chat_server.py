"""A real OpenAI-compatible HTTP server on 127.0.0.1 whose answers a test function decides.

Unlike `agentscore.testing.ScriptedEndpoint` (a mock transport), this one goes through
sockets, so it serves other processes too (subprocess tests) and the SDK's real transport.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentscore.testing import chat_completion


@dataclass(frozen=True)
class Request:
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class Answer:
    status: int = 200
    payload: Any = None
    delay: float = 0.0


Responder = Callable[[Request], Answer]


@dataclass
class ChatServer:
    base_url: str = ""
    requests: list[Request] = field(default_factory=list)


def judge_reply(content: dict[str, Any] | str, delay: float = 0.0) -> Answer:
    """A 200 whose assistant message is `content` (a dict is sent as its JSON text)."""
    reply = chat_completion(content)
    return Answer(payload=reply.body, delay=delay)


def echo_key_401(request: Request) -> Answer:
    """What some providers do: quote the rejected key back in the error message."""
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    message = f"Incorrect API key provided: {key}. Authorization: Bearer {key}"
    return Answer(401, {"error": {"message": message, "type": "invalid_request_error"}})


@contextmanager
def chat_server(responder: Responder, port: int = 0) -> Iterator[ChatServer]:
    """`port`: 0 for a free one; a given one brings a judge back where a service expects it."""
    server_state = ChatServer()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            request = Request({k.lower(): v for k, v in self.headers.items()}, json.loads(raw))
            with lock:
                server_state.requests.append(request)
            answer = responder(request)
            if answer.delay:
                time.sleep(answer.delay)
            data = json.dumps(answer.payload).encode()
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = _Server(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server_state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server_state
    finally:
        server.shutdown()
        server.server_close()


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: a service opening 16 connections at once
    # on a loaded machine got "connection refused", which tests then read as an outage.
    request_queue_size = 128
