"""`ScoringSpanProcessor`: score the generations of any OpenTelemetry-instrumented framework.

Added to the application's `TracerProvider`, it watches ended spans, finds the finished
generations in them (the rule is in `agentscore.spans.assembler`) and submits each through
`Evals.submit_run`, parented to the span it judges. `on_end` only appends the span to a bounded
queue: reading messages and deciding generations happen on the processor's own thread.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque

import structlog
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from agentscore.errors import ConfigurationError
from agentscore.evals import Evals
from agentscore.run import ScorerRun
from agentscore.runtime.hooks import after_fork_in_child
from agentscore.spans.assembler import TraceAssembler
from agentscore.spans.records import SpanRecord
from agentscore.telemetry.core import AGENTSCORE_SCOPE, scoring_in_progress

__all__ = ["ScoringSpanProcessor"]

_log = structlog.get_logger("agentscore.spans")
_LOW_64_BITS = (1 << 64) - 1
_TRACE_ID_SPACE = float(1 << 64)


class ScoringSpanProcessor(SpanProcessor):
    """Finds finished generations in ended spans and scores them with `evals`.

    `max_queue` bounds the ended spans waiting to be read (beyond it they are dropped and
    counted in `dropped_spans`); `max_open_bytes` bounds what open traces hold (a span past it
    is dropped and counted the same way; text attributes are cut to what a scorer reads);
    `idle_timeout` closes a trace whose root has not ended after that many seconds without a
    new span. Call `force_flush()` to read every span ended so far,
    then `evals.runner.flush()` (or the default runner's) to wait for the scores.
    """

    def __init__(
        self,
        evals: Evals,
        *,
        max_queue: int = 100_000,
        idle_timeout: float = 300.0,
        max_traces: int = 10_000,
        max_spans_per_trace: int = 2_000,
        max_open_bytes: int = 256 * 2**20,
    ) -> None:
        if not isinstance(evals, Evals):
            raise ConfigurationError(f"evals must be an Evals, got {type(evals).__name__}")
        if max_queue < 1 or idle_timeout <= 0 or max_open_bytes < 1:
            raise ConfigurationError(
                "max_queue and max_open_bytes must be at least 1 and idle_timeout positive"
            )
        self.evals = evals
        self.max_queue = max_queue
        # The sampling decision is a function of the trace id (agentscore.pipeline.sampling):
        # a trace no scorer would sample is left at once, before any span of it is queued.
        top_rate = max((entry.sampling for entry in evals.entries), default=0.0)
        self._sampled_below = top_rate * _TRACE_ID_SPACE
        self._assembler = TraceAssembler(
            idle_timeout=idle_timeout,
            max_traces=max_traces,
            max_spans_per_trace=max_spans_per_trace,
            max_bytes=max_open_bytes,
        )
        self._condition = threading.Condition()
        self._pending: deque[ReadableSpan] = deque()
        self._received = self._processed = 0
        self._dropped = 0
        self._closed = False
        self._thread: threading.Thread | None = None
        _processors.add(self)

    @property
    def dropped_spans(self) -> int:
        """Spans lost to a full queue, an oversized trace or the open-trace byte budget."""
        return self._dropped + self._assembler.dropped_spans

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        if scoring_in_progress():
            return  # the judge's own spans
        scope = span.instrumentation_scope
        if scope is not None and scope.name == AGENTSCORE_SCOPE:
            return  # agentscore.Agent and @evals.observe score through their own evals
        context = span.context
        if context is not None and (context.trace_id & _LOW_64_BITS) >= self._sampled_below:
            return
        try:
            with self._condition:
                if self._closed or len(self._pending) >= self.max_queue:
                    self._dropped += 1
                    return
                self._pending.append(span)
                self._received += 1
                if self._thread is None:
                    self._start()
                # All: a force_flush may wait on the same condition as the reader.
                self._condition.notify_all()
        except Exception as exc:  # the application's span pipeline must never see our trouble
            _log.error("span_processor_failed", error_type=type(exc).__name__)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Read every span ended so far; True when done within the timeout."""
        deadline = time.monotonic() + timeout_millis / 1000
        with self._condition:
            target = self._received
            self._condition.notify_all()
            while self._processed < target:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._thread is None:
                    return self._processed >= target
                self._condition.wait(remaining)
        return True

    def shutdown(self) -> None:
        """Read what is queued, close every open trace (scoring what it holds), and stop."""
        self.force_flush()
        with self._condition:
            self._closed = True
            self._condition.notify()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=30)
        else:
            self._submit(self._assembler.drain())

    def _start(self) -> None:
        self._thread = threading.Thread(
            target=self._work, name="agentscore-span-reader", daemon=True
        )
        self._thread.start()

    def _work(self) -> None:
        interval = min(self._assembler.idle_timeout / 2, 5.0)
        while True:
            with self._condition:
                if not self._pending and not self._closed:
                    self._condition.wait(interval)
                batch = list(self._pending)
                self._pending.clear()
                closed = self._closed
            try:
                self._read(batch)
            except Exception as exc:  # one bad span must not end the reader
                _log.error("span_reading_failed", error_type=type(exc).__name__)
            with self._condition:
                self._processed += len(batch)
                self._condition.notify_all()
            if closed and not batch:
                self._submit(self._assembler.drain())
                return

    def _read(self, batch: list[ReadableSpan]) -> None:
        now = time.monotonic()
        for span in batch:
            try:
                self._submit(self._assembler.add(SpanRecord.from_readable(span).cut(), now))
            except Exception as exc:
                _log.error("span_reading_failed", span=span.name, error_type=type(exc).__name__)
        self._submit(self._assembler.expire(now))

    def _submit(self, runs: list[ScorerRun]) -> None:
        for run in runs:
            self.evals.submit_run(run)

    def _after_fork(self) -> None:
        # The reader thread does not exist in a forked child; start afresh there.
        self._condition = threading.Condition()
        self._pending.clear()
        self._received = self._processed = 0
        self._thread = None


_processors: weakref.WeakSet[ScoringSpanProcessor] = weakref.WeakSet()


def _reset_after_fork() -> None:
    for processor in list(_processors):
        processor._after_fork()


after_fork_in_child(_reset_after_fork)
