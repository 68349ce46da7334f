"""Where evaluations go: OTLP/HTTP per the standard OTEL_EXPORTER_OTLP_* variables, else JSONL.

The pipeline's spans and log records are made by the OTel SDK's providers, which export each
as it ends into an outbox (`agentscore.serve.outbox`). They wait there until the worker
exports a batch and learns whether the backend took it: a job row is deleted only after
that, and what the backend did not take stays in the outbox for the next export
(`OtlpSender.deliver` says what that is, and leaves out the one evaluation a backend refuses
as too large on its own). A re-export after a crash must not become a second evaluation, so
the evaluation span (and the judge spans under it) take ids derived from the job's key (the
provider's `IdGenerator`): a backend then receives the same span again, not a new one.
"""

from __future__ import annotations

import contextvars
import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import structlog
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExportResult, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

from agentscore._wire.otlp_out import (
    Delivery,
    OtlpSender,
    OtlpUnanswered,
    encode_logs,
    encode_spans,
)
from agentscore._wire.otlp_settings import OtlpSettings, endpoint_configured, without_credentials
from agentscore.serve.outbox import LogOutbox, Outbox, SpanOutbox
from agentscore.serve.queue import JobKey
from agentscore.telemetry.setup import JsonlExporter

__all__ = ["Exporters", "build_exporters", "keyed_ids"]

_log = structlog.get_logger("agentscore.serve")

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


@dataclass
class Exporters:
    tracer_provider: TracerProvider
    logger_provider: LoggerProvider
    meter_provider: MeterProvider | None
    destination: str
    _spans: Outbox[ReadableSpan]
    _logs: Outbox[ReadableLogRecord] | None
    _close: Callable[[], None]

    def export(self) -> bool:
        """Send what the outboxes hold; True only when every backend accepted it."""
        spans_ok = self._spans.export()
        logs_ok = self._logs.export() if self._logs is not None else True
        return spans_ok and logs_ok

    @property
    def retry_after(self) -> float | None:
        """How long a backend that refused the last export asked to be left alone."""
        waits = [box.retry_after for box in (self._spans, self._logs) if box is not None]
        return max((wait for wait in waits if wait is not None), default=None)

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()
        self._close()


def build_exporters(jsonl_path: str | Path, service_name: str = "agentscore-serve") -> Exporters:
    """OTLP/HTTP for each signal an OTEL_EXPORTER_OTLP_* endpoint covers, else JSONL."""
    resource = Resource.create({"service.name": service_name})
    meter_provider: MeterProvider | None = None
    logs: Outbox[ReadableLogRecord] | None = None
    close: Callable[[], None]
    if endpoint_configured("TRACES"):
        span_sender = OtlpSender(OtlpSettings.from_environment("TRACES"))
        log_sender = OtlpSender(OtlpSettings.from_environment("LOGS"))
        spans = Outbox[ReadableSpan](lambda items: span_sender.deliver(items, encode_spans))
        if endpoint_configured("LOGS") and _takes_logs(log_sender):
            logs = Outbox(lambda items: log_sender.deliver(items, encode_logs))

        def close() -> None:
            span_sender.close()
            log_sender.close()

        if endpoint_configured("METRICS"):
            from agentscore.telemetry import otlp

            reader = PeriodicExportingMetricReader(otlp.metrics())
            meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        destination = "OTLP/HTTP " + without_credentials(span_sender.url)
    else:
        jsonl = JsonlExporter(jsonl_path)
        spans = Outbox(
            lambda items: Delivery(
                [] if jsonl.export(items) is SpanExportResult.SUCCESS else list(items)
            )
        )
        logs = Outbox(
            lambda items: Delivery(
                [] if jsonl.export(items) is LogRecordExportResult.SUCCESS else list(items)
            )
        )
        destination = str(Path(jsonl_path).resolve())
        close = jsonl.shutdown
    # The SDK's providers, sampling every span whatever OTEL_TRACES_SAMPLER says (the
    # application's setting, not the service's), with no exit hook of their own (the
    # service drains, then shuts them down).
    tracer_provider = TracerProvider(
        sampler=ALWAYS_ON,
        resource=resource,
        id_generator=_KeyedIdGenerator(),
        shutdown_on_exit=False,
    )
    tracer_provider.add_span_processor(SimpleSpanProcessor(SpanOutbox(spans)))
    logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
    # A backend without a logs endpoint gets evaluations as spans only: records go nowhere.
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(LogOutbox(logs)))
    return Exporters(
        tracer_provider, logger_provider, meter_provider, destination, spans, logs, close
    )


# What a server answers for a path it does not serve: the backend has no such signal.
_NO_SUCH_ENDPOINT = frozenset({404, 405, 501})


def _takes_logs(sender: OtlpSender) -> bool:
    """Probe the logs endpoint once, with an empty OTLP request (valid, and a no-op for a
    receiver that takes logs). A trace-only backend (Phoenix) answers 404 or 405, and every
    job would then wait on disk for a log export that can never succeed; evaluations go out
    as spans only instead. Any other answer, or none, keeps the logs: an outage is not proof."""
    try:
        status, _ = sender.post(b"")
    except OtlpUnanswered:
        return True
    if status in _NO_SUCH_ENDPOINT:
        _log.error(
            "serve_logs_endpoint_missing",
            endpoint=without_credentials(sender.url),
            status=status,
            hint="evaluations are exported as spans only; set OTEL_EXPORTER_OTLP_LOGS_"
            "ENDPOINT to a receiver that takes logs to get log records too",
        )
        return False
    return True
