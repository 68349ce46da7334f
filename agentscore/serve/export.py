"""Where evaluations go: OTLP/HTTP per the standard OTEL_EXPORTER_OTLP_* variables, else JSONL.

Spans and log records wait in an outbox until the worker exports a batch and learns whether
the backend took it: a job row is deleted only after that, and what the backend refused stays
in the outbox for the next export. A re-export after a crash must
not become a second evaluation, so the evaluation span (and the judge spans under it) take ids
derived from the job's key: a backend then receives the same span again, not a new one.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import structlog
from opentelemetry.sdk._logs import (
    LoggerProvider,
    LogRecordProcessor,
    ReadableLogRecord,
    ReadWriteLogRecord,
)
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.util.re import parse_env_headers

from agentscore.serve.queue import JobKey
from agentscore.telemetry.setup import JsonlExporter

__all__ = ["Exporters", "build_exporters", "keyed_ids"]

_log = structlog.get_logger("agentscore.serve")

_Item = TypeVar("_Item")
_job_key: contextvars.ContextVar[_KeyedSequence | None] = contextvars.ContextVar(
    "agentscore_serve_job", default=None
)


class _KeyedSequence:
    def __init__(self, key: JobKey, attempt: int) -> None:
        # Each attempt of a job has its own ids (a delayed attempt's span is not the final
        # one's); the same attempt exported twice (a restart) keeps its ids.
        self._key = "\x1f".join(key) + (f"\x1f{attempt}" if attempt else "")
        self._next = 0

    def span_id(self) -> int:
        digest = hashlib.sha256(f"{self._key}\x1f{self._next}".encode()).digest()
        self._next += 1
        return int.from_bytes(digest[:8], "big") or 1


class _KeyedIdGenerator(IdGenerator):
    """Span ids from the current job's key (in creation order); random outside a job."""

    def __init__(self) -> None:
        self._random = RandomIdGenerator()

    def generate_span_id(self) -> int:
        sequence = _job_key.get()
        return self._random.generate_span_id() if sequence is None else sequence.span_id()

    def generate_trace_id(self) -> int:
        return self._random.generate_trace_id()


@contextmanager
def keyed_ids(key: JobKey, attempt: int = 0) -> Iterator[None]:
    """Spans started in this context take ids derived from `key` and `attempt`."""
    token = _job_key.set(_KeyedSequence(key, attempt))
    try:
        yield
    finally:
        _job_key.reset(token)


class _SpanOutbox(SpanProcessor):
    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter = exporter
        self._lock = threading.Lock()
        self._items: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            self._items.append(span)

    def export(self) -> bool:
        with self._lock:
            items, self._items = self._items, []
        if not items or self.exporter.export(items) is SpanExportResult.SUCCESS:
            return True
        _put_back(self._lock, self._items, items)
        return False

    def shutdown(self) -> None:
        self.exporter.shutdown()


def _put_back(lock: threading.Lock, outbox: list[_Item], items: list[_Item]) -> None:
    # What the backend refused is sent again by the next export, ahead of newer items: an
    # export failure must never make the worker score the same job again.
    with lock:
        outbox[:0] = items


class _LogOutbox(LogRecordProcessor):
    def __init__(self, exporter: LogRecordExporter) -> None:
        self.exporter = exporter
        self._lock = threading.Lock()
        self._items: list[ReadableLogRecord] = []

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        readable = ReadableLogRecord(
            log_record=log_record.log_record,
            resource=log_record.resource or Resource.create({}),
            instrumentation_scope=log_record.instrumentation_scope,
            limits=log_record.limits,
        )
        with self._lock:
            self._items.append(readable)

    def export(self) -> bool:
        with self._lock:
            items, self._items = self._items, []
        if not items or self.exporter.export(items) is LogRecordExportResult.SUCCESS:
            return True
        _put_back(self._lock, self._items, items)
        return False

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        self.exporter.shutdown()  # type: ignore[no-untyped-call]


