"""The scoring worker: queued jobs -> scorers -> evaluations exported -> job rows deleted.

It runs on its own thread and event loop, so a CPU-bound judge (the local one) does not stall
the HTTP side more than the GIL makes it. Jobs are taken oldest first, `concurrency` at a time,
while the judge budget allows; the batch's spans and log records are exported together, and
only when the backend took them are the batch's rows deleted (else they are retried later).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import anyio
import structlog

from agentscore.evals import Evals
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.serve.budget import JudgeBudget
from agentscore.serve.export import Exporters, keyed_ids
from agentscore.serve.ingest import Ingestor
from agentscore.serve.queue import Job, SqliteQueue
from agentscore.serve.stats import ServiceStats
from agentscore.telemetry.core import Telemetry, scoring_scope
from agentscore.telemetry.evaluations import evaluate, record_dropped

__all__ = ["ScoringWorker"]

_log = structlog.get_logger("agentscore.serve")
_IDLE_POLL = 0.02
_EXPIRE_EVERY = 1.0


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
        last_expire = 0.0
        while True:
            now = time.monotonic()
            stopping = self._deadline is not None
            if stopping and (now >= (self._deadline or 0.0) or self._queue.pending_jobs == 0):
                return
            if now - last_expire >= _EXPIRE_EVERY and not stopping:
                last_expire = now
                await anyio.to_thread.run_sync(self._ingestor.expire)
            try:
                done = await self.step()
            except Exception as exc:  # the worker must outlive any one bad batch
                _log.error("serve_batch_failed", error_type=type(exc).__name__)
                done = 0
            if not done:
                await anyio.sleep(min(_IDLE_POLL + self._budget.wait_time(), 1.0))

    async def step(self) -> int:
        """Score and export one batch; returns how many jobs it finished."""
        jobs = await anyio.to_thread.run_sync(self._queue.due_jobs, self._concurrency, set())
        jobs = self._drop_stale(jobs)
        started: list[Job] = []
        for job in jobs:
            if not self._budget.available():
                break
            self._budget.charge(1, 0)  # held now, settled with the real usage afterwards
            started.append(job)
        if not started:
            return 0
        results: list[ScoreResult | None] = [None] * len(started)
        async with anyio.create_task_group() as group:
            for index, job in enumerate(started):
                group.start_soon(self._score, job, results, index)
        finished = [job.key for job, result in zip(started, results, strict=True) if result]
        broken = [job.key for job, result in zip(started, results, strict=True) if not result]
        if await anyio.to_thread.run_sync(self._exporters.export):
            await anyio.to_thread.run_sync(self._queue.delete_jobs, finished)
            self._account(results)
        else:
            self._stats.add("export_failures")
            broken += finished
            finished = []
        if broken:
            await anyio.to_thread.run_sync(self._queue.retry_later, broken, self._retry_delay)
        return len(finished)

    async def _score(self, job: Job, results: list[ScoreResult | None], index: int) -> None:
        scorer = self._scorers[job.scorer_id]
        try:
            with keyed_ids(job.key), scoring_scope():
                result = await evaluate(self._telemetry, scorer, job.run, timeout=self._run_timeout)
        except Exception as exc:  # scorers return failures as values; this is our own fault
            _log.error("serve_job_failed", scorer=job.scorer_id, error_type=type(exc).__name__)
            return
        usage = result.judge_usage
        self._budget.charge(usage.calls - 1, usage.input_tokens + usage.output_tokens)
        self._stats.add("judge_requests", usage.calls)
        self._stats.add("judge_tokens", usage.input_tokens + usage.output_tokens)
        results[index] = result

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

    def _account(self, results: Sequence[ScoreResult | None]) -> None:
        for result in results:
            if result is None:
                continue
            failed = result.status is ScoreStatus.FAILED
            self._stats.add("failed" if failed else "scored")
            if self._evals.on_score is not None:
                try:
                    self._evals.on_score(result)
                except Exception as exc:  # a user sink must not stop the worker
                    _log.error("serve_on_score_failed", error_type=type(exc).__name__)
