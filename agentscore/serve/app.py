"""The HTTP side: a plain ASGI app for OTLP/HTTP `POST /v1/traces`, `/healthz` and `/readyz`.

A request is answered 200 only once its generations are committed to the queue. A full queue
(or a draining service) answers 503 with Retry-After, which OTLP exporters retry, so memory
stays bounded and nothing accepted is lost. With an ingest token set, a request without it is
answered 401 before its body is read. A reply sent before the body was read whole closes the
connection, so an unread body never becomes the next request.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

import anyio
import structlog

from agentscore._wire.otlp_in import OtlpDecodeError, decode_traces, success_response
from agentscore._wire.otlp_out import OtlpSender
from agentscore.serve.auth import bearer_allowed
from agentscore.serve.forward import ForwardError, forward
from agentscore.serve.health import ServiceHealth
from agentscore.serve.ingest import Ingestor, OverBudget
from agentscore.serve.queue import SqliteQueue
from agentscore.serve.stats import ServiceStats
from agentscore.spans.records import SpanRecord

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
        on_drain: Callable[[float], None] = lambda timeout: None,
        forward_to: OtlpSender | None = None,
        ingest_token: bytes | None = None,
        body_timeout: float = 30.0,
        judge_health: Callable[[], Mapping[str, Any]] = dict,
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
        self.ingest_token = ingest_token
        self._body_timeout = body_timeout
        self._on_drain = on_drain
        self._judge_health = judge_health
        self.draining = False

    def drain(self, timeout: float) -> None:
        """Answer ingest 503 from now on and score what is due for up to `timeout` seconds."""
        self.draining = True
        self._on_drain(timeout)

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
            ready = self.refusal() is None
            await _reply(send, 200 if ready else 503, {"ready": ready})
        else:
            await _reply(send, 404, {"error": f"no route {method} {path}"})

    async def _traces(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not bearer_allowed(self.ingest_token, _authorization(scope)):
            self._stats.add("requests_unauthorized")
            await _reply(send, 401, {"error": "missing or wrong bearer token"}, unread=True)
            return
        reason = self.refusal(_content_length(scope))
        if reason is not None:
            self._stats.add("requests_rejected")
            await _reply(send, 503, {"error": reason}, retry_after=self._retry_after, unread=True)
            return
        headers = _text_headers(scope)
        if headers is None:
            await _reply(send, 400, {"error": "a header value is not ASCII"}, unread=True)
            return
        body = b""
        with anyio.move_on_after(self._body_timeout) as reading:
            try:
                body = await _read_body(receive, self._max_body)
            except _Disconnected:
                return  # nobody to answer; a part of a body is never read as a whole one
            except _TooLarge:
                await _reply(send, 413, {"error": f"body over {self._max_body} bytes"}, unread=True)
                return
        if reading.cancelled_caught:
            self._stats.add("requests_timed_out")
            error = f"body not sent within {self._body_timeout:g} s"
            await _reply(send, 408, {"error": error}, unread=True)
            return
        await self._accept(body, headers, send)

    async def _accept(self, body: bytes, headers: Mapping[str, str], send: Send) -> None:
        content_type = headers.get("content-type", "application/x-protobuf")
        encoding = headers.get("content-encoding", "")
        try:
            await anyio.to_thread.run_sync(self.take, body, content_type, encoding)
        except OtlpDecodeError as exc:
            await _reply(send, 400, {"error": str(exc)})
            return
        except OverBudget as exc:
            if exc.never:
                await _reply(send, 413, {"error": str(exc)})
                return
            self._stats.add("requests_rejected")
            error = {"error": "open traces full"}
            await _reply(send, 503, error, retry_after=self._retry_after)
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

    @property
    def max_body(self) -> int:
        """The largest request it reads, in bytes once decompressed (gRPC's bound too)."""
        return self._max_body

    @property
    def retry_after(self) -> int:
        """Seconds a refused exporter is asked to wait (Retry-After, gRPC RetryInfo)."""
        return self._retry_after

    def refusal(self, incoming: int = 0) -> str | None:
        """Why a request of `incoming` bytes would be refused unread now, if it would. (Its
        declared size stands for what it would hold: reading and decoding requests that
        cannot fit costs memory that the allocator does not give back.)"""
        if self.draining:
            return "draining"
        if self._queue.depth >= self.max_queue:
            return "queue full"
        budget = self._ingestor.open_bytes_limit
        held = self._ingestor.open_trace_bytes
        if held >= budget or (incoming <= budget and held + incoming > budget):
            return "open traces full"  # one larger than the whole budget is read, to get 413
        return None

    def take(self, body: bytes, content_type: str, encoding: str) -> None:
        """Read one OTLP trace export, forward it, and commit its generations to disk; any
        transport (OTLP/HTTP here, OTLP/gRPC in `grpc_ingest`) answers OK only after this
        returns. Raises OtlpDecodeError (never worth a retry), OverBudget, ForwardError, or
        what the disk raised."""
        spans = decode_traces(
            body, content_type, encoding, max_size=self._max_body, into=SpanRecord
        )
        slim = None
        if self._forward_to is not None:
            slim = self._ingestor.check_room(spans)
            forward(self._forward_to, body, content_type, encoding)
        self._ingestor.ingest(spans, slim)

    def _health_report(self) -> dict[str, Any]:
        # Degraded is still 200: the service keeps taking work, which waits on disk.
        problems = self._health.snapshot()
        status = "draining" if self.draining else "degraded" if problems else "ok"
        return {
            "status": status,
            "problems": problems,
            "queue_depth": self._queue.depth,
            "pending_jobs": self._queue.pending_jobs,
            "open_trace_bytes": self._ingestor.open_trace_bytes,
            "open_conversations": self._ingestor.open_conversations,
            **self._stats.snapshot(),
            **self._judge_health(),
        }


class _Disconnected(Exception):
    """The client left before its body was read whole."""


class _TooLarge(Exception):
    """The body goes past the size limit."""


def _authorization(scope: Scope) -> bytes | None:
    """The one Authorization value; two are as good as none (which one would count?)."""
    values = [value for key, value in scope["headers"] if key.lower() == b"authorization"]
    return values[0] if len(values) == 1 else None


def _content_length(scope: Scope) -> int:
    for key, value in scope["headers"]:
        if key.lower() == b"content-length" and value.isdigit():
            return int(value)
    return 0


def _text_headers(scope: Scope) -> dict[str, str] | None:
    """The headers as text, or None when a value is not ASCII (a 400, not a traceback)."""
    try:
        return {
            key.decode("ascii").lower(): value.decode("ascii") for key, value in scope["headers"]
        }
    except UnicodeDecodeError:
        return None


async def _read_body(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _reply(
    send: Send,
    status: int,
    body: dict[str, Any],
    *,
    retry_after: int | None = None,
    unread: bool = False,
) -> None:
    """`unread`: the request body was not read whole, so the connection cannot carry on."""
    extra = [(b"retry-after", str(retry_after).encode())] if retry_after is not None else []
    if unread:
        extra.append((b"connection", b"close"))
    if status == 401:
        extra.append((b"www-authenticate", b"Bearer"))
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