@dataclass
class Exporters:
    tracer_provider: TracerProvider
    logger_provider: LoggerProvider
    meter_provider: MeterProvider | None
    destination: str
    _spans: _SpanOutbox
    _logs: _LogOutbox | None

    def export(self) -> bool:
        """Send what the outboxes hold; True only when every backend accepted it."""
        spans_ok = self._spans.export()
        logs_ok = self._logs.export() if self._logs is not None else True
        return spans_ok and logs_ok

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()


def build_exporters(jsonl_path: str | Path, service_name: str = "agentscore-serve") -> Exporters:
    """OTLP/HTTP for each signal an OTEL_EXPORTER_OTLP_* endpoint covers, else JSONL."""
    resource = Resource.create({"service.name": service_name})
    tracer_provider = TracerProvider(resource=resource, id_generator=_KeyedIdGenerator())
    logger_provider = LoggerProvider(resource=resource)
    meter_provider: MeterProvider | None = None
    logs: _LogOutbox | None = None
    if _endpoint("TRACES"):
        from agentscore.telemetry import otlp

        spans = _SpanOutbox(otlp.spans())
        if _endpoint("LOGS") and _takes_logs(_signal_url("LOGS", "v1/logs")):
            logs = _LogOutbox(otlp.logs())
        if _endpoint("METRICS"):
            reader = PeriodicExportingMetricReader(otlp.metrics())
            meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        destination = "OTLP/HTTP " + _without_credentials(_endpoint("TRACES"))
    else:
        jsonl = JsonlExporter(jsonl_path)
        spans, logs = _SpanOutbox(jsonl), _LogOutbox(jsonl)
        destination = str(Path(jsonl_path).resolve())
    tracer_provider.add_span_processor(spans)
    if logs is not None:
        logger_provider.add_log_record_processor(logs)
    return Exporters(tracer_provider, logger_provider, meter_provider, destination, spans, logs)


def _without_credentials(url: str) -> str:
    # The destination is logged: a user:password@ in the endpoint must not be.
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


# What a server answers for a path it does not serve: the backend has no such signal.
_NO_SUCH_ENDPOINT = frozenset({404, 405, 501})


def _takes_logs(url: str) -> bool:
    """Probe the logs endpoint once, with an empty OTLP request (valid, and a no-op for a
    receiver that takes logs). A trace-only backend (Phoenix) answers 404 or 405, and every
    job would then wait on disk for a log export that can never succeed; evaluations go out
    as spans only instead. Any other answer, or none, keeps the logs: an outage is not proof."""
    try:
        request = urllib.request.Request(
            url,
            data=b"",
            headers={"Content-Type": "application/x-protobuf", **_signal_headers("LOGS")},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=5) as reply:
            reply.read()
    except urllib.error.HTTPError as exc:
        if exc.code in _NO_SUCH_ENDPOINT:
            _log.error(
                "serve_logs_endpoint_missing",
                endpoint=_without_credentials(url),
                status=exc.code,
                hint="evaluations are exported as spans only; set OTEL_EXPORTER_OTLP_LOGS_"
                "ENDPOINT to a receiver that takes logs to get log records too",
            )
            return False
    except Exception:  # unreachable, a URL or header urllib refuses: not proof, and the
        pass  # probe must never keep the service from starting
    return True


def _signal_url(signal: str, path: str) -> str:
    # As the OTLP/HTTP exporters build it: a per-signal endpoint as is, else the common one
    # with the signal's path.
    own = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
    return own or _endpoint(signal).rstrip("/") + "/" + path


def _signal_headers(signal: str) -> dict[str, str]:
    # Read by the exporters' own parser, so the probe sends what the exporter will send
    # (its log lines are redacted: `telemetry.otlp` is imported before any probe).
    raw = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_HEADERS") or os.environ.get(
        "OTEL_EXPORTER_OTLP_HEADERS", ""
    )
    return dict(parse_env_headers(raw, liberal=True))


def _endpoint(signal: str) -> str:
    return os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT", ""
    )
