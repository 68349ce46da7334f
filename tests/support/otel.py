"""Reading what the OpenTelemetry SDK recorded in a test: the in-memory exporters and reader
conftest.py installs for the session (the `otel` fixture), typed for strict mypy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
from opentelemetry.sdk.metrics.export import (
    DataPointT,
    HistogramDataPoint,
    InMemoryMetricReader,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext

# The SDK's InMemoryLogRecordExporter.__init__ has no annotations; this is the same class,
# callable in a typed test.
new_log_exporter = cast(Callable[[], InMemoryLogRecordExporter], InMemoryLogRecordExporter)


def span_context(span: ReadableSpan) -> SpanContext:
    """A recorded span's context (always set; the SDK's type allows None)."""
    context = span.get_span_context()
    assert context is not None
    return context


def number_point(point: DataPointT) -> NumberDataPoint:
    """A counter's or gauge's data point (the SDK types every point as any kind)."""
    assert isinstance(point, NumberDataPoint)
    return point


def histogram_point(point: DataPointT) -> HistogramDataPoint:
    """A histogram's data point (the SDK types every point as any kind)."""
    assert isinstance(point, HistogramDataPoint)
    return point


@dataclass
class Otel:
    spans: InMemorySpanExporter
    logs: InMemoryLogRecordExporter
    metrics: InMemoryMetricReader
