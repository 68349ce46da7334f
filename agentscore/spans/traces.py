"""Whole traces out of a stream of ended spans, for the trace-level scorers: a trace is
complete `grace` seconds after its (local) root span ended, so that spans ending just after
the root (a background task's, an exporter's batch arriving late) are still part of it; or
after `idle_timeout` seconds without a new span, for a trace whose root never comes.

Held whole, bounded like the span assembler's open traces: `max_traces`, `max_spans_per_trace`
and `max_bytes` (`span_bytes`). A trace is never scored in part: one that loses a span to a
bound is dropped whole (counted, logged with its id), and a span arriving after its trace was
handed over is counted dropped too, never the start of a new, partial trace. Single-threaded
and without a clock: its owner feeds it and says what time it is.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import structlog

from agentscore.spans.assembler import span_bytes
from agentscore.spans.reading import span_role
from agentscore.spans.records import SpanRecord

__all__ = ["TraceBuffer"]

_log = structlog.get_logger("agentscore.spans")

# What an open trace costs beyond its spans (as in the assembler).
_TRACE_OVERHEAD = 1024


@dataclass(slots=True)
class _Open:
    last_seen: float
    spans: list[SpanRecord] = field(default_factory=list)
    held_bytes: int = _TRACE_OVERHEAD
    root_ended: float | None = None


class TraceBuffer:
    """Feed it ended spans with `add`; `due(now)` returns the traces complete by `now`, each
    as its spans, once."""

    def __init__(
        self,
        *,
        grace: float = 2.0,
        idle_timeout: float = 300.0,
        max_traces: int = 10_000,
        max_spans_per_trace: int = 2_000,
        max_bytes: int = 256 * 2**20,
    ) -> None:
        self.grace = grace
        self.idle_timeout = idle_timeout
        self.max_traces = max_traces
        self.max_spans_per_trace = max_spans_per_trace
        self.max_bytes = max_bytes
        self.held_bytes = 0
        self.dropped_spans = 0
        self.dropped_traces = 0
        self._open: OrderedDict[int, _Open] = OrderedDict()
        # Traces handed over or dropped lately, and whether a late span of theirs was logged:
        # a span of one of them is not the start of a new trace.
        self._gone: OrderedDict[int, bool] = OrderedDict()

    @property
    def open_traces(self) -> int:
        return len(self._open)

    def is_open(self, trace_id: int) -> bool:
        """True while the trace is held, waiting for its root's grace or the idle timeout."""
        return trace_id in self._open

    def bytes_to_hold(self, spans: Sequence[SpanRecord]) -> int:
        """What adding `spans` would add to `held_bytes`, at most (a trace is held past its
        root, for the grace, so a root counts like any span)."""
        kept = [span for span in spans if span.trace_id not in self._gone]
        new_traces = {span.trace_id for span in kept} - self._open.keys()
        return sum(map(span_bytes, kept)) + _TRACE_OVERHEAD * len(new_traces)

    def add(self, span: SpanRecord, now: float) -> None:
        trace_id = span.trace_id
        if trace_id in self._gone:
            self._late(trace_id)
            return
        held = self._open.get(trace_id)
        if held is None:
            if len(self._open) >= self.max_traces:
                self._drop_new(trace_id, "too_many_open_traces")
                return
            held = self._open[trace_id] = _Open(last_seen=now)
            self.held_bytes += held.held_bytes
        held.last_seen = now
        self._open.move_to_end(trace_id)
        size = span_bytes(span)
        if len(held.spans) >= self.max_spans_per_trace:
            self._drop(trace_id, "too_many_spans")
            return
        if self.held_bytes + size > self.max_bytes:
            self._drop(trace_id, "open_trace_bytes")
            return
        held.spans.append(span)
        held.held_bytes += size
        self.held_bytes += size
        if span.is_local_root and held.root_ended is None:
            held.root_ended = now

    def due(self, now: float) -> list[list[SpanRecord]]:
        """The traces complete at `now`: root ended `grace` seconds ago, or idle since
        `idle_timeout`; those holding no agent or model call are left out (nothing to score)."""
        ready = [
            trace_id
            for trace_id, held in self._open.items()
            if (held.root_ended is not None and now - held.root_ended >= self.grace)
            or now - held.last_seen >= self.idle_timeout
        ]
        return [spans for trace_id in ready if (spans := self._close(trace_id))]

    def next_due(self) -> float | None:
        """The earliest time (on the owner's clock) a trace whose root ended becomes due."""
        ends = [held.root_ended for held in self._open.values() if held.root_ended is not None]
        return min(ends) + self.grace if ends else None

    def drain(self) -> list[list[SpanRecord]]:
        """Every open trace now, complete or not (the processor is shutting down)."""
        return [spans for trace_id in list(self._open) if (spans := self._close(trace_id))]

    def _close(self, trace_id: int) -> list[SpanRecord]:
        held = self._open.pop(trace_id)
        self.held_bytes -= held.held_bytes
        self._forget_later(trace_id)
        if not any(span_role(s.attributes) in ("agent", "llm") for s in held.spans):
            return []
        return held.spans

    def _drop(self, trace_id: int, reason: str) -> None:
        held = self._open.pop(trace_id)
        self.held_bytes -= held.held_bytes
        self.dropped_spans += len(held.spans) + 1
        self._drop_new(trace_id, reason, counted_span=False)

    def _drop_new(self, trace_id: int, reason: str, *, counted_span: bool = True) -> None:
        if counted_span:
            self.dropped_spans += 1
        self.dropped_traces += 1
        self._forget_later(trace_id)
        _log.warning("trace_not_scored", trace_id=f"{trace_id:032x}", reason=reason)

    def _late(self, trace_id: int) -> None:
        self.dropped_spans += 1
        if not self._gone[trace_id]:
            self._gone[trace_id] = True
            _log.info("trace_span_after_trace_closed", trace_id=f"{trace_id:032x}")

    def _forget_later(self, trace_id: int) -> None:
        self._gone[trace_id] = False
        while len(self._gone) > self.max_traces:
            self._gone.popitem(last=False)
