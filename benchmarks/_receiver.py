"""An OTLP/HTTP receiver for the benchmarks, in its own process: answers every POST 200 and
decodes nothing. Prints "port N" once it listens; runs until terminated."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    # Keep-alive, as a Collector: with HTTP/1.0 every export paid a new connection, a cost
    # the services' CPU per score then counted and real deployments do not pay.
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()
