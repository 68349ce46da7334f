"""From received spans to queued score jobs: span reading, sampling, and one commit per request.

Only what span reading needs is stored: spans with a GenAI or OpenInference role whole (text
attributes cut to what a scorer reads), every other span as a bare parent link (so an agent
span still finds the model calls beneath an HTTP span) with its conversation attributes. A
trace's spans stay on disk while it is open and go once it closes; the generations it yields
become job rows in the same transaction. With trace or conversation scorers, a trace is also
held whole (`TraceBuffer`) until `trace_grace` seconds after its root ended (or the idle
timeout): then its run (`trace_run`) becomes the trace scorers' jobs and a turn of its
conversation (`agentscore.serve.levels`), in the transaction that lets go of its spans. What
open traces hold is bounded in bytes (`max_open_bytes`): a request that would take them past
it is refused whole with `OverBudget`, and answered 503, before anything of it is kept.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence

import structlog

from agentscore.evals import Evals
from agentscore.pipeline.conversations import DEFAULT_CONVERSATION_IDLE
from agentscore.run import ScorerRun
from agentscore.serve.conversations import DEFAULT_MAX_CONVERSATION_BYTES
from agentscore.serve.levels import END_CONVERSATION, LevelJobs
from agentscore.serve.queue import Commit, SqliteQueue
from agentscore.serve.stats import ServiceStats
from agentscore.spans.assembler import TraceAssembler
from agentscore.spans.reading import span_role
from agentscore.spans.records import SpanRecord
from agentscore.spans.traces import TraceBuffer
from agentscore.spans.trajectory import trace_run
from agentscore.telemetry.ledger import Ledger
from agentscore.telemetry.spend import SpendBudget
from agentscore.usage import Price

__all__ = ["DEFAULT_MAX_OPEN_BYTES", "DEFAULT_TRACE_GRACE", "Ingestor", "OverBudget"]

_log = structlog.get_logger("agentscore.serve")

DEFAULT_MAX_OPEN_BYTES = 256 * 2**20
DEFAULT_TRACE_GRACE = 2.0
# What a bare parent link keeps of a span with no role: what makes a trace a conversation's
# turn, wherever the application put it (often on its root, an HTTP span).
_LINK_ATTRIBUTES = ("gen_ai.conversation.id", "session.id", END_CONVERSATION)
# The `emitted` row of a trace handed to its scorers (a generation's row names its span).
_WHOLE_TRACE = "trace"


class OverBudget(Exception):
    """The request's open-trace spans do not fit the byte budget now (`never`: nor ever)."""

    def __init__(self, never: bool) -> None:
        super().__init__("the request is larger than the open-trace budget" if never else "")
        self.never = never


