"""The service's tracer: OpenTelemetry API spans recorded as plain data and handed on at their
end as the SDK's `ReadableSpan`, what every exporter and the service's own OTLP encoder take.

The SDK's spans are built for any caller: each attribute is checked and copied into a
locked mapping as it is set, a sampler and a chain of processors run at start and end. An
evaluation's two spans cost about 70 µs that way (`benchmarks/serve_parts.py`), the largest
part of a score's telemetry in `agentscore serve`, where the only caller is the scoring
pipeline and every span is sampled and goes to the outbox. This tracer keeps what the SDK
guarantees a backend: the same attribute rules (types, sequences made tuples, the count and
length limits of OTEL_SPAN_ATTRIBUTE_*), the same status rules, span ids from the service's
id generator, the parent's trace. An exception is recorded as its type only: its message
may quote a key or message content, and no span of this service carries either.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import structlog
from opentelemetry import trace
from opentelemetry.attributes import BoundedAttributes, _clean_attribute_value
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanLimits
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.util import BoundedList
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.util.types import Attributes, AttributeValue

__all__ = ["RecordingTracerProvider"]

_log = structlog.get_logger("agentscore.serve")
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_PLAIN = frozenset((str, bool, int, float))


class RecordingTracerProvider(trace.TracerProvider):
    """Every span it starts is recorded and, at its end, passed to `on_end` as a
    `ReadableSpan` of `resource`."""

    def __init__(
        self,
        resource: Resource,
        id_generator: IdGenerator,
        on_end: Callable[[ReadableSpan], None],
        limits: SpanLimits | None = None,
    ) -> None:
        self._resource = resource
        self._ids = id_generator
        self._on_end = on_end
        self._limits = limits or SpanLimits()

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes | None = None,
    ) -> trace.Tracer:
        scope = InstrumentationScope(
            instrumenting_module_name, instrumenting_library_version, schema_url, attributes
        )
        return _Tracer(self, scope)

    def shutdown(self) -> None:
        """Nothing is buffered here: a span is handed on as it ends."""


class _Tracer(trace.Tracer):
    def __init__(self, provider: RecordingTracerProvider, scope: InstrumentationScope) -> None:
        self._provider = provider
        self._scope = scope

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> trace.Span:
        current = trace.get_current_span(context).get_span_context()
        provider = self._provider
        parent = current if current.is_valid else None
        if parent is not None:
            trace_id, trace_state = parent.trace_id, parent.trace_state
        else:
            trace_id, trace_state = provider._ids.generate_trace_id(), None
        span_context = SpanContext(
            trace_id,
            provider._ids.generate_span_id(),
            is_remote=False,
            trace_flags=_SAMPLED,
            trace_state=trace_state,
        )
        span = _Span(
            name,
            span_context,
            parent,
            kind,
            self._scope,
            provider,
            start_time if start_time is not None else time.time_ns(),
            _bounded_links(links, provider._limits),
        )
        if attributes:
            span.set_attributes(attributes)
        return span

    @contextmanager
    def start_as_current_span(  # type: ignore[override]
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> Iterator[trace.Span]:
        span = self.start_span(name, context, kind, attributes, links, start_time)
        with trace.use_span(
            span,
            end_on_exit=end_on_exit,
            record_exception=record_exception,
            set_status_on_exception=set_status_on_exception,
        ) as current:
            yield current


class _Span(trace.Span):
    def __init__(
        self,
        name: str,
        context: SpanContext,
        parent: SpanContext | None,
        kind: SpanKind,
        scope: InstrumentationScope,
        provider: RecordingTracerProvider,
        start_time: int,
        links: BoundedList[Link],
    ) -> None:
        self._name = name
        self._context = context
        self._parent = parent
        self._kind = kind
        self._scope = scope
        self._provider = provider
        self._start_time = start_time
        self._links = links
        self._attributes: dict[str, AttributeValue] = {}
        self._dropped_attributes = 0
        self._events: BoundedList[Event] | None = None  # made by the first event
        self._status = Status(StatusCode.UNSET)
        self._ended = False
        self._lock = threading.Lock()

    def get_span_context(self) -> SpanContext:
        return self._context

    def is_recording(self) -> bool:
        return not self._ended

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        with self._lock:
            if self._ended:
                return
            for key, value in attributes.items():
                self._set(key, value)

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        with self._lock:
            if not self._ended:
                self._set(key, value)

    def _set(self, key: str, value: Any) -> None:
        """As the SDK's `BoundedAttributes`: a wrong key is dropped; a value is cleaned (made
        immutable, strings cut to the length limit); a key set again moves to the end; a full
        span drops its oldest attribute for the new one."""
        if not key or type(key) is not str:
            self._dropped_attributes += 1
            return
        limits = self._provider._limits
        most = limits.max_attribute_length
        if type(value) not in _PLAIN or (most is not None and type(value) is str):
            value = _clean_attribute_value(value, most)
        attributes = self._attributes
        most_attributes = limits.max_span_attributes
        if key in attributes:
            del attributes[key]
        elif most_attributes is not None and len(attributes) >= most_attributes:
            self._dropped_attributes += 1
            if not attributes:  # a limit of 0
                return
            del attributes[next(iter(attributes))]
        attributes[key] = value

    def add_event(
        self, name: str, attributes: Attributes = None, timestamp: int | None = None
    ) -> None:
        with self._lock:
            if self._ended:
                return
            limits = self._provider._limits
            if self._events is None:
                self._events = BoundedList(limits.max_events)  # drops the oldest, as the SDK
            bounded = BoundedAttributes(
                limits.max_event_attributes,
                attributes,
                immutable=True,
                max_value_len=limits.max_attribute_length,
            )
            self._events.append(Event(name, bounded, timestamp or time.time_ns()))

    def update_name(self, name: str) -> None:
        with self._lock:
            if not self._ended:
                self._name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        with self._lock:
            # As the SDK: an OK status is final, and UNSET never replaces another.
            code = status.status_code if isinstance(status, Status) else status
            if self._ended or self._status.status_code is StatusCode.OK:
                return
            if code is StatusCode.UNSET:
                return
            self._status = status if isinstance(status, Status) else Status(status, description)

    def record_exception(
        self,
        exception: BaseException,
        attributes: Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        # The type, never the message or the stack: either may quote a key or content.
        event_attributes: dict[str, AttributeValue] = {
            "exception.type": type(exception).__qualname__,
            "exception.escaped": str(escaped),
        }
        self.add_event("exception", event_attributes, timestamp)

    def end(self, end_time: int | None = None) -> None:
        with self._lock:
            if self._ended:
                _log.warning("span_ended_twice", span=self._name)
                return
            self._ended = True
        attributes: Attributes = self._attributes
        if self._dropped_attributes:
            bounded = BoundedAttributes(attributes=self._attributes, immutable=True)
            bounded.dropped = self._dropped_attributes
            attributes = bounded
        self._provider._on_end(
            ReadableSpan(
                name=self._name,
                context=self._context,
                parent=self._parent,
                resource=self._provider._resource,
                attributes=attributes,
                events=self._events if self._events is not None else (),
                links=self._links,
                kind=self._kind,
                status=self._status,
                start_time=self._start_time,
                end_time=end_time if end_time is not None else time.time_ns(),
                instrumentation_scope=self._scope,
            )
        )


def _bounded_links(links: Sequence[Link] | None, limits: SpanLimits) -> BoundedList[Link]:
    """As the SDK keeps links: a link with nothing to point at is dropped, each link's
    attributes are bounded, and past the limit the oldest link goes."""
    kept = [
        Link(
            link.context,
            BoundedAttributes(
                limits.max_link_attributes,
                link.attributes,
                immutable=True,
                max_value_len=limits.max_attribute_length,
            ),
        )
        for link in links or ()
        if link.context.is_valid or link.attributes or link.context.trace_state
    ]
    return BoundedList.from_seq(limits.max_links, kept)
