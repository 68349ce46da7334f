"""The scoring worker: queued jobs -> the pipeline -> evaluations exported -> job rows deleted.

It runs on its own thread and event loop, so a CPU-bound judge (the local one) does not stall
the HTTP side more than the GIL makes it. Jobs are taken oldest first, up to `concurrency` in
flight, while the judge budget allows. What finished jobs emitted is exported together, in the
background (when 6 x `concurrency` have finished, when nothing else is in flight, or
every 0.5 s), and only once the backend took it are their rows deleted.

Every outage delays work and never loses or repeats it:
- the judge failing for a passing reason: the job stays on disk and is tried again with
  backoff (until `max_age`: a job never judged by then expires, `agentscore.serve.expiry`;
  a result already judged is exported whatever its age);
- the backend refusing an export: the results stay in the outbox and their rows on disk, and
  the export is retried with backoff (or after the backend's Retry-After, when longer); the
  judge is not asked again;
- a row that cannot be deleted (disk full): kept out of the worker's hands and deleted later.
Each shows on /healthz (`degraded`) while it lasts. A spent spend budget delays work too:
jobs of priced judges already on disk wait there for the next window.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import replace

import anyio
import anyio.abc
import structlog

from agentscore.evals import Evals
from agentscore.judges.requests import gated_requests
from agentscore.pipeline.deliver import deliver
from agentscore.pipeline.evaluate import replay
from agentscore.pipeline.generation import Generation, Scoring, score_generation
from agentscore.pipeline.retry import RetryPolicy
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.run import Level
from agentscore.scorers.base import Scorer
from agentscore.serve.budget import JudgeBudget
from agentscore.serve.expiry import expired_result, is_expired, log_expired
from agentscore.serve.export import Exporters, keyed_ids
from agentscore.serve.health import ServiceHealth
from agentscore.serve.ingest import Ingestor
from agentscore.serve.queue import Job, JobKey, SqliteQueue
from agentscore.serve.readahead import ReadAhead
from agentscore.serve.stats import ServiceStats
from agentscore.telemetry.core import Telemetry
from agentscore.telemetry.evaluations import record_dropped
from agentscore.telemetry.spend import SpendBudget, costs_money

__all__ = ["ScoringWorker"]

_log = structlog.get_logger("agentscore.serve")
_IDLE_POLL = 0.05
_EXPIRE_EVERY = 1.0
_EXPORT_EVERY = 0.5
# Finished jobs (in `concurrency`s) that start an export: each export costs two requests and
# two synced transactions whatever it carries, so a busy service sends large batches, and an
# evaluation still reaches the backend within about `_EXPORT_EVERY`.
_EXPORT_BATCH = 6
_MAX_UNEXPORTED = 12
# Backoff for the worker's own retries: of a failed export, of a row that cannot be written.
_STORAGE_RETRY = RetryPolicy(first_delay=0.5, max_delay=30.0, window=None)


class ScoringWorker:
    def __init__(
        self,
        queue: SqliteQueue,
        ingestor: Ingestor,
        evals: Evals,
        exporters: Exporters,
        stats: ServiceStats,
        *,
        health: ServiceHealth | None = None,
        budget: JudgeBudget | None = None,
        concurrency: int = 16,
        run_timeout: float | None = 120.0,
        max_age: float | None = None,
        retry: RetryPolicy | None = None,
        sink_timeout: float = 30.0,
        capture_content: bool = False,
        spend: SpendBudget | None = None,
    ) -> None:
        self._queue = queue
        self._ingestor = ingestor
        self._evals = evals
        self._scorers = {entry.scorer.id: entry.scorer for entry in evals.entries}
        self._exporters = exporters
        self._telemetry = Telemetry(
            tracer_provider=exporters.tracer_provider,
            logger_provider=exporters.logger_provider,
            meter_provider=exporters.meter_provider,
            spend=spend,
        )
        # While a window of the spend budget is spent, only jobs of these scorers start.
        self._unpriced = frozenset(
            scorer_id
            for scorer_id, scorer in self._scorers.items()
            if not costs_money(scorer.judge.model_name, self._telemetry.prices)
        )
        if capture_content:  # else as OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT says
            self._telemetry.capture_content = True
        self._stats = stats
        self.health = health or ServiceHealth()
        self._budget = budget or JudgeBudget()
        self._concurrency = concurrency
        self._run_timeout = run_timeout
        self._max_age = max_age
        self._retry = retry or RetryPolicy(first_delay=1.0, max_delay=30.0, window=None)
        self._sink_timeout = sink_timeout
        self._deadline: float | None = None
        self._thread: threading.Thread | None = None
        # Touched only on the worker's own event loop.
        self._in_flight: set[JobKey] = set()
        self._done: list[tuple[Job, ScoreResult]] = []  # their spans wait in the outbox
        self._exporting: set[JobKey] = set()
        self._export_busy = False
        self._export_failures = 0
        self._export_at = 0.0
        self._undeleted: set[JobKey] = set()  # exported, but the row could not be deleted
        self._delete_failures = 0
        self._delete_at = 0.0
        self._held: dict[JobKey, float] = {}  # rows a failed write left due too early
        self._wake: anyio.Event | None = None
        # Due jobs are read `concurrency` at a time, not with a query per freed slot.
        self._ahead = ReadAhead(queue, concurrency, self._generations)
        # Idle traces, whole traces past their grace and idle conversations are looked for
        # this often (at most every second).
        self._expire_every = min(_EXPIRE_EVERY, ingestor.tick)

    def start(self) -> None:
        self._thread = threading.Thread(
            target=anyio.run, args=(self._loop,), name="agentscore-serve-worker", daemon=True
        )
        self._thread.start()

    def stop(self, drain_timeout: float) -> None:
        """Score what is due for up to `drain_timeout` seconds, then stop; the rest stays on
        disk for the next start."""
        self._deadline = time.monotonic() + drain_timeout
        if self._thread is not None:
            self._thread.join(drain_timeout + (self._run_timeout or 60.0))

    async def _loop(self) -> None:
        last_expire = last_export = 0.0
        async with anyio.create_task_group() as scoring:
            while True:
                now = time.monotonic()
                stopping = self._deadline is not None
                if stopping and (now >= (self._deadline or 0.0) or self._idle()):
                    break
                if now - last_expire >= self._expire_every and not stopping:
                    last_expire = now
                    await self._expire_open()
                if self._undeleted and now >= self._delete_at:
                    await self._delete()
                try:
                    started = await self._start_due(scoring)
                except Exception as exc:  # the worker must outlive any one bad batch
                    _log.error("serve_worker_failed", error_type=type(exc).__name__)
                    started = 0
                if (
                    self._done
                    and not self._export_busy
                    and now >= self._export_at
                    and (
                        len(self._done) >= _EXPORT_BATCH * self._concurrency
                        or not self._in_flight
                        or now - last_export >= _EXPORT_EVERY
                    )
                ):
                    last_export = now
                    self._export_busy = True
                    scoring.start_soon(self._export_in_background)
                if not started:
                    self._wake = anyio.Event()
                    with anyio.move_on_after(min(_IDLE_POLL + self._budget.wait_time(), 1.0)):
                        await self._wake.wait()
        # Jobs in flight at the deadline were allowed to finish (their scorer's own timeout
        # bounds them): export them rather than score them again after a restart.
        await self._export()

    async def _expire_open(self) -> None:
        """Close what is due (idle traces, whole traces past their grace, idle
        conversations). A write that fails (the disk full) must not end the worker: the
        conversations it would have handed over stay open for the next look."""
        try:
            await anyio.to_thread.run_sync(self._ingestor.expire)
        except (sqlite3.Error, OSError) as exc:
            self.health.failing("disk_full", type(exc).__name__)

    def _idle(self) -> bool:
        return (
            not self._in_flight
            and not self._done
            and not self._export_busy
            and self._queue.pending_jobs - len(self._undeleted) <= 0
        )

    def _busy(self) -> set[JobKey]:
        """Jobs on disk the worker must not take now: being handled, or waiting on a retry
        that the disk could not record."""
        now = time.monotonic()
        self._held = {key: at for key, at in self._held.items() if at > now}
        done = {job.key for job, _ in self._done}
        return self._in_flight | done | self._exporting | self._undeleted | set(self._held)

    async def _start_due(self, scoring: anyio.abc.TaskGroup) -> int:
        """Start due jobs while there is room and budget; returns how many started."""
        room = self._concurrency - len(self._in_flight)
        # A backend slower than the judge holds intake back: memory stays bounded.
        if room <= 0 or len(self._done) >= _MAX_UNEXPORTED * self._concurrency:
            return 0
        # A spent budget: the jobs of priced judges wait on disk for the next window.
        only = self._unpriced if self._telemetry.spend and self._telemetry.spend.reached() else None
        if only is not None and not only:
            return 0
        taken = await self._ahead.take(room, self._busy, only)
        started = 0
        # Checked as they start, not as they were read: a held job can age past `max_age`.
        skipped = self._drop_unscorable([job for job, _ in taken])
        # Expired jobs go even while over budget: that is when they pile up.
        for index, (job, generation) in enumerate(taken):
            if job.key in skipped:
                continue
            if job.result is not None:
                # Scored before a restart: send the stored result again, never re-judge, and
                # whatever its age: it was paid for.
                self._finish_unjudged(job, job.result)
                started += 1
                continue
            if self._max_age is not None and time.time() - job.created > self._max_age:
                self._expire(job, self._max_age)
                started += 1
                continue
            if not self._budget.available():
                self._ahead.put_back(
                    [entry for entry in taken[index:] if entry[0].key not in skipped]
                )
                break
            self._budget.charge(1, 0)  # its first request, held now so intake stops here
            self._in_flight.add(job.key)
            scoring.start_soon(self._score, job, generation)
            started += 1
        return started

    def _finish_unjudged(self, job: Job, result: ScoreResult) -> None:
        """Emit `result` (stored, or an expiry) without judging, for the next export."""
        with keyed_ids(job.key, job.attempts):
            replay(self._telemetry, job.scorer_id, result, job.run, counted=not is_expired(result))
        self._done.append((job, result))

    def _expire(self, job: Job, max_age: float) -> None:
        """End a job never judged within `max_age`: counted as dropped, named in the log,
        and exported as an ExpiredError evaluation (its row goes once that is exported)."""
        log_expired(job, max_age)
        self._stats.add("dropped")
        record_dropped(self._telemetry, job.scorer_id, job.run.agent_name)
        self._finish_unjudged(job, expired_result(job, max_age))

    def _generations(self, jobs: Sequence[Job]) -> dict[tuple[Level, str], Generation]:
        """The targets among `jobs` (a generation, a trace, a conversation), each with the
        scorers of its jobs here, whose LLM scorers share one judge request."""
        by_target: dict[tuple[Level, str], list[Scorer]] = {}
        for job in jobs:
            if job.scorer_id in self._scorers:  # else dropped as it starts
                by_target.setdefault(job.target, []).append(self._scorers[job.scorer_id])
        return {target: Generation.of(scorers) for target, scorers in by_target.items()}

    async def _score(self, job: Job, generation: Generation | None) -> None:
        try:
            await self._score_and_keep(job, generation)
        finally:
            # Only now: until its row is marked for retry or its result is kept for export,
            # the job must not look due to the loop.
            self._in_flight.discard(job.key)
            if self._wake is not None:
                self._wake.set()

    async def _score_and_keep(self, job: Job, generation: Generation | None) -> None:
        scorer = self._scorers[job.scorer_id]
        # A job per scorer, sharing its generation's judge request with the others' jobs.
        alone = Generation((scorer,)) if generation is None else generation.alone(scorer)
        delay = self._retry.delay(job.attempts + 1)
        may_retry = self._max_age is None or time.time() - job.created + delay < self._max_age
        gate = _JobRequests(self._budget)
        # One try: a passing failure waits on disk, not in memory. A crash of our own keeps
        # the job for a later try too (scorers return their failures as values).
        scoring = Scoring(
            telemetry=self._telemetry,
            timeout=self._run_timeout,
            retry=may_retry,
            crash_fails=False,
            tried=job.attempts,
        )
        try:
            with keyed_ids(job.key, job.attempts), gated_requests(gate):
                (result,) = await score_generation(alone, job.run, scoring)
        except Exception as exc:
            _log.error("serve_job_failed", scorer=job.scorer_id, error_type=type(exc).__name__)
            await self._retry_later(job.key, delay)
            return
        usage = result.judge_usage
        # A job that made no request (the local judge, a cache hit) gives its hold back.
        self._budget.charge(-1 if gate.held else 0, usage.input_tokens + usage.output_tokens)
        self._stats.add("judge_requests", usage.calls)
        self._stats.add("judge_tokens", usage.input_tokens + usage.output_tokens)
        if may_retry and result.retryable and result.error is not None:
            self._stats.add("delayed")
            self.health.failing("judge_unavailable", result.error.type)
            await self._retry_later(job.key, delay)
            return
        if not result.retryable:  # the judge answered (or failed for good): it is reachable
            self.health.recovered("judge_unavailable")
        self._done.append((job, result))

    async def _retry_later(self, key: JobKey, delay: float) -> None:
        try:
            await anyio.to_thread.run_sync(self._queue.retry_later, [key], delay)
        except (sqlite3.Error, OSError) as exc:
            # The row stays due on disk: keep it out of reach here, or it loops hot.
            self.health.failing("disk_full", type(exc).__name__)
            self._held[key] = time.monotonic() + delay

    async def _export_in_background(self) -> None:
        try:
            await self._export()
        except Exception as exc:  # the rows stay on disk; the next export tries again
            _log.error("serve_export_failed", error_type=type(exc).__name__)
        finally:
            self._export_busy = False
            if self._wake is not None:
                self._wake.set()

    async def _export(self) -> None:
        """Export what finished jobs emitted; then delete their rows and deliver the results.
        A refused export keeps everything for the next try: nothing is judged again."""
        done, self._done = self._done, []
        if not done:
            return
        self._exporting = {job.key for job, _ in done}
        unstored = [(job.key, result) for job, result in done if job.result is None]
        if unstored:
            # Kept with their jobs before the export is tried: whatever becomes of it, or of
            # the process, these are not judged again. One transaction for the batch.
            try:
                await anyio.to_thread.run_sync(self._queue.store_results, unstored)
            except (sqlite3.Error, OSError) as exc:  # exported from memory all the same
                self.health.failing("disk_full", type(exc).__name__)
            else:
                done = [(replace(job, result=result), result) for job, result in done]
        try:
            exported = await anyio.to_thread.run_sync(self._exporters.export)
        except Exception:
            exported = False
        finally:
            self._exporting = set()
        if not exported:
            self._stats.add("export_failures")
            self._export_failures += 1
            self.health.failing("export_failing", "backend refused the export")
            # The backend's Retry-After, when it asks for longer than the backoff would wait.
            wait = max(
                _STORAGE_RETRY.delay(self._export_failures), self._exporters.retry_after or 0
            )
            self._export_at = time.monotonic() + wait
            self._done[:0] = done
            return
        self._export_failures = 0
        self.health.recovered("export_failing")
        self._undeleted.update(job.key for job, _ in done)
        await self._delete()
        await self._account([result for _, result in done])

    async def _delete(self) -> None:
        keys = list(self._undeleted)
        try:
            await anyio.to_thread.run_sync(self._queue.delete_jobs, keys)
        except (sqlite3.Error, OSError) as exc:
            self._stats.add("delete_failures")
            self._delete_failures += 1
            self.health.failing("disk_full", type(exc).__name__)
            self._delete_at = time.monotonic() + _STORAGE_RETRY.delay(self._delete_failures)
            return
        self._undeleted.difference_update(keys)
        self._delete_failures = 0
        self.health.recovered("disk_full")

    def _drop_unscorable(self, jobs: Sequence[Job]) -> set[JobKey]:
        """Drop the jobs not yet judged whose scorer this service no longer has; returns
        the keys of those not to start (dropped, or held when their rows stay)."""
        gone = [job for job in jobs if job.result is None and job.scorer_id not in self._scorers]
        if not gone:
            return set()
        keys = [job.key for job in gone]
        try:
            self._queue.delete_jobs(keys)
        except (sqlite3.Error, OSError) as exc:
            self.health.failing("disk_full", type(exc).__name__)
            self._held.update(dict.fromkeys(keys, time.monotonic() + 5))
            return set(keys)
        self._stats.add("dropped", len(gone))
        for job in gone:
            record_dropped(self._telemetry, job.scorer_id, job.run.agent_name)
            trace_id, span_id, scorer_id = job.key
            _log.warning(
                "serve_job_dropped",
                reason="scorer_not_configured",
                trace_id=trace_id,
                span_id=span_id,
                scorer_id=scorer_id,
            )
        return set(keys)

    async def _account(self, results: Sequence[ScoreResult]) -> None:
        for result in results:
            if is_expired(result):  # counted as dropped when it expired; never judged
                continue
            failed = result.status is ScoreStatus.FAILED
            self._stats.add("failed" if failed else "scored")
            await deliver(
                result,
                (self._evals.on_score,),
                timeout=self._sink_timeout,
                telemetry=self._telemetry,
            )


class _JobRequests:
    """The request gate of one job: its first request was charged when the job started;
    every later one (retries, a repair, a cascade's escalation) waits for budget."""

    def __init__(self, budget: JudgeBudget) -> None:
        self._budget = budget
        self.held = True

    async def __call__(self) -> None:
        if self.held:
            self.held = False
            return
        await self._budget.acquire()