class Ingestor:
    """Owns the trace assembler; every method is safe to call from any thread."""

    def __init__(
        self,
        queue: SqliteQueue,
        evals: Evals,
        stats: ServiceStats,
        *,
        idle_timeout: float = 60.0,
        max_traces: int = 10_000,
        max_open_bytes: int = DEFAULT_MAX_OPEN_BYTES,
        ledger: Ledger | None = None,
        spend: SpendBudget | None = None,
        prices: Mapping[str, Price] | None = None,
        trace_grace: float = DEFAULT_TRACE_GRACE,
        conversation_idle: float = DEFAULT_CONVERSATION_IDLE,
        max_conversation_bytes: int = DEFAULT_MAX_CONVERSATION_BYTES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._queue = queue
        self._stats = stats
        # Where sampling's, the filter's and the spend budget's decisions are counted (the
        # service's meter). `clock`: wall time, which conversations' idle timers run on
        # (their last turn's time is on disk, and outlives the process).
        self._levels = LevelJobs(
            queue,
            evals,
            stats,
            conversation_idle=conversation_idle,
            max_conversation_bytes=max_conversation_bytes,
            clock=clock,
            ledger=ledger,
            spend=spend,
            prices=prices,
        )
        # 1/16 of the budget is left for what holding costs besides the spans: the request
        # being decoded, SQLite's page cache and write-ahead log (benchmarks/serve_memory.py).
        self.open_bytes_limit = max_open_bytes - max_open_bytes // 16
        self._lock = threading.Lock()
        self._assembler = TraceAssembler(idle_timeout=idle_timeout, max_traces=max_traces)
        self._traces: TraceBuffer | None = None
        if self._levels.whole_traces:
            self._traces = TraceBuffer(
                grace=trace_grace,
                idle_timeout=idle_timeout,
                max_traces=max_traces,
                max_bytes=self.open_bytes_limit,
            )
        self._on_disk: set[int] = set()
        self._restore()

    @property
    def open_trace_bytes(self) -> int:
        """What the open traces hold (an upper estimate, the same in memory and on disk).
        The span reader and the whole traces hold the same span objects, stored once: the
        larger of their counts."""
        held = self._traces.held_bytes if self._traces is not None else 0
        return max(self._assembler.held_bytes, held)

    @property
    def open_conversations(self) -> int:
        tracker = self._levels.conversations
        return tracker.open if tracker is not None else 0

    @property
    def tick(self) -> float:
        """Seconds between two calls of `expire`: often enough for the trace grace and the
        conversations' idle timeout, at most one."""
        grace = self._traces.grace / 2 if self._traces is not None else 1.0
        return max(0.01, min(1.0, grace, self._levels.tick))

    def check_room(self, spans: Sequence[SpanRecord]) -> list[SpanRecord]:
        """Raise `OverBudget` unless `spans` fit the byte budget now (before forwarding).
        Returns them as `ingest` keeps them, for its `slim`: they are read once."""
        slim = [_slim(span) for span in spans]
        with self._lock:
            self._make_room(slim)
        return slim

    def ingest(self, spans: Sequence[SpanRecord], slim: Sequence[SpanRecord] | None = None) -> None:
        """Read `spans` and commit what they change; returns once it is on disk. Raises
        `OverBudget`, having kept nothing, when they do not fit the byte budget. `slim`:
        what `check_room` returned for the same spans."""
        if slim is None:
            slim = [_slim(span) for span in spans]
        with self._lock:
            self._make_room(slim)
            now = time.monotonic()
            runs: list[ScorerRun] = []
            for span in slim:
                runs += self._assembler.add(span, now)
                if self._traces is not None:
                    self._traces.add(span, now)
            runs += self._assembler.expire(now)
            self._commit(slim, runs, self._due(now), {span.trace_id for span in slim})
        self._stats.add("spans_received", len(spans))

    def expire(self) -> None:
        """Close traces idle past the timeout (their standalone model calls become jobs),
        hand over the whole traces whose grace is over, and the conversations idle past
        theirs."""
        with self._lock:
            now = time.monotonic()
            self._commit([], self._assembler.expire(now), self._due(now), set())

    def _due(self, now: float) -> list[list[SpanRecord]]:
        return self._traces.due(now) if self._traces is not None else []

    def _is_open(self, trace_id: int) -> bool:
        whole = self._traces is not None and self._traces.is_open(trace_id)
        return whole or self._assembler.is_open(trace_id)

    def _make_room(self, slim: Sequence[SpanRecord]) -> None:
        adding = self._assembler.bytes_to_hold(slim)
        if self._traces is not None:
            adding = max(adding, self._traces.bytes_to_hold(slim))
        if adding > self.open_bytes_limit:
            raise OverBudget(never=True)
        if self.open_trace_bytes + adding > self.open_bytes_limit:
            # Traces past their idle timeout would go at the worker's next sweep: go now.
            now = time.monotonic()
            self._commit([], self._assembler.expire(now), self._due(now), set())
            if self.open_trace_bytes + adding > self.open_bytes_limit:
                raise OverBudget(never=False)

    def _restore(self) -> None:
        stored = self._queue.stored_spans()
        emitted = self._queue.emitted()
        now = time.monotonic()
        runs: list[ScorerRun] = []
        for span in stored:
            runs += self._assembler.add(span, now)
            if self._traces is not None:
                self._traces.add(span, now)
        self._on_disk = {span.trace_id for span in stored}
        fresh = [run for run in runs if (run.trace_id, run.span_id) not in emitted]
        # A stored trace whose root had ended: its grace ran out while the service was down
        # (and its turn must be in its conversation before that one's idle time is judged).
        due = self._traces.due(now + self._traces.grace) if self._traces is not None else []
        whole = [s for s in due if (f"{s[0].trace_id:032x}", _WHOLE_TRACE) not in emitted]
        self._commit([], fresh, whole, set(), store=False)

    def _commit(
        self,
        spans: Sequence[SpanRecord],
        runs: Sequence[ScorerRun],
        traces: Sequence[Sequence[SpanRecord]],
        touched: set[int],
        *,
        store: bool = True,
    ) -> None:
        is_open = self._is_open
        closed = {trace_id for trace_id in touched | self._on_disk if not is_open(trace_id)}
        kept = [span for span in spans if span.trace_id not in closed] if store else []
        whole = self._trace_runs(traces)
        emitted = [
            (run.trace_id or "", run.span_id or "")
            for run in runs
            if run.trace_id and is_open(int(run.trace_id, 16))
        ]
        emitted += [
            (run.trace_id or "", _WHOLE_TRACE)
            for run, _ in whole
            if run.trace_id and is_open(int(run.trace_id, 16))
        ]
        levels = self._levels
        try:
            jobs = levels.generations(runs) + levels.traces(whole)
            levels.expire()
            added = self._queue.commit(
                Commit(
                    spans=kept,
                    emitted=emitted,
                    jobs=jobs + levels.handed_over(),
                    closed_traces=closed & self._on_disk,
                    conversations=levels.pending(),
                )
            )
        except BaseException:
            levels.rolled_back()  # what is open is what the disk holds
            raise
        levels.committed()
        self._on_disk = (self._on_disk | {span.trace_id for span in kept}) - closed
        self._stats.add("generations_found", len(runs))
        self._stats.add("traces_found", len(whole))
        self._stats.add("jobs_queued", added)

    @staticmethod
    def _trace_runs(
        traces: Sequence[Sequence[SpanRecord]],
    ) -> list[tuple[ScorerRun, Sequence[SpanRecord]]]:
        runs: list[tuple[ScorerRun, Sequence[SpanRecord]]] = []
        for spans in traces:
            try:
                runs.append((trace_run(spans), spans))
            except Exception as exc:  # one unreadable trace must not stop the others
                trace_id = f"{spans[0].trace_id:032x}" if spans else ""
                _log.error("trace_reading_failed", trace_id=trace_id, error_type=type(exc).__name__)
        return runs


def _slim(span: SpanRecord) -> SpanRecord:
    if span_role(span.attributes) is not None:
        return span.cut()
    return SpanRecord(
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        name="",
        attributes={k: span.attributes[k] for k in _LINK_ATTRIBUTES if k in span.attributes},
        end_time=span.end_time,
        parent_is_remote=span.parent_is_remote,
        start_time=span.start_time,
    )
