"""The background runner: scores submitted runs off the caller's path, bounded and accounted.

`submit` is O(1), never blocks and never raises: a job goes into a bounded queue, or is
dropped (counted, logged at a limited rate, reported to `on_drop`) when the queue is full.
A dispatcher on agentscore's background loop runs queued jobs with a concurrency cap and a
per-run timeout, each through the pipeline's one composition (`pipeline.generation`): a job is
one scorer of a generation, sharing the generation's judge request with the others' jobs. A
run whose judge failed for a passing reason (outage, 429, timeout) is tried again with backoff
within `retry.window` before its failure stands (pipeline.retry). At every moment:
submitted = scored + failed + dropped + pending, with `delayed` inside pending.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

import anyio
import anyio.to_thread
import structlog

from agentscore._options import check_number
from agentscore._runtime.courtesy import GIL_SLICE, gil_slice
from agentscore._runtime.hooks import (
    after_fork_in_child,
    at_exit,
    exit_deadline,
    flush_buffers,
    on_drain,
)
from agentscore._runtime.loop import BackgroundLoop, background_loop
from agentscore._runtime.workqueue import WorkQueue
from agentscore.pipeline.deliver import ScoreSink
from agentscore.pipeline.drops import DropHandler, DropReporter
from agentscore.pipeline.generation import Generation, Scoring, score_generation
from agentscore.pipeline.retry import RetryPolicy
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.run import ScorerRun
from agentscore.scorers.base import Scorer
from agentscore.scorers.together import Together
from agentscore.telemetry.core import Telemetry

__all__ = [
    "DropHandler",
    "JobRunner",
    "Runner",
    "RunnerStats",
    "ScoreJob",
    "ScoreSink",
    "default_runner",
    "flush_started_runners",
    "shutdown_started_runners",
]

_log = structlog.get_logger("agentscore.runner")

# The default seconds between a submit that finds the dispatcher idle and the dispatcher
# taking the job (benchmarks/handover.py and docs/benchmarks.md measure what it saves the
# caller).
HANDOVER_LINGER = 0.005


@dataclass(frozen=True, slots=True)
class ScoreJob:
    """One scorer to run on one run; results go to `on_result` and the runner's sinks."""

    scorer: Scorer
    run: ScorerRun
    telemetry: Telemetry | None = None
    on_result: ScoreSink | None = None
    # Reads the run's messages on the background loop instead of the caller's path; until
    # then `run` holds only its ids (what drop accounting needs).
    read: Callable[[], ScorerRun] | None = None
    # Shared by the jobs of one generation: their LLM scorers share one judge request
    # (`Generation.of(scorers).shared`).
    together: Together | None = None


@dataclass(frozen=True, slots=True)
class RunnerStats:
    """submitted = scored + failed + dropped + pending; `delayed` (waiting to retry after a
    passing judge failure) is counted inside `pending`."""

    submitted: int
    scored: int
    failed: int
    dropped: int
    pending: int
    delayed: int = 0


class JobRunner(Protocol):
    """What scores submitted jobs in the background: `Runner`."""

    def submit(self, job: ScoreJob) -> bool: ...
    def add_sink(self, sink: ScoreSink) -> None: ...
    def stats(self) -> RunnerStats: ...
    def flush(self, timeout: float | None = None) -> bool: ...
    async def aflush(self, timeout: float | None = None) -> bool: ...
    def shutdown(self, timeout: float | None = 5.0) -> bool: ...


