"""The service's outbox: an in-memory exporter that the OTel SDK's span and log processors
export into as spans end and records are emitted, and that the worker empties in batches.

What a batch's `send` did not deliver goes back to the front of the outbox, ahead of newer
items, so an export failure never makes the worker score the same job again.

An exception is kept by its type only. The SDK records an exception's message and stack
trace, either of which may quote a key or message content, and no span or record of this
service carries those. (The pipeline records none; this holds for any caller.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

import structlog
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from agentscore._wire.otlp_out import Delivery

__all__ = ["LogOutbox", "Outbox", "SpanOutbox"]

_log = structlog.get_logger("agentscore.serve")

_Item = TypeVar("_Item")
_EXCEPTION_TEXT = frozenset({"exception.message", "exception.stacktrace"})


class Outbox(Generic[_Item]):
    """Items waiting for the next export. `send` says what the backend did not take."""

    def __init__(self, send: Callable[[list[_Item]], Delivery]) -> None:
        self._send = send
        self._lock = threading.Lock()
        self._items: list[_Item] = []
        self.retry_after: float | None = None  # the backend's, from the last export

    def add(self, items: Iterable[_Item]) -> None:
        with self._lock:
            self._items.extend(items)

    def export(self) -> bool:
        with self._lock:
            items, self._items = self._items, []
        try:
            delivery = self._send(items) if items else Delivery([])
        except Exception as exc:  # an encoding or transport bug: keep the items, never lose them
            _log.error("serve_export_crashed", error_type=type(exc).__name__)
            delivery = Delivery(items)
        self.retry_after = delivery.retry_after
        if delivery.unsent:
            with self._lock:
                self._items[:0] = delivery.unsent
        return delivery.done


class SpanOutbox(SpanExporter):
    """Ended spans into an outbox (the SDK's `SimpleSpanProcessor` exports each at its end)."""

    def __init__(self, outbox: Outbox[ReadableSpan]) -> None:
        self.outbox = outbox

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.outbox.add(_span_without_exception_text(span) for span in spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """What the outbox holds is the worker's to export."""


class LogOutbox(LogRecordExporter):
    """Emitted log records into an outbox (through the SDK's `SimpleLogRecordProcessor`);
    with no outbox (a backend without a logs endpoint) they go nowhere."""

    def __init__(self, outbox: Outbox[ReadableLogRecord] | None) -> None:
        self.outbox = outbox

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        if self.outbox is not None:
            self.outbox.add(_record_without_exception_text(record) for record in batch)
        return LogRecordExportResult.SUCCESS

    def shutdown(self) -> None:
        """What the outbox holds is the worker's to export."""

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def _span_without_exception_text(span: ReadableSpan) -> ReadableSpan:
    if not any(_EXCEPTION_TEXT & set(event.attributes or ()) for event in span.events):
        return span
    events = [
        Event(
            event.name,
            {k: v for k, v in (event.attributes or {}).items() if k not in _EXCEPTION_TEXT},
            event.timestamp,
        )
        for event in span.events
    ]
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=span.attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _record_without_exception_text(record: ReadableLogRecord) -> ReadableLogRecord:
    attributes = record.log_record.attributes or {}
    if _EXCEPTION_TEXT & set(attributes):
        # The SDK made this record for this export alone: nobody else holds it.
        record.log_record.attributes = {
            k: v for k, v in attributes.items() if k not in _EXCEPTION_TEXT
        }
    return record
