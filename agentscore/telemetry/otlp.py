"""OTLP/HTTP exporters for spans, log records and metrics, configured by the standard
OTEL_EXPORTER_OTLP_* variables: drop-ins for the SDK's (same variables, same bytes: its own
encoders), sending through agentscore's one HTTP stack (`agentscore._wire.otlp_out`), so a
redirect is never followed and the headers never leave for another origin.

Imported only when an endpoint is configured; the encoders come with the `otlp` extra.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from opentelemetry.exporter.otlp.proto.common._internal.metrics_encoder import (
    OTLPMetricExporterMixin,
)
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from agentscore._wire.otlp_out import OtlpSender, encode_logs, encode_metrics, encode_spans
from agentscore._wire.otlp_settings import OtlpSettings, Signal

__all__ = [
    "OtlpLogExporter",
    "OtlpMetricExporter",
    "OtlpSpanExporter",
    "logs",
    "metrics",
    "spans",
]

_Item = TypeVar("_Item")
# The SDK exporters' backoff: 1 s, then doubling, while the export's timeout allows.
_FIRST_RETRY = 1.0


class _Exporter(Generic[_Item]):
    """POSTs a batch; what the backend did not take (refused, unanswered) is sent again
    after a backoff, or after the backend's Retry-After when longer, within the sender's
    timeout, then given up. Each refusal is logged with its status. Unlike the SDK's
    exporter, which retries only 429 and some 5xx, any refusal is retried: a 4xx costs a few
    POSTs within the timeout, and a backend that recovers from a misconfiguration still gets
    the batch."""

    def __init__(
        self,
        signal: Signal,
        encode: Callable[[Sequence[_Item]], bytes],
        endpoint: str | None,
        sender: OtlpSender | None,
    ) -> None:
        if sender is None:
            overrides = {f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT": endpoint} if endpoint else {}
            sender = OtlpSender(OtlpSettings.from_environment(signal, {**os.environ, **overrides}))
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
        while not (delivery := self._sender.deliver(pending, self._encode)).done:
            pending = delivery.unsent
            wait = max(delay, delivery.retry_after or 0.0)
            if time.monotonic() + wait > deadline or self._closed.wait(wait):
                return False
            delay *= 2
        return True

    def _close(self) -> None:
        self._closed.set()
        self._sender.close()


class OtlpSpanExporter(_Exporter[ReadableSpan], SpanExporter):
    """A `SpanExporter` for OTLP/HTTP protobuf. `endpoint` replaces
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (a full URL, `/v1/traces` included); `sender`
    replaces the configuration whole."""

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


class OtlpMetricExporter(OTLPMetricExporterMixin, MetricExporter):
    """A `MetricExporter` for OTLP/HTTP protobuf (OTEL_EXPORTER_OTLP_METRICS_*, `/v1/metrics`),
    with the SDK's temporality and aggregation preferences
    (OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE, ..._DEFAULT_HISTOGRAM_AGGREGATION)."""

    def __init__(self, endpoint: str | None = None, *, sender: OtlpSender | None = None) -> None:
        self._common_configuration()
        self._exporter = _Exporter[MetricsData]("METRICS", _encode_one, endpoint, sender)

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        return (
            MetricExportResult.SUCCESS
            if self._exporter._export([metrics_data])
            else MetricExportResult.FAILURE
        )

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._exporter._close()

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True


def _encode_one(batch: Sequence[MetricsData]) -> bytes:
    # One collection per export: the reader hands over all of it at once.
    [data] = batch
    return encode_metrics(data)


def spans() -> OtlpSpanExporter:
    return OtlpSpanExporter()


def logs() -> OtlpLogExporter:
    return OtlpLogExporter()


def metrics() -> OtlpMetricExporter:
    return OtlpMetricExporter()
