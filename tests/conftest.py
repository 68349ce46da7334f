from __future__ import annotations

import os

import pytest
from opentelemetry import _logs, metrics, trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.otel import Otel, new_log_exporter

# Run inside GitHub Actions, every `agentscore eval` of the suite would append its report to
# the job's summary page; the tests that want it set their own file.
os.environ.pop("GITHUB_STEP_SUMMARY", None)

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
