from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import pytest
from opentelemetry import _logs, metrics, trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    DataPointT,
    HistogramDataPoint,
    InMemoryMetricReader,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext

# Run inside GitHub Actions, every `agentscore eval` of the suite would append its report to
# the job's summary page; the tests that want it set their own file.
os.environ.pop("GITHUB_STEP_SUMMARY", None)

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


# The global providers can be set once per process: install in-memory ones for the session,
# as an application would, and let each test clear them.
_OTEL = Otel(InMemorySpanExporter(), new_log_exporter(), InMemoryMetricReader())
_tracer_provider = TracerProvider()
_tracer_provider.add_span_processor(SimpleSpanProcessor(_OTEL.spans))
trace.set_tracer_provider(_tracer_provider)
_logger_provider = LoggerProvider()
_logger_provider.add_log_record_processor(SimpleLogRecordProcessor(_OTEL.logs))
_logs.set_logger_provider(_logger_provider)
metrics.set_meter_provider(MeterProvider(metric_readers=[_OTEL.metrics]))


@pytest.fixture
def otel() -> Otel:
    _OTEL.spans.clear()
    _OTEL.logs.clear()
    return _OTEL


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
