"""Which span is the root of each recent trace, for sinks that annotate the root too.

A backend's trace list shows the root span (under FastAPI's instrumentation, `POST /chat`),
not the agent's span, and a span context does not say which span is its trace's root. This
span processor remembers, per trace, the first span that started without a local parent.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

__all__ = ["RootSpans"]


class RootSpans(SpanProcessor):
    """Add it to your tracer provider (`provider.add_span_processor(roots)`) and pass it to
    `PhoenixAnnotations(root_spans=roots)`. Keeps the latest `max_traces` traces."""

    def __init__(self, max_traces: int = 10_000) -> None:
        self.max_traces = max_traces
        self._roots: OrderedDict[int, int] = OrderedDict()
        self._lock = threading.Lock()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        parent = span.parent
        if parent is not None and not parent.is_remote:
            return
        trace_id, span_id = span.context.trace_id, span.context.span_id
        with self._lock:
            # A second local root in one trace (a remote parent seen twice): the first stays.
            if trace_id in self._roots:
                return
            self._roots[trace_id] = span_id
            if len(self._roots) > self.max_traces:
                self._roots.popitem(last=False)

    def on_end(self, span: ReadableSpan) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def root_of(self, trace_id: str) -> str | None:
        """The root span id (16 hex digits) of a trace id (32 hex digits), if it was seen."""
        try:
            key = int(trace_id, 16)
        except ValueError:
            return None
        with self._lock:
            span_id = self._roots.get(key)
        return None if span_id is None else format(span_id, "016x")
