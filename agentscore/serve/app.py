"""The HTTP side: a plain ASGI app for OTLP/HTTP `POST /v1/traces`, `/healthz` and `/readyz`.

A request is answered 200 only once its generations are committed to the queue. A full queue
(or a draining service) answers 503 with Retry-After, which OTLP exporters retry, so memory
stays bounded and nothing accepted is lost.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

import anyio
import structlog

from agentscore.serve.forward import ForwardError, forward
from agentscore.serve.health import ServiceHealth
from agentscore.serve.ingest import Ingestor
from agentscore.serve.otlp import OtlpDecodeError, decode_traces, success_response
from agentscore.serve.queue import SqliteQueue
from agentscore.serve.stats import ServiceStats

__all__ = ["ServeApp"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_log = structlog.get_logger("agentscore.serve")


class ServeApp:
    """`on_startup` / `on_shutdown` run in the ASGI lifespan (start and drain the worker)."""

    def __init__(
        self,
        ingestor: Ingestor,
        queue: SqliteQueue,
        stats: ServiceStats,
        *,
        health: ServiceHealth | None = None,
        max_queue: int,
        max_body: int = 16 * 1024 * 1024,
        retry_after: int = 5,
        on_startup: Callable[[], None] = lambda: None,
        on_shutdown: Callable[[], None] = lambda: None,
        forward_to: str | None = None,
        forward_headers: Mapping[str, str] | None = None,
    ) -> None:
        self._ingestor = ingestor
        self._queue = queue
        self._stats = stats
        self._health = health or ServiceHealth()
        self.max_queue = max_queue
        self._max_body = max_body
        self._retry_after = retry_after
        self._on_startup = on_startup
        self._on_shutdown = on_shutdown
        self._forward_to = forward_to
        self._forward_headers = dict(forward_headers or {})
        self.draining = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._on_startup()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.draining = True
                await anyio.to_thread.run_sync(self._on_shutdown)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        if path == "/v1/traces" and method == "POST":
            await self._traces(scope, receive, send)
        elif path == "/healthz" and method == "GET":
            await _reply(send, 200, self._health_report())
        elif path == "/readyz" and method == "GET":
            ready = not self.draining and self._queue.depth < self.max_queue
            await _reply(send, 200 if ready else 503, {"ready": ready})
        else:
            await _reply(send, 404, {"error": f"no route {method} {path}"})

    async def _traces(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.draining or self._queue.depth >= self.max_queue:
            self._stats.add("requests_rejected")
            reason = "draining" if self.draining else "queue full"
            await _reply(send, 503, {"error": reason}, retry_after=self._retry_after)
            return
        body = await _read_body(receive, self._max_body)
        if body is None:
            await _reply(send, 413, {"error": f"body over {self._max_body} bytes"})
            return
        headers = {key.decode().lower(): value.decode() for key, value in scope["headers"]}
        content_type = headers.get("content-type", "application/x-protobuf")
        encoding = headers.get("content-encoding", "")
        try:
            spans = decode_traces(body, content_type, encoding, max_size=self._max_body)
            if self._forward_to is not None:
                await anyio.to_thread.run_sync(
                    forward,
                    self._forward_to,
                    body,
                    content_type,
                    encoding,
                    self._forward_headers,
                )
            await anyio.to_thread.run_sync(self._ingestor.ingest, spans)
        except OtlpDecodeError as exc:
            await _reply(send, 400, {"error": str(exc)})
            return
        except ForwardError as exc:
            self._stats.add("forward_failures")
            await _reply(send, 503, {"error": str(exc)}, retry_after=self._retry_after)
            return
        except Exception as exc:  # the disk, most likely: the exporter should try again
            _log.error("serve_ingest_failed", error_type=type(exc).__name__)
            await _reply(send, 503, {"error": type(exc).__name__}, retry_after=self._retry_after)
            return
        payload, media = success_response(content_type)
        await _send(send, 200, payload, media)

    def _health_report(self) -> dict[str, Any]:
        # Degraded is still 200: the service keeps taking work, which waits on disk.
        problems = self._health.snapshot()
        status = "draining" if self.draining else "degraded" if problems else "ok"
        return {
            "status": status,
            "problems": problems,
            "queue_depth": self._queue.depth,
            "pending_jobs": self._queue.pending_jobs,
            **self._stats.snapshot(),
        }


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _reply(
    send: Send, status: int, body: dict[str, Any], *, retry_after: int | None = None
) -> None:
    extra = [(b"retry-after", str(retry_after).encode())] if retry_after is not None else []
    await _send(send, status, json.dumps(body).encode(), "application/json", extra)


async def _send(
    send: Send,
    status: int,
    payload: bytes,
    media: str,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    headers = [
        (b"content-type", media.encode()),
        (b"content-length", str(len(payload)).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
