"""One-call OpenTelemetry setup for applications that have none yet.

With OTEL_EXPORTER_OTLP_ENDPOINT (or the per-signal OTEL_EXPORTER_OTLP_*_ENDPOINT variables)
set, traces, logs and metrics go over OTLP/HTTP, configured by the standard OTEL_* variables.
Otherwise spans and log records are appended to a local JSONL file. Providers that are
already installed globally are left alone: the setup then only builds a `Telemetry` for
agentscore's own use.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import IO

from opentelemetry import _logs, metrics, trace
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    LogRecordExporter,
    LogRecordExportResult,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from agentscore._runtime.hooks import at_exit, drain, exit_deadline, exit_flush_timeout
from agentscore.errors import ConfigurationError
from agentscore.telemetry.core import Telemetry

__all__ = ["DEFAULT_JSONL_PATH", "JsonlExporter", "TelemetrySetup", "setup_telemetry"]

DEFAULT_JSONL_PATH = "agentscore-traces.jsonl"
_SIGNALS = ("TRACES", "LOGS", "METRICS")


class JsonlExporter(SpanExporter, LogRecordExporter):
    """Appends spans and log records to a file, one JSON object per line."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file: IO[str] | None = None

    def export(  # type: ignore[override]
        self, batch: Sequence[ReadableSpan] | Sequence[ReadableLogRecord]
    ) -> SpanExportResult | LogRecordExportResult:
        lines = [json.dumps(json.loads(item.to_json()), separators=(",", ":")) for item in batch]
        is_spans = bool(batch) and isinstance(batch[0], ReadableSpan)
        try:
            with self._lock:
                if self._file is None:
                    self._file = self.path.open("a", encoding="utf-8")
                self._file.write("".join(line + "\n" for line in lines))
                self._file.flush()
        except OSError:
            return SpanExportResult.FAILURE if is_spans else LogRecordExportResult.FAILURE
        return SpanExportResult.SUCCESS if is_spans else LogRecordExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


@dataclass
class TelemetrySetup:
    """What `setup_telemetry` built. `shutdown` waits for pending scores, then flushes and
    closes the exporters."""

    telemetry: Telemetry
    destination: str
    installed_globally: bool
    _tracer_provider: TracerProvider
    _logger_provider: LoggerProvider
    _meter_provider: MeterProvider | None
    _closed: bool = field(default=False)

    def shutdown(self, timeout: float = 5.0) -> bool:
        """Done within `timeout` seconds, whatever the exporters' endpoint does; False when
        scores were still pending or an exporter had not finished by then."""
        return self._shutdown_by(time.monotonic() + timeout, timeout)

    def _shutdown_by(self, deadline: float, budget: float) -> bool:
        if self._closed:
            return True
        self._closed = True
        # Scores first, but leave the exporters a share of the budget to send them.
        scores_by = deadline - budget * _EXPORT_SHARE
        scored = drain(max(0.0, scores_by - time.monotonic()))
        # An endpoint that accepts and never answers holds each exporter for its own
        # timeout (10 s a signal by default): the exporters get the rest of the budget in
        # a daemon thread, which exit abandons if they overrun it.
        closing = threading.Thread(target=self._close_exporters, name="agentscore-export-close")
        closing.daemon = True
        closing.start()
        closing.join(max(0.0, deadline - time.monotonic()))
        return scored and not closing.is_alive()

    def _close_exporters(self) -> None:
        self._tracer_provider.shutdown()
        self._logger_provider.shutdown()
        if self._meter_provider is not None:
            self._meter_provider.shutdown()


_EXPORT_SHARE = 0.2


def _shutdown_at_exit(setup: TelemetrySetup) -> None:
    setup._shutdown_by(exit_deadline(), exit_flush_timeout())


def setup_telemetry(
    service_name: str = "agentscore",
    *,
    jsonl_path: str | Path = DEFAULT_JSONL_PATH,
    capture_content: bool | None = None,
    resource_attributes: dict[str, str] | None = None,
) -> TelemetrySetup:
    """Export to OTLP/HTTP when an OTEL_EXPORTER_OTLP_*ENDPOINT is set (each signal where an
    endpoint covers it), else spans and log records to `jsonl_path`.

    Installs the providers globally only where none is installed, so an application's own
    OpenTelemetry setup always wins. Call `shutdown()` before exit (the CLI does).
    """
    resource = Resource.create({"service.name": service_name, **(resource_attributes or {})})
    # Their own exit hooks would wait on the exporters without a deadline; ours bounds it.
    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
    meter_provider: MeterProvider | None = None
    if any(_otlp_endpoint(signal) for signal in _SIGNALS):
        # Each signal goes over OTLP only where an endpoint covers it: Phoenix, for one,
        # takes traces but has no logs or metrics endpoint.
        exporters = _otlp_exporters()
        if _otlp_endpoint("TRACES"):
            tracer_provider.add_span_processor(BatchSpanProcessor(exporters.spans()))
        if _otlp_endpoint("LOGS"):
            logger_provider.add_log_record_processor(BatchLogRecordProcessor(exporters.logs()))
        if _otlp_endpoint("METRICS"):
            reader = PeriodicExportingMetricReader(exporters.metrics())
            meter_provider = MeterProvider(
                resource=resource, metric_readers=[reader], shutdown_on_exit=False
            )
        destination = "OTLP/HTTP " + (_otlp_endpoint("TRACES") or "(no traces endpoint)")
    else:
        exporter = JsonlExporter(jsonl_path)
        tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
        destination = str(Path(jsonl_path).resolve())

    installed = _install_where_missing(tracer_provider, logger_provider, meter_provider)
    telemetry = Telemetry(
        tracer_provider=tracer_provider,
        logger_provider=logger_provider,
        meter_provider=meter_provider,
    )
    if capture_content is not None:  # else as the environment says
        telemetry.capture_content = capture_content
    setup = TelemetrySetup(
        telemetry, destination, installed, tracer_provider, logger_provider, meter_provider
    )
    # Registered after the runners' own exit hook, so it runs first: scores, then exporters.
    at_exit(lambda: _shutdown_at_exit(setup))
    return setup


def _otlp_endpoint(signal: str) -> str:
    return os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT", ""
    )


def _otlp_exporters() -> ModuleType:
    try:
        from agentscore.telemetry import otlp
    except ImportError as exc:
        raise ConfigurationError(
            "an OTEL_EXPORTER_OTLP_* endpoint is set but the OTLP exporter is not installed: "
            "pip install 'agentscore[otlp]'"
        ) from exc
    return otlp


def _install_where_missing(
    tracer_provider: TracerProvider,
    logger_provider: LoggerProvider,
    meter_provider: MeterProvider | None,
) -> bool:
    installed = False
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(tracer_provider)
        installed = True
    if not isinstance(_logs.get_logger_provider(), LoggerProvider):
        _logs.set_logger_provider(logger_provider)
    if meter_provider is not None and not isinstance(metrics.get_meter_provider(), MeterProvider):
        metrics.set_meter_provider(meter_provider)
    return installed
