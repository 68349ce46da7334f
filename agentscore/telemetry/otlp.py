"""OTLP/HTTP exporters, configured by the standard OTEL_EXPORTER_OTLP_* variables.

Spans and log records go through agentscore's own encoder and sender
(`agentscore.telemetry.otlp_encode`, `agentscore.telemetry.otlp_send`): the same bytes as the
SDK's OTLP/HTTP exporters at about a third of the CPU. In an agent's process that CPU is
taken under the GIL from the agent's requests, a batch of 512 spans at a time: with the
SDK's exporter the evaluation spans of in-process scoring added 4 to 6 ms to the agent's
p99 at 100 requests/s, with these about 1 ms (docs/benchmarks.md). Metrics keep the SDK's
exporter (one small request a minute).

Imported only when an endpoint is configured: `requests` and the metric exporter come with
the `otlp` extra.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from agentscore._redact import redact_library_logs
from agentscore.telemetry.otlp_encode import encode_logs, encode_spans
from agentscore.telemetry.otlp_send import OtlpSender, Signal

__all__ = ["OtlpLogExporter", "OtlpSpanExporter", "logs", "metrics", "spans"]

redact_library_logs(
    "opentelemetry.util.re",
    "opentelemetry.exporter.otlp.proto.http._common",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
)

_Item = TypeVar("_Item")
# The SDK exporters' backoff: 1 s, then doubling, while the export's timeout allows.
_FIRST_RETRY = 1.0


class _Exporter(Generic[_Item]):
    """POSTs a batch; a batch the backend did not take (refused, unanswered) is sent again
    after a backoff within the sender's timeout, then given up. Each refusal is logged with
    its status. Unlike the SDK's exporter, which retries only 408, 429 and 5xx, any
    refusal is retried: a 4xx costs a few POSTs within the timeout, and a backend that
    recovers from a misconfiguration still gets the batch."""

    def __init__(
        self,
        signal: Signal,
        encode: Callable[[Sequence[_Item]], bytes],
        endpoint: str | None,
        sender: OtlpSender | None,
    ) -> None:
        if sender is None:
            overrides = {f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT": endpoint} if endpoint else {}
            sender = OtlpSender.from_environment(signal, {**os.environ, **overrides})
        self._sender = sender
        self._encode = encode
        self._closed = threading.Event()

    def _export(self, items: Sequence[_Item]) -> bool:
        if self._closed.is_set():
            return False
        if not items:
            return True
        deadline = time.monotonic() + self._sender.timeout
        delay = _FIRST_RETRY
        pending = list(items)
        while pending := self._sender.deliver(pending, self._encode):
            if time.monotonic() + delay > deadline or self._closed.wait(delay):
                return False
            delay *= 2
        return True

    def _close(self) -> None:
        self._closed.set()
        self._sender.close()


class OtlpSpanExporter(_Exporter[ReadableSpan], SpanExporter):
    """A `SpanExporter` for OTLP/HTTP protobuf, a drop-in for the SDK's (same variables,
    same bytes) at a third of its CPU. `endpoint` replaces OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
    (a full URL, `/v1/traces` included); `sender` replaces the configuration whole."""

    def __init__(self, endpoint: str | None = None, *, sender: OtlpSender | None = None) -> None:
        super().__init__("TRACES", encode_spans, endpoint, sender)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS if self._export(spans) else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self._close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True  # nothing is held between exports


class OtlpLogExporter(_Exporter[ReadableLogRecord], LogRecordExporter):
    """`OtlpSpanExporter` for log records (OTEL_EXPORTER_OTLP_LOGS_*, `/v1/logs`)."""

    def __init__(self, endpoint: str | None = None, *, sender: OtlpSender | None = None) -> None:
        super().__init__("LOGS", encode_logs, endpoint, sender)

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        return (
            LogRecordExportResult.SUCCESS if self._export(batch) else LogRecordExportResult.FAILURE
        )

    def shutdown(self) -> None:
        self._close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def spans() -> OtlpSpanExporter:
    return OtlpSpanExporter()


def logs() -> OtlpLogExporter:
    return OtlpLogExporter()


def metrics() -> OTLPMetricExporter:
    return OTLPMetricExporter()
