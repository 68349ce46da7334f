"""OTLP/HTTP out: spans, log records and metrics encoded by OpenTelemetry's own encoders
(`opentelemetry.exporter.otlp.proto.common`), POSTed through the one HTTP stack
(`agentscore._wire.http`). Used by the in-process exporters (`agentscore.telemetry.otlp`),
the service's export and `serve --forward`.

The SDK's OTLP/HTTP exporters are not used to send: they POST through `requests`, follow a
redirect (taking the headers, often a credential, to whatever origin `Location` names),
count a 3xx as delivered, and cannot say which part of a batch a backend refused. What
stays written here is what no library does: splitting a batch over the request bound or
refused as too large (413), handing back exactly what the backend did not take, and
reading a refusal's Retry-After for the caller's retry.

Each POST runs on one event loop of its own (a daemon thread shared by every sender, started
again in a forked child), so a blocking caller, an exporter's thread, gets the policy's
whole-exchange deadline: a backend dripping its headers or its body a byte at a time is
given up on at the timeout, which per-read timeouts never do.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs as _logs_request
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import (
    encode_metrics as _metrics_request,
)
from opentelemetry.exporter.otlp.proto.common.trace_encoder import (
    encode_spans as _spans_request,
)
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.metrics.export import MetricsData
from opentelemetry.sdk.trace import ReadableSpan

from agentscore._runtime.loop import BackgroundLoop
from agentscore._wire.http import Deadlines, HttpFailure, async_client, post
from agentscore._wire.otlp_settings import OtlpSettings, without_credentials

__all__ = [
    "MAX_REPLY_BYTES",
    "MAX_REQUEST_BYTES",
    "Delivery",
    "OtlpSender",
    "OtlpUnanswered",
    "encode_logs",
    "encode_metrics",
    "encode_spans",
]

_log = structlog.get_logger("agentscore.otlp")

# Below common receivers' bounds (the Collector's OTLP/HTTP default is 20 MiB).
MAX_REQUEST_BYTES = 4 * 1024 * 1024
# A reply is a partial-success notice at most, never needed: past this it is not read.
MAX_REPLY_BYTES = 64 * 1024
_TOO_LARGE = 413
# A Retry-After longer than this is not waited for: the caller's own backoff decides.
_MAX_RETRY_AFTER = 60.0
PROTOBUF = "application/x-protobuf"
_Item = TypeVar("_Item")
_loop = BackgroundLoop("agentscore-otlp")


def encode_spans(spans: Sequence[ReadableSpan]) -> bytes:
    return _spans_request(spans).SerializeToString()


def encode_logs(records: Sequence[ReadableLogRecord]) -> bytes:
    return _logs_request(records).SerializeToString()


def encode_metrics(data: MetricsData) -> bytes:
    return _metrics_request(data).SerializeToString()


class OtlpUnanswered(Exception):
    """No HTTP answer (refused, reset, TLS, an endpoint that cannot be posted to, the
    deadline); names only the error's type."""

    def __init__(self, error_type: str) -> None:
        super().__init__(error_type)
        self.error_type = error_type


@dataclass(frozen=True, slots=True)
class Delivery:
    """What `OtlpSender.deliver` could not deliver, to be sent again, and how long the
    backend asked to be left alone (its Retry-After, in seconds) if it did."""

    unsent: list[Any]
    retry_after: float | None = None

    @property
    def done(self) -> bool:
        return not self.unsent


