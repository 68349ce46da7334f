"""`ScoringSpanProcessor`: score the generations of any OpenTelemetry-instrumented framework.

Added to the application's `TracerProvider`, it watches ended spans, finds the finished
generations in them (the rule is in `agentscore.spans.assembler`) and submits each through
`Evals.submit_run`, parented to the span it judges. With trace or conversation scorers it also
keeps each trace whole (`agentscore.spans.traces`) and, `trace_grace` seconds after its root
span ended, submits it as one run (`agentscore.spans.trajectory.trace_run`), parented to the
root: the trace scorers judge it, and it is a turn of its conversation (`gen_ai.conversation.id`
or `session.id` on its spans). `on_end` only appends the span to a bounded
queue: reading messages and deciding generations happen on the processor's own thread.
Evaluation spans go through the provider the processor is attached to (unless `Evals` names
its own telemetry), so they reach the same exporters as the spans they judge.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable

import structlog
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

from agentscore._runtime.courtesy import give_way, start_giving_way
from agentscore._runtime.hooks import after_fork_in_child
from agentscore._runtime.workqueue import WorkQueue
from agentscore.errors import ConfigurationError
from agentscore.evals import Evals
from agentscore.pipeline.sampling import sampled, trace_point
from agentscore.run import Level, ScorerRun
from agentscore.spans.assembler import TraceAssembler
from agentscore.spans.records import SpanRecord
from agentscore.spans.traces import TraceBuffer
from agentscore.spans.trajectory import trace_run
from agentscore.telemetry.core import AGENTSCORE_SCOPE, Telemetry, scoring_in_progress

__all__ = ["ScoringSpanProcessor"]

_log = structlog.get_logger("agentscore.spans")
# What a generation found in the spans feeds, and what a whole trace feeds.
_GENERATION: tuple[Level, ...] = ("generation",)
_TRACE: tuple[Level, ...] = ("trace", "conversation")


class ScoringSpanProcessor(SpanProcessor):
    """Finds finished generations in ended spans and scores them with `evals`.

    `max_queue` bounds the ended spans waiting to be read (beyond it they are dropped and
    counted in `dropped_spans`); `max_open_bytes` bounds what open traces hold (a span past it
    is dropped and counted the same way; text attributes are cut to what a scorer reads);
    `idle_timeout` closes a trace whose root has not ended after that many seconds without a
    new span. With trace or conversation scorers, whole traces are held too (within
    `max_traces`, `max_spans_per_trace` and `max_open_bytes` of their own; a trace that loses
    a span is not scored, and counted in `dropped_traces`) and scored `trace_grace` seconds
    after their root ended. `clock` (seconds, `time.monotonic` by default) is what idleness
    and the grace are measured by. Call `force_flush()` to read every span ended so far (and
    submit the traces complete by now), then `evals.runner.flush()` (or the default runner's)
    to wait for the scores.
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
        trace_grace: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not isinstance(evals, Evals):
            raise ConfigurationError(f"evals must be an Evals, got {type(evals).__name__}")
        if max_queue < 1 or idle_timeout <= 0 or max_open_bytes < 1 or trace_grace < 0:
            raise ConfigurationError(
                "max_queue and max_open_bytes must be at least 1, idle_timeout positive and "
                "trace_grace not negative"
            )
        self.evals = evals
        self.max_queue = max_queue
        self._clock = clock
        levels = {entry.scorer.level for entry in evals.entries}
        # The sampling decision is a function of the trace id (agentscore.pipeline.sampling):
        # a trace no scorer would sample is left at once, before any span of it is queued.
        # A conversation's scorers are sampled on its id: every trace may be one of its turns.
        self._top_rate = max((entry.sampling for entry in evals.entries), default=0.0)
        if "conversation" in levels:
            self._top_rate = 1.0
        self._assembler = TraceAssembler(
            idle_timeout=idle_timeout,
            max_traces=max_traces,
            max_spans_per_trace=max_spans_per_trace,
            max_bytes=max_open_bytes,
        )
        self._traces: TraceBuffer | None = None
        if levels & {"trace", "conversation"}:
            self._traces = TraceBuffer(
                grace=trace_grace,
                idle_timeout=idle_timeout,
                max_traces=max_traces,
                max_spans_per_trace=max_spans_per_trace,
                max_bytes=max_open_bytes,
            )
        # None: a tick (force_flush), so that traces due by now are submitted.
        self._spans: WorkQueue[ReadableSpan | None] = WorkQueue(max_queue)
        self._dropped = 0
        self._thread: threading.Thread | None = None
        self._thread_lock = threading.Lock()
        # Where evaluations are emitted: learnt from the first span started (see on_start).
        self._telemetry: Telemetry | None = None
        _processors.add(self)

    @property
    def dropped_spans(self) -> int:
        """Spans lost to a full queue, an oversized trace or the open-trace byte budget."""
        held = self._traces.dropped_spans if self._traces is not None else 0
        return self._dropped + self._assembler.dropped_spans + held

    @property
    def dropped_traces(self) -> int:
        """Whole traces not scored by the trace scorers: one of their spans did not fit."""
        return self._traces.dropped_traces if self._traces is not None else 0

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self._telemetry is None and self.evals.telemetry is None:
            self._telemetry = _attached_telemetry(span)

    def on_end(self, span: ReadableSpan) -> None:
        if scoring_in_progress():
            return  # the judge's own spans
        scope = span.instrumentation_scope
        if scope is not None and scope.name == AGENTSCORE_SCOPE:
            return  # agentscore.Agent and @evals.observe score through their own evals
        context = span.context
        if context is not None and not sampled(self._top_rate, trace_point(context.trace_id)):
            return
        try:
            with self._spans.lock:
                if self._spans.put(span) is not None:
                    self._dropped += 1
                    return
            if self._thread is None:
                self._start()
        except Exception as exc:  # the application's span pipeline must never see our trouble
            _log.error("span_processor_failed", error_type=type(exc).__name__)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Read every span ended so far, and submit the traces complete by now (their root
        ended `trace_grace` ago); True when done within the timeout."""
        if self._thread is None:
            return len(self._spans) == 0
        with self._spans.lock:
            self._spans.put(None)  # a full queue is read anyway, and looks for due traces
        return self._spans.join(timeout_millis / 1000)

    def shutdown(self) -> None:
        """Read what is queued, close every open trace (scoring what it holds), and stop."""
        self.force_flush()
        self._spans.close()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=30)
        else:
            self._submit(self._assembler.drain())
            self._submit_traces(self._traces.drain() if self._traces is not None else [])

    def _start(self) -> None:
        with self._thread_lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(
                target=self._work, name="agentscore-span-reader", daemon=True
            )
            self._thread.start()

    def _work(self) -> None:
        start_giving_way()
        interval = min(self._assembler.idle_timeout / 2, 5.0)
        while True:
            self._spans.wait_for_items(self._wait(interval))
            closed = self._spans.closed
            batch = self._spans.take()
            try:
                self._read(batch)
            except Exception as exc:  # one bad span must not end the reader
                _log.error("span_reading_failed", error_type=type(exc).__name__)
            self._spans.finished(len(batch))
            if closed and not batch:
                self._submit(self._assembler.drain())
                self._submit_traces(self._traces.drain() if self._traces is not None else [])
                return

    def _wait(self, interval: float) -> float:
        """Seconds to wait for spans: at most until the next trace's grace is over."""
        due = self._traces.next_due() if self._traces is not None else None
        if due is None:
            return interval
        return min(interval, max(0.01, due - self._clock()))

    def _read(self, batch: list[ReadableSpan | None]) -> None:
        now = self._clock()
        for span in batch:
            if span is None:
                continue
            give_way()  # a batch is every span ended since the last: long when loaded
            try:
                record = SpanRecord.from_readable(span).cut()
                self._submit(self._assembler.add(record, now))
                if self._traces is not None:
                    self._traces.add(record, now)
            except Exception as exc:
                _log.error("span_reading_failed", span=span.name, error_type=type(exc).__name__)
        self._submit(self._assembler.expire(now))
        if self._traces is not None:
            self._submit_traces(self._traces.due(now))

    def _submit(self, runs: list[ScorerRun]) -> None:
        for run in runs:
            self.evals.submit_run(run, telemetry=self._telemetry, levels=_GENERATION)

    def _submit_traces(self, traces: list[list[SpanRecord]]) -> None:
        """Each whole trace, to the trace scorers and as a turn of its conversation."""
        for spans in traces:
            give_way()
            try:
                run = trace_run(spans)
            except Exception as exc:
                _log.error("trace_reading_failed", error_type=type(exc).__name__)
                continue
            self.evals.submit_run(run, telemetry=self._telemetry, levels=_TRACE)

    def _after_fork(self) -> None:
        # The reader thread does not exist in a forked child; start afresh there.
        self._spans.reset()
        self._thread_lock = threading.Lock()
        self._thread = None


def _attached_telemetry(span: Span) -> Telemetry | None:
    """Telemetry whose tracer provider feeds the span processors of the provider `span` came
    from: a provider has no public link back from its spans or processors, so a provider is
    built around the same processor pipeline (the SDK's `active_span_processor` argument).
    None for a span of another SDK: evaluations then go to the global provider."""
    pipeline = getattr(span, "_span_processor", None)
    resource = getattr(span, "resource", None)
    if pipeline is None:
        return None
    try:
        provider = TracerProvider(
            resource=resource, active_span_processor=pipeline, shutdown_on_exit=False
        )
    except Exception as exc:  # an SDK whose provider takes other arguments: the global one
        _log.warning("span_processor_provider_unknown", error_type=type(exc).__name__)
        return None
    return Telemetry(tracer_provider=provider)


_processors: weakref.WeakSet[ScoringSpanProcessor] = weakref.WeakSet()


def _reset_after_fork() -> None:
    for processor in list(_processors):
        processor._after_fork()


after_fork_in_child(_reset_after_fork)
