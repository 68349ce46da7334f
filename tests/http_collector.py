"""A throwaway HTTP server on 127.0.0.1 that records POSTs and answers with a set status."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Collector:
    url: str
    received: list[Received] = field(default_factory=list)
    status: int = 200
    # Paths answered with their own status (a backend without a logs endpoint: 404).
    statuses: dict[str, int] = field(default_factory=dict)
    reply: bytes = b"{}"


@contextmanager
def http_collector() -> Iterator[Collector]:
    collector = Collector(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            collector.received.append(Received(self.path, dict(self.headers), body))
            self.send_response(collector.statuses.get(self.path, collector.status))
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(collector.reply)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    collector.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield collector
    finally:
        server.shutdown()


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: a service opening 16 connections at once
    # on a loaded machine got "connection refused", which tests then read as an outage.
    request_queue_size = 128
