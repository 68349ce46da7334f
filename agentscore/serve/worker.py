"""The scoring worker: queued jobs -> scorers -> evaluations exported -> job rows deleted.

It runs on its own thread and event loop, so a CPU-bound judge (the local one) does not stall
the HTTP side more than the GIL makes it. Jobs are taken oldest first, up to `concurrency` in
flight, while the judge budget allows. What finished jobs emitted is exported together, in the
background (when `concurrency` have finished, when nothing else is in flight, or every
0.2 s), and only once the backend took it are their rows deleted; a failed export leaves
them to be retried. Scoring goes on during an export; a backend slower than the judge holds
intake back once 4 x `concurrency` finished jobs wait for it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import anyio
import anyio.abc
import structlog

from agentscore.evals import Evals
from agentscore.judges.base import Judge
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.scorers.base import Scorer
from agentscore.scorers.together import Together
from agentscore.serve.budget import JudgeBudget
from agentscore.serve.export import Exporters, keyed_ids
from agentscore.serve.ingest import Ingestor
from agentscore.serve.queue import Job, JobKey, SqliteQueue
from agentscore.serve.stats import ServiceStats
from agentscore.telemetry.core import Telemetry, scoring_scope
from agentscore.telemetry.evaluations import evaluate, record_dropped

__all__ = ["ScoringWorker"]

_log = structlog.get_logger("agentscore.serve")
_IDLE_POLL = 0.05
_EXPIRE_EVERY = 1.0
_EXPORT_EVERY = 0.2
_MAX_UNEXPORTED = 4


class ScoringWorker:
    def __init__(
        self,
        queue: SqliteQueue,
        ingestor: Ingestor,
        evals: Evals,
        exporters: Exporters,
        stats: ServiceStats,
        *,
        budget: JudgeBudget | None = None,
        concurrency: int = 16,
        run_timeout: float | None = 120.0,
        max_age: float | None = None,
        retry_delay: float = 5.0,
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
        )
        self._stats = stats
        self._budget = budget or JudgeBudget()
        self._concurrency = concurrency
        self._run_timeout = run_timeout
        self._max_age = max_age
        self._retry_delay = retry_delay
        self._deadline: float | None = None
        self._thread: threading.Thread | None = None
        # Touched only on the worker's own event loop.
        self._in_flight: set[JobKey] = set()
        self._done: list[tuple[Job, ScoreResult]] = []
        self._broken: list[JobKey] = []
        self._wake: anyio.Event | None = None
        self._exporting = False
        self._exported: set[JobKey] = set()

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
                if now - last_expire >= _EXPIRE_EVERY and not stopping:
                    last_expire = now
                    await anyio.to_thread.run_sync(self._ingestor.expire)
                try:
                    started = await self._start_due(scoring)
                except Exception as exc:  # the worker must outlive any one bad batch
                    _log.error("serve_worker_failed", error_type=type(exc).__name__)
                    started = 0
                if (
                    self._done
                    and not self._exporting
                    and (
                        len(self._done) >= self._concurrency
                        or not self._in_flight
                        or now - last_export >= _EXPORT_EVERY
                    )
                ):
                    last_export = now
                    self._exporting = True
                    scoring.start_soon(self._export_in_background)
                if not started:
                    self._wake = anyio.Event()
                    with anyio.move_on_after(min(_IDLE_POLL + self._budget.wait_time(), 1.0)):
                        await self._wake.wait()
        # Jobs in flight at the deadline were allowed to finish (their scorer's own timeout
        # bounds them): export them rather than score them again after a restart.
        await self._export()

    def _idle(self) -> bool:
        return (
            not self._in_flight
            and not self._done
            and not self._exporting
            and self._queue.pending_jobs == 0
        )

    async def _start_due(self, scoring: anyio.abc.TaskGroup) -> int:
        """Start due jobs while there is room and budget; returns how many started."""
        room = self._concurrency - len(self._in_flight)
        # A backend slower than the judge holds intake back: memory stays bounded.
        if room <= 0 or len(self._done) >= _MAX_UNEXPORTED * self._concurrency:
            return 0
        busy = self._in_flight | self._exported | {job.key for job, _ in self._done}
        jobs = await anyio.to_thread.run_sync(self._queue.due_jobs, room, busy)
        started = 0
        fresh = self._drop_stale(jobs)
        shared = self._together(fresh)
        # Stale jobs go even while over budget: that is when they pile up.
        for job in fresh:
            if not self._budget.available():
                break
            self._budget.charge(1, 0)  # held now, settled with the real usage afterwards
            self._in_flight.add(job.key)
            scoring.start_soon(self._score, job, shared.get(job.run.run_id))
            started += 1
        return started

    def _together(self, jobs: Sequence[Job]) -> dict[str, Together]:
        """One `Together` per generation among `jobs`: its LLM scorers share a judge request."""
        by_run: dict[str, list[Scorer]] = {}
        for job in jobs:
            by_run.setdefault(job.run.run_id, []).append(self._scorers[job.scorer_id])
        groups = {run_id: Together(scorers) for run_id, scorers in by_run.items()}
        return {run_id: together for run_id, together in groups.items() if together.sharing}

    async def _export_in_background(self) -> None:
        try:
            await self._export()
        except Exception as exc:  # the rows stay on disk; the next export tries again
            _log.error("serve_export_failed", error_type=type(exc).__name__)
        finally:
            self._exporting = False
            if self._wake is not None:
                self._wake.set()

    async def _export(self) -> None:
        """Export what finished jobs emitted; delete their rows only if the backend took it."""
        done, self._done = self._done, []
        broken, self._broken = self._broken, []
        keys = [job.key for job, _ in done]
        self._exported.update(keys)  # still on disk until deleted: not to be taken again
        try:
            if done:
                if await anyio.to_thread.run_sync(self._exporters.export):
                    await anyio.to_thread.run_sync(self._queue.delete_jobs, keys)
                    self._account([result for _, result in done])
                else:
                    self._stats.add("export_failures")
                    broken += keys
            if broken:
                await anyio.to_thread.run_sync(self._queue.retry_later, broken, self._retry_delay)
        finally:
            self._exported.difference_update(keys)

    async def _score(self, job: Job, together: Together | None = None) -> None:
        scorer = self._scorers[job.scorer_id]

        async def run(judge: Judge | None) -> ScoreResult:
            return await evaluate(
                self._telemetry, scorer, job.run, timeout=self._run_timeout, judge=judge
            )

        try:
            with keyed_ids(job.key), scoring_scope():
                result = await (run(None) if together is None else together.score(scorer, run))
        except Exception as exc:  # scorers return failures as values; this is our own fault
            _log.error("serve_job_failed", scorer=job.scorer_id, error_type=type(exc).__name__)
            self._broken.append(job.key)
            return
        finally:
            self._in_flight.discard(job.key)
            if self._wake is not None:
                self._wake.set()
        usage = result.judge_usage
        self._budget.charge(usage.calls - 1, usage.input_tokens + usage.output_tokens)
        self._stats.add("judge_requests", usage.calls)
        self._stats.add("judge_tokens", usage.input_tokens + usage.output_tokens)
        self._done.append((job, result))

    def _drop_stale(self, jobs: Sequence[Job]) -> list[Job]:
        """Jobs too old to be worth judging, or for a scorer this service no longer has."""
        now = time.time()
        stale = [
            job
            for job in jobs
            if job.scorer_id not in self._scorers
            or (self._max_age is not None and now - job.created > self._max_age)
        ]
        if stale:
            self._queue.delete_jobs([job.key for job in stale])
            self._stats.add("dropped", len(stale))
            for job in stale:
                record_dropped(self._telemetry, job.scorer_id, job.run.agent_name)
            _log.warning("serve_jobs_dropped", count=len(stale), reason="max_age_or_scorer")
        return [job for job in jobs if job not in stale]

    def _account(self, results: Sequence[ScoreResult]) -> None:
        for result in results:
            failed = result.status is ScoreStatus.FAILED
            self._stats.add("failed" if failed else "scored")
            if self._evals.on_score is not None:
                try:
                    self._evals.on_score(result)
                except Exception as exc:  # a user sink must not stop the worker
                    _log.error("serve_on_score_failed", error_type=type(exc).__name__)
