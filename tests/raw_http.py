"""A real HTTP server on 127.0.0.1 that answers POSTs with scripted raw bodies, byte for byte:
a proxy's HTML error page, a cut JSON body, then a good reply."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True, slots=True)
class RawReply:
    body: bytes
    content_type: str = "application/json"
    status: int = 200
    location: str | None = None  # sent as the Location header (a redirect)


@dataclass
class RawServer:
    url: str
    script: list[RawReply]
    requests: list[bytes] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)  # of every request, GETs too
    paths: list[str] = field(default_factory=list)  # of every request, as sent


@contextmanager
def raw_http_server(script: list[RawReply]) -> Iterator[RawServer]:
    """Replies in script order; once it runs out, the last reply again."""
    served = RawServer(url="", script=list(script))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real endpoints: clients pool connections

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock:
                served.requests.append(body)
            self._answer()

        def do_GET(self) -> None:  # where a client following a 303 would go
            self._answer()

        def _answer(self) -> None:
            with lock:
                served.headers.append(dict(self.headers.items()))
                served.paths.append(self.path)
                reply = served.script.pop(0) if len(served.script) > 1 else served.script[0]
            self.send_response(reply.status)
            if reply.location is not None:
                self.send_header("Location", reply.location)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