class OtlpSender:
    """POSTs to one OTLP/HTTP endpoint over kept-alive connections; thread-safe. A 3xx is a
    refusal: the redirect is never followed. `compression` applies to what `deliver`
    encodes; `post` sends its bytes as they are."""

    def __init__(self, settings: OtlpSettings, *, user_agent: str = "agentscore") -> None:
        self.settings = settings
        self.url = settings.url
        self.timeout = settings.timeout
        self._headers = {"User-Agent": user_agent, **settings.headers}
        self._deadlines = Deadlines(
            connect=settings.timeout,
            read=settings.timeout,
            write=settings.timeout,
            pool=settings.timeout,
            total=settings.timeout,
        )
        self._verify = settings.tls()  # a file that cannot be read fails here, not per POST
        self._client: Any = None
        self._client_pid = 0
        self._closed = False

    def post(
        self, body: bytes, content_type: str = PROTOBUF, content_encoding: str = ""
    ) -> tuple[int, Mapping[str, str]]:
        """The backend's status and headers for `body`; raises OtlpUnanswered."""
        headers = {**self._headers, "Content-Type": content_type}
        if content_encoding:
            headers["Content-Encoding"] = content_encoding
        return _loop.call(self._post, body, headers)

    async def _post(self, body: bytes, headers: dict[str, str]) -> tuple[int, Mapping[str, str]]:
        if self._closed:
            raise OtlpUnanswered("closed")
        if self._client is None or self._client_pid != os.getpid():
            # A forked child's copy holds the parent's kept-alive sockets: two processes
            # writing one connection interleave their requests. The child opens its own.
            self._client = async_client(self._deadlines, verify=self._verify)
            self._client_pid = os.getpid()
        try:
            reply = await post(
                self._client,
                self.url,
                content=body,
                headers=headers,
                deadlines=self._deadlines,
                max_body=MAX_REPLY_BYTES,
            )
        except HttpFailure as exc:
            if exc.status is not None:  # the status came, its body did not: it stands
                return exc.status, {}
            raise OtlpUnanswered(_cause(exc)) from None
        except Exception as exc:  # an endpoint the HTTP library cannot even try (a bad URL)
            raise OtlpUnanswered(type(exc).__name__) from None
        return reply.status, reply.headers

    def deliver(
        self, items: Sequence[_Item], encode: Callable[[Sequence[_Item]], bytes]
    ) -> Delivery:
        """POST `items`, encoded, in requests of at most `MAX_REQUEST_BYTES` (a larger batch
        is halved until it fits, or until one item is left).

        A 413 halves the request too (the backend's bound may be lower than ours). One item
        refused as too large on its own can never be delivered: it is logged and left out,
        so it does not hold every later export back."""
        body = encode(items)
        if len(items) > 1 and len(body) > MAX_REQUEST_BYTES:
            return self._halves(items, encode)
        try:
            status, headers = self._post_compressed(body)
        except OtlpUnanswered as exc:
            _log.warning(
                "otlp_export_unanswered",
                endpoint=without_credentials(self.url),
                error_type=exc.error_type,
            )
            return Delivery(list(items))
        if 200 <= status < 300:
            return Delivery([])
        if status == _TOO_LARGE:
            if len(items) > 1:
                return self._halves(items, encode)
            _log.error(
                "otlp_export_item_too_large",
                endpoint=without_credentials(self.url),
                bytes=len(body),
                hint="the backend refuses this one item as too large (413); it is not "
                "exported. Raise the backend's request size limit, or turn content capture off",
            )
            return Delivery([])
        _log.warning("otlp_export_refused", endpoint=without_credentials(self.url), status=status)
        return Delivery(list(items), _retry_after(headers))

    def _post_compressed(self, body: bytes) -> tuple[int, Mapping[str, str]]:
        compression = self.settings.compression
        if compression == "gzip":
            return self.post(gzip.compress(body, compresslevel=6, mtime=0), content_encoding="gzip")
        if compression == "deflate":
            return self.post(zlib.compress(body), content_encoding="deflate")
        return self.post(body)

    def _halves(
        self, items: Sequence[_Item], encode: Callable[[Sequence[_Item]], bytes]
    ) -> Delivery:
        middle = len(items) // 2
        first = self.deliver(items[:middle], encode)
        if not first.done:  # the backend is failing: the other half waits for the next export
            return Delivery(first.unsent + list(items[middle:]), first.retry_after)
        return self.deliver(items[middle:], encode)

    def close(self) -> None:
        """Later POSTs fail at once; the connections are closed."""
        self._closed = True
        client, self._client = self._client, None
        if client is not None and self._client_pid == os.getpid():
            try:
                _loop.call(client.aclose)
            except Exception as exc:  # closing is best effort: nothing waits on it
                _log.debug("otlp_close_failed", error_type=type(exc).__name__)


def _cause(failure: HttpFailure) -> str:
    """The failure's kind by name (ConnectError, ReadTimeout, ...), never its text."""
    cause = failure.__cause__
    if cause is None or isinstance(cause, TimeoutError):
        return "Timeout" if failure.timed_out else "HttpFailure"
    return type(cause).__name__


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Retry-After in seconds, when it is a number of them (an HTTP date is not read)."""
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    if seconds is None or not 0 <= seconds <= _MAX_RETRY_AFTER:
        return None
    return seconds