class Runner:
    """Runs score jobs in the background. See the module docstring for the guarantees.

    `handover_linger`: seconds between a submit that finds the dispatcher idle and the
    dispatcher taking the job (0: at once). `gil_slice`: seconds of the scoring thread's CPU
    time between the pauses its jobs make for a host thread waiting on the GIL (infinite:
    never; agentscore._runtime.courtesy).
    """

    def __init__(
        self,
        *,
        max_queue: int = 10_000,
        concurrency: int = 16,
        run_timeout: float | None = 120.0,
        on_drop: DropHandler | None = None,
        on_score: ScoreSink | None = None,
        drop_log_interval: float = 10.0,
        sink_timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        handover_linger: float = HANDOVER_LINGER,
        gil_slice: float = GIL_SLICE,
        loop: BackgroundLoop = background_loop,
    ) -> None:
        check_number("max_queue", max_queue, low=1, integer=True)
        check_number("concurrency", concurrency, low=1, integer=True)
        if run_timeout is not None:
            check_number("run_timeout", run_timeout, low=0, open_low=True)
        check_number("drop_log_interval", drop_log_interval, low=0)
        check_number("sink_timeout", sink_timeout, low=0, open_low=True)
        check_number("handover_linger", handover_linger, low=0)
        check_number("gil_slice", gil_slice, low=0, infinite=True)
        self.max_queue = max_queue
        self.concurrency = concurrency
        self.run_timeout = run_timeout
        self._drops = DropReporter(on_drop, log_interval=drop_log_interval, max_queue=max_queue)
        self._sinks: list[ScoreSink] = [on_score] if on_score else []
        self._loop = loop
        self.sink_timeout = sink_timeout
        self.retry = retry if retry is not None else RetryPolicy()
        self.handover_linger = handover_linger
        self.gil_slice = gil_slice
        self._backoff = _RunnerBackoff(self)

        self._closed = False
        self._reset()
        _all_runners.add(self)

    def _reset(self) -> None:
        """A fresh start; also the state of a forked child, whose copy of the parent's queue
        and running jobs belongs to the parent (it scores them), and whose dispatcher did not
        survive the fork."""
        self._work: WorkQueue[ScoreJob] = WorkQueue(self.max_queue, wake=self._wake_soon)
        if self._closed:
            self._work.close()
        # The queue's lock: the counts below change in step with its own.
        self._lock = self._work.lock
        self._submitted = self._scored = self._failed = self._dropped = self._delayed = 0
        self._started = self._stopping = False
        self._wakeup: anyio.Event | None = None
        self._closing: anyio.Event | None = None  # set on shutdown: retries stop waiting
        self._drops.reset()

    def add_sink(self, sink: ScoreSink) -> None:
        """Call `sink(result)` for every finished run, on the background loop: keep a sync
        sink quick; an async sink (or one returning an awaitable) is awaited, bounded by
        `sink_timeout`."""
        self._sinks.append(sink)

    def stats(self) -> RunnerStats:
        with self._lock:
            return RunnerStats(
                self._submitted,
                self._scored,
                self._failed,
                self._dropped,
                self._work.unfinished,
                self._delayed,
            )

    def submit(self, job: ScoreJob) -> bool:
        """Queue `job`; False when it was dropped. Never blocks, never raises."""
        try:
            with self._lock:
                self._submitted += 1
                refused = self._work.put(job)
                if refused is not None:
                    self._dropped += 1
                start = refused is None and not self._started
                self._started = self._started or start
            if refused is not None:
                self._drops.report(job, refused.value)
                return False
            if start:
                self._start()
            return True
        except Exception as exc:  # the caller must never see scoring trouble
            _log.error("submit_failed", error_type=type(exc).__name__)
            return False

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until no job is queued or running, and what they delivered to sinks that batch
        their posts has been sent; False if `timeout` (seconds) ran out first."""
        if self._loop.in_loop_thread() or _in_job.get():
            raise RuntimeError("flush() from the background loop would wait on itself")
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._work.wait_idle(timeout):
            return False
        return flush_buffers(None if deadline is None else max(0.0, deadline - time.monotonic()))

    async def aflush(self, timeout: float | None = None) -> bool:
        """`flush` for async callers (asyncio or trio): waits in a worker thread."""
        return await anyio.to_thread.run_sync(self.flush, timeout, abandon_on_cancel=True)

    def shutdown(self, timeout: float | None = 5.0) -> bool:
        """Stop taking jobs, wait up to `timeout` for the queued ones, then stop the dispatcher.

        Jobs submitted after shutdown are dropped with reason "shutdown". Returns whether
        everything finished in time.
        """
        with self._lock:
            self._closed = True
            self._work.close()
            started = self._started
        if started:  # jobs waiting to retry give up now and end with their failure
            self._loop.call_soon(self._wake)
        finished = self.flush(timeout)
        with self._lock:
            self._stopping = True
            started = self._started
        if started:
            self._loop.call_soon(self._wake)
        return finished

    def _start(self) -> None:
        # Not the portal's start_task_soon: it waits for the loop to take the task, which
        # a busy loop makes the caller pay for.
        self._loop.spawn(self._dispatch)
        started(self)

    def _wake_soon(self) -> None:
        self._loop.call_soon(self._wake_after_linger)

    def _wake_after_linger(self) -> None:
        # Submitting happens inside the caller's request: a job started now would take the
        # GIL while the request still runs. `handover_linger` later the answer is usually
        # out; runs submitted meanwhile join the same wake-up.
        asyncio.get_running_loop().call_later(self.handover_linger, self._wake)

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()
        if self._closed and self._closing is not None:
            self._closing.set()

    async def _dispatch(self) -> None:
        self._closing = anyio.Event()
        if self._closed:
            self._closing.set()
        slots = anyio.Semaphore(self.concurrency)
        # The jobs' tasks start in this task's context: they take its slice.
        with gil_slice(self.gil_slice):
            async with anyio.create_task_group() as task_group:
                while True:
                    # A slot first, then a job: waiting jobs stay in the bounded queue.
                    await slots.acquire()
                    job = await self._next_job()
                    if job is None:
                        break
                    task_group.start_soon(self._execute, job, slots)

    async def _next_job(self) -> ScoreJob | None:
        """The next queued job, waiting while there is none; None once stopping."""
        while True:
            # The event first: a job put after `take` found none wakes this one.
            self._wakeup = wakeup = anyio.Event()
            taken = self._work.take(1)
            if taken:
                return taken[0]
            if self._stopping:
                return None
            await wakeup.wait()

    async def _execute(self, job: ScoreJob, slots: anyio.Semaphore) -> None:
        # Task-local, and copied into the worker threads of sync sinks and steps.
        _in_job.set(True)
        result: ScoreResult | None = None
        try:
            scoring = Scoring(
                telemetry=job.telemetry,
                timeout=self.run_timeout,
                retry=self._backoff,
                sinks=(job.on_result, *self._sinks),
                sink_timeout=self.sink_timeout,
            )
            generation = Generation((job.scorer,), job.together)
            (result,) = await score_generation(generation, job.run, scoring, read=job.read)
        except Exception as exc:  # never reached but by a bug: the dispatcher must go on
            _log.error(
                "scorer_job_crashed", scorer=_scorer_name(job), error_type=type(exc).__name__
            )
        finally:
            slots.release()
            with self._lock:
                # None: cancelled, or the job crashed before it had a result.
                if result is None or result.status is ScoreStatus.FAILED:
                    self._failed += 1
                else:
                    self._scored += 1
                self._work.finished()

    async def _sleep_unless_closed(self, delay: float) -> None:
        closing = self._closing
        if closing is None or self._closed:
            return
        with anyio.move_on_after(delay):
            await closing.wait()


class _RunnerBackoff:
    """A runner's waits between a run's tries: the run keeps its slot and counts as delayed;
    a shutdown ends the waiting at once (one last try, whose result stands)."""

    __slots__ = ("_runner",)

    def __init__(self, runner: Runner) -> None:
        self._runner = runner

    @property
    def policy(self) -> RetryPolicy:
        return self._runner.retry

    def stopped(self) -> bool:
        return self._runner._closed

    async def wait(self, delay: float) -> None:
        runner = self._runner
        with runner._lock:
            runner._delayed += 1
        try:
            await runner._sleep_unless_closed(delay)
        finally:
            with runner._lock:
                runner._delayed -= 1


def _scorer_name(job: ScoreJob) -> str:
    return str(getattr(job.scorer, "id", type(job.scorer).__name__))


_in_job: ContextVar[bool] = ContextVar("agentscore_in_job", default=False)
_all_runners: weakref.WeakSet[Runner] = weakref.WeakSet()
_default_runner: Runner | None = None
_default_lock = threading.Lock()
_started_runners: weakref.WeakSet[JobRunner] = weakref.WeakSet()


def default_runner() -> Runner:
    """The process-wide runner agents use unless given their own."""
    global _default_runner
    with _default_lock:
        if _default_runner is None:
            _default_runner = Runner()
        return _default_runner


def flush_started_runners(timeout: float) -> bool:
    """Wait for every started runner's pending work, sharing one deadline."""
    return _each_started_runner(timeout, lambda runner, left: runner.flush(left))


def shutdown_started_runners(timeout: float) -> bool:
    """Shut down every started runner, sharing one deadline; True if all finished."""
    return _each_started_runner(timeout, lambda runner, left: runner.shutdown(left))


def started(runner: JobRunner) -> None:
    """`runner` has work: it is flushed by `drain` and shut down at interpreter exit."""
    _started_runners.add(runner)


def _each_started_runner(timeout: float, action: Callable[[JobRunner, float], bool]) -> bool:
    deadline = time.monotonic() + timeout
    finished = True
    for runner in list(_started_runners):
        if not action(runner, max(0.0, deadline - time.monotonic())):
            finished = False
            _log.warning("runner_not_drained", pending=runner.stats().pending)
    return finished


def _reset_runners_in_child() -> None:
    global _default_lock
    _default_lock = threading.Lock()
    _started_runners.clear()
    for runner in list(_all_runners):
        runner._reset()


after_fork_in_child(_reset_runners_in_child)


def _flush_at_exit() -> None:
    """Give pending scores a bounded time to finish when the interpreter exits."""
    shutdown_started_runners(max(0.0, exit_deadline() - time.monotonic()))


on_drain(flush_started_runners)
at_exit(_flush_at_exit)
