"""From received spans to queued score jobs: span reading, sampling, and one commit per request.

Only what span reading needs is stored: spans with a GenAI or OpenInference role whole (text
attributes cut to what a scorer reads), every other span as a bare parent link (so an agent
span still finds the model calls beneath an HTTP span). A trace's spans stay on disk while it
is open and go once it closes; the generations it yields become job rows in the same
transaction. What open traces hold is bounded in bytes (`max_open_bytes`, counted by the
assembler): a request that would take them past it is refused whole with `OverBudget`, and
answered 503, before anything of it is kept.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

from agentscore.evals import Evals
from agentscore.pipeline.choose import accepts, affordable, sampled_scorers
from agentscore.run import ScorerRun
from agentscore.serve.queue import Commit, JobKey, SqliteQueue
from agentscore.serve.stats import ServiceStats
from agentscore.spans.assembler import TraceAssembler
from agentscore.spans.reading import span_role
from agentscore.spans.records import SpanRecord
from agentscore.telemetry.ledger import Ledger
from agentscore.telemetry.spend import SpendBudget
from agentscore.usage import Price

__all__ = ["DEFAULT_MAX_OPEN_BYTES", "Ingestor", "OverBudget"]

DEFAULT_MAX_OPEN_BYTES = 256 * 2**20


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
    ) -> None:
        self._queue = queue
        self._evals = evals
        self._stats = stats
        # Where sampling's, the filter's and the spend budget's decisions are counted (the
        # service's meter).
        self._ledger = ledger
        self._spend = spend
        self._prices = prices or {}
        # 1/16 of the budget is left for what holding costs besides the spans: the request
        # being decoded, SQLite's page cache and write-ahead log (benchmarks/serve_memory.py).
        self.open_bytes_limit = max_open_bytes - max_open_bytes // 16
        self._lock = threading.Lock()
        self._assembler = TraceAssembler(idle_timeout=idle_timeout, max_traces=max_traces)
        self._on_disk: set[int] = set()
        self._restore()

    @property
    def open_trace_bytes(self) -> int:
        """What the open traces hold (an upper estimate, the same in memory and on disk)."""
        return self._assembler.held_bytes

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
            runs += self._assembler.expire(now)
            self._commit(slim, runs, {span.trace_id for span in slim})
        self._stats.add("spans_received", len(spans))

    def expire(self) -> None:
        """Close traces idle past the timeout (their standalone model calls become jobs)."""
        with self._lock:
            self._commit([], self._assembler.expire(time.monotonic()), set())

    def _make_room(self, slim: Sequence[SpanRecord]) -> None:
        adding = self._assembler.bytes_to_hold(slim)
        if adding > self.open_bytes_limit:
            raise OverBudget(never=True)
        if self._assembler.held_bytes + adding > self.open_bytes_limit:
            # Traces past their idle timeout would go at the worker's next sweep: go now.
            self._commit([], self._assembler.expire(time.monotonic()), set())
            if self._assembler.held_bytes + adding > self.open_bytes_limit:
                raise OverBudget(never=False)

    def _restore(self) -> None:
        stored = self._queue.stored_spans()
        emitted = self._queue.emitted()
        now = time.monotonic()
        runs: list[ScorerRun] = []
        for span in stored:
            runs += self._assembler.add(span, now)
        self._on_disk = {span.trace_id for span in stored}
        fresh = [run for run in runs if (run.trace_id, run.span_id) not in emitted]
        self._commit([], fresh, set(), store=False)

    def _commit(
        self,
        spans: Sequence[SpanRecord],
        runs: Sequence[ScorerRun],
        touched: set[int],
        *,
        store: bool = True,
    ) -> None:
        is_open = self._assembler.is_open
        closed = {trace_id for trace_id in touched | self._on_disk if not is_open(trace_id)}
        kept = [span for span in spans if span.trace_id not in closed] if store else []
        emitted = [
            (run.trace_id or "", run.span_id or "")
            for run in runs
            if run.trace_id and is_open(int(run.trace_id, 16))
        ]
        jobs = self._jobs(runs)
        added = self._queue.commit(
            Commit(spans=kept, emitted=emitted, jobs=jobs, closed_traces=closed & self._on_disk)
        )
        self._on_disk = (self._on_disk | {span.trace_id for span in kept}) - closed
        self._stats.add("generations_found", len(runs))
        self._stats.add("jobs_queued", added)

    def _jobs(self, runs: Sequence[ScorerRun]) -> list[tuple[JobKey, ScorerRun]]:
        jobs: list[tuple[JobKey, ScorerRun]] = []
        for run in runs:
            chosen = sampled_scorers(
                self._evals.entries, run.trace_id, run.run_id, self._ledger, run.agent_name
            )
            if not chosen or not accepts(self._evals.filter, run, self._ledger, chosen):
                continue
            self._stats.add("generations_sampled")
            affordable_now = affordable(
                chosen, self._spend, self._prices, self._ledger, run.agent_name
            )
            self._stats.add("over_budget", len(chosen) - len(affordable_now))
            chosen = affordable_now
            jobs += [((run.trace_id or "", run.span_id or "", s.id), run) for s in chosen]
        return jobs


def _slim(span: SpanRecord) -> SpanRecord:
    if span_role(span.attributes) is not None:
        return span.cut()
    return SpanRecord(
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        name="",
        end_time=span.end_time,
        parent_is_remote=span.parent_is_remote,
    )
