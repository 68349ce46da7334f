"""OTLP/HTTP exporters, configured by the standard OTEL_EXPORTER_OTLP_* variables.

Imported only when an endpoint is configured: the exporter package is the `otlp` extra.
"""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from agentscore._redact import redact_library_logs

__all__ = ["logs", "metrics", "spans"]

redact_library_logs(
    "opentelemetry.util.re",
    "opentelemetry.exporter.otlp.proto.http._common",
    "opentelemetry.exporter.otlp.proto.http._log_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
)


def spans() -> OTLPSpanExporter:
    return OTLPSpanExporter()


def logs() -> OTLPLogExporter:
    return OTLPLogExporter()


def metrics() -> OTLPMetricExporter:
    return OTLPMetricExporter()
