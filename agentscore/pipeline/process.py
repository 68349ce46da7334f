"""Scoring in a process of its own, forked from the agent's: the agent's interpreter pays for
handing a run over, not for scoring it.

A scoring thread in the agent's process shares its GIL: at a steady request rate it adds 1 to
3 ms to the agent's p99 on a quiet machine and 8 loaded (docs/benchmarks.md, "How sure a
p99 difference is"), about 1 ms of the process's CPU per run. `ProcessRunner` takes the same
jobs as `Runner` and sends them down a pipe to a child process, which runs them on a `Runner`
of its own (the same pipeline: timeouts, retries, evaluation spans); each result comes back
up a second pipe to the parent's sinks (`on_score`, an agent's `scores`). The parent's part
is pickling a run and reading its result back, on two threads of its own that start their
work `HANDOVER_LINGER` after a submit, as the runner's dispatcher does.

The child is a fork, so it has what the parent had when it started: the scorers with their
`get_context` callbacks and judges, the telemetry providers and their exporters (the SDK's
processors restart their threads after a fork; spans leave from the child). A scorer or
telemetry object the child does not have (made after it started) starts a new child, which
has it, at most once every `REFORK_INTERVAL` (create scorers once, not per request); the old
child finishes its runs and exits. What a child is sent must pickle: messages in a shape that
does not (a generator, say) are read in the parent first; a run the child cannot read (an
object of a class made after it started) ends as a failed result
(`ScoringMessageUnreadable`), alone.

Nothing is lost or repeated by a process event:
- a child that dies (killed, crashed) is replaced; its runs under way go to the next child
  once, and end as failed results (`ScoringProcessExited`) if they were under way in that one
  when it died too;
- a child whose scoring loop has not been heard from for `SILENCE_TIMEOUT` (stuck on a lock
  the fork copied held, say) is killed and replaced the same way;
- at the parent's exit, queued runs are sent and their results waited for within the exit
  budget (AGENTSCORE_EXIT_FLUSH_TIMEOUT); a parent killed outright leaves the child to finish
  what it holds, export it and exit (it sees the end of its pipe);
- Ctrl-C or a TERM to the whole process group is for the parent: the child ignores both
  and goes on until its parent closes the pipe (SIGKILL still ends it).
`submit` keeps the runner's promise: O(1), never blocks, never raises; a full queue drops
(counted and reported like the runner's). Needs `os.fork` (Linux, macOS).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import pickle
import signal
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, cast

import anyio
import anyio.to_thread
import structlog

from agentscore._options import check_number
from agentscore._runtime import courtesy
from agentscore._runtime.hooks import after_fork_in_child
from agentscore._runtime.loop import BackgroundLoop, background_loop
from agentscore._runtime.workqueue import WorkQueue
from agentscore.errors import ConfigurationError
from agentscore.pipeline.deliver import ScoreSink, deliver
from agentscore.pipeline.drops import DropHandler, DropReporter
from agentscore.pipeline.retry import RetryPolicy
from agentscore.pipeline.runner import Runner, RunnerStats, ScoreJob, failed_result, started
from agentscore.result import ScoreError, ScoreResult, ScoreStatus
from agentscore.scorers.base import Scorer
from agentscore.scorers.together import Together
from agentscore.telemetry.core import Telemetry

__all__ = ["ProcessRunner", "ScoringMessageUnreadable", "ScoringProcessExited"]

_log = structlog.get_logger("agentscore.process")

# Seconds between a submit that finds the sender idle and the send: the request is long over,
# and the runs submitted meanwhile go in the same write. Each wake-up of a thread of ours
# takes the GIL from the agent's requests, and on a busy machine the kernel may preempt it
# holding the GIL: batches 200 ms apart took the agent's added p99 beside two busy processes
# from +7.4 ms (20 ms apart) to +3.5 (docs/benchmarks.md).
SEND_LINGER = 0.2
# Seconds between two new children started for objects the running one lacks.
REFORK_INTERVAL = 1.0
# The child's scoring loop says it is alive every HEARTBEAT seconds; silent for
# SILENCE_TIMEOUT, it is killed and replaced (generous: a niced child on a busy machine may
# wait seconds for a CPU).
HEARTBEAT = 1.0
SILENCE_TIMEOUT = 30.0
# Seconds the sender waits for work before looking again (a nudge wakes it sooner).
_IDLE_WAIT = 1.0
# Objects kept for children to have (by id: held, so no new object takes the id); past this
# many (scorers made per request), only those of the runs at hand.
_MAX_SEEN = 10_000
# Times a run is sent to a child: a run under way in two children that died fails.
_SENDS = 2
_PROTOCOL = pickle.HIGHEST_PROTOCOL
# Seconds the child gathers results before it sends them up (the parent's reader wakes once
# a batch: see SEND_LINGER).
RESULTS_EVERY = 0.2


class ScoringProcessExited(RuntimeError):
    """The scoring process ended while a run was under way in it."""


class ScoringMessageUnreadable(RuntimeError):
    """The scoring process could not read a run this process sent it (say, an object of a
    class made after the scoring process started)."""


# The status of a run the child could not read; its error's description comes with it.
_UNREADABLE = "unreadable"


@dataclass(slots=True, eq=False)
class _Child:
    pid: int
    jobs: Connection  # parent -> child: batches of runs
    results: Connection  # child -> parent: results
    known: frozenset[int]  # ids of the parent's objects the child has a copy of
    heard: float = field(default_factory=time.monotonic)  # last message from the child
    gone: threading.Event = field(default_factory=threading.Event)
    retired: bool = False  # sent no more runs: finishes what it holds, then exits


@dataclass(slots=True, eq=False)
class _Sent:
    job: ScoreJob
    sends: int = 0
    child: _Child | None = None


class ProcessRunner:
    """Runs score jobs in a forked scoring process. Options mean what they mean for `Runner`
    (`concurrency`, `run_timeout`, `retry` and `sink_timeout` apply in the child; `max_queue`
    bounds the runs queued or under way; `on_score` and `on_drop` run in this process)."""

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
        nice: int = 10,
        loop: BackgroundLoop = background_loop,
    ) -> None:
        if not hasattr(os, "fork"):
            raise ConfigurationError("ProcessRunner needs os.fork (Linux, macOS); use Runner")
        check_number("max_queue", max_queue, low=1, integer=True)
        check_number("drop_log_interval", drop_log_interval, low=0)
        check_number("sink_timeout", sink_timeout, low=0, open_low=True)
        check_number("nice", nice, low=0, high=19, integer=True)
        self.max_queue = max_queue
        self.nice = nice
        self.sink_timeout = sink_timeout
        # The child's runner: built here, so a bad option is an error now, not in the child.
        self._child_runner = Runner(
            max_queue=max_queue,
            concurrency=concurrency,
            run_timeout=run_timeout,
            sink_timeout=sink_timeout,
            retry=retry,
        )
        self._drops = DropReporter(on_drop, log_interval=drop_log_interval, max_queue=max_queue)
        self._sinks: list[ScoreSink] = [on_score] if on_score else []
        self._loop = loop
        self._closed = False
        self._reset()
        _all.add(self)

    def _reset(self) -> None:
        """A fresh start; also a forked child's state: the parent's runs are the parent's."""
        self._work: WorkQueue[ScoreJob] = WorkQueue(self.max_queue)
        if self._closed:
            self._work.close()
        self._lock = self._work.lock
        self._submitted = self._scored = self._failed = self._dropped = 0
        self._tokens = itertools.count()
        self._sent: dict[int, _Sent] = {}  # token -> run under way in a child
        self._resend: list[_Sent] = []  # runs of a child that died, to send first
        self._seen: dict[int, object] = {}  # scorers and telemetries jobs used, by id
        self._child: _Child | None = None
        self._children: list[_Child] = []  # alive: the current one and retired ones
        self._last_fork = -math.inf
        self._forks = 0
        self._sender: threading.Thread | None = None
        self._drops.reset()

    # -- the caller's side: the same surface as Runner ------------------------------------

    def add_sink(self, sink: ScoreSink) -> None:
        """Call `sink(result)` for every finished run, in this process (see Runner)."""
        self._sinks.append(sink)

    @property
    def child_pid(self) -> int | None:
        """The scoring process's pid; None before the first run."""
        child = self._child
        return None if child is None else child.pid

    def stats(self) -> RunnerStats:
        with self._lock:
            return RunnerStats(
                self._submitted, self._scored, self._failed, self._dropped, self._work.unfinished
            )

    def submit(self, job: ScoreJob) -> bool:
        """Queue `job`; False when it was dropped. Never blocks, never raises."""
        try:
            with self._lock:
                self._submitted += 1
                # Runs under way count against the bound: the child holds them in memory.
                if self._work.unfinished >= self.max_queue and not self._work.closed:
                    refused: str | None = "queue_full"
                else:
                    taken = self._work.put(job)
                    refused = None if taken is None else taken.value
                if refused is not None:
                    self._dropped += 1
                start = refused is None and self._sender is None
                if start:
                    self._sender = threading.Thread(
                        target=self._send_loop, name="agentscore-process-send", daemon=True
                    )
            if refused is not None:
                self._drops.report(job, refused)
                return False
            if start:
                assert self._sender is not None
                self._sender.start()
                started(self)
            return True
        except Exception as exc:  # the caller must never see scoring trouble
            _log.error("submit_failed", error_type=type(exc).__name__)
            return False

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until no job is queued or under way; False if `timeout` ran out first."""
        if self._loop.in_loop_thread():
            raise RuntimeError("flush() from a sink would wait on itself")
        return self._work.wait_idle(timeout)

    async def aflush(self, timeout: float | None = None) -> bool:
        """`flush` for async callers (asyncio or trio): waits in a worker thread."""
        return await anyio.to_thread.run_sync(self.flush, timeout, abandon_on_cancel=True)

    def shutdown(self, timeout: float | None = 5.0) -> bool:
        """Stop taking jobs, send the queued ones and wait up to `timeout` for their results;
        the child then exits. Returns whether everything finished in time."""
        with self._lock:
            self._closed = True
            self._work.close()
        finished = self.flush(timeout)
        sender = self._sender
        if sender is not None and sender is not threading.current_thread():
            sender.join(timeout=0 if timeout is None else max(0.0, timeout))
        return finished

    # -- the parent's two threads -----------------------------------------------------------

    def _send_loop(self) -> None:
        courtesy.start_giving_way()  # pickling a batch of runs takes the GIL for milliseconds
        while True:
            try:
                if self._send_some():
                    return
            except Exception as exc:  # a fork refused (no memory, too many processes)
                _log.error("scoring_process_send_failed", error_type=type(exc).__name__)
                time.sleep(REFORK_INTERVAL)

    def _send_some(self) -> bool:
        """Sends what is queued; True once closed and nothing is left to send."""
        while True:
            self._work.wait_for_items(_IDLE_WAIT)
            with self._lock:
                closing = self._work.closed and not len(self._work) and not self._resend
            if closing:
                self._retire_all()
                return True
            # A submit happens inside the caller's request: wait until it is likely over, and
            # for the runs that follow, sent with it.
            time.sleep(SEND_LINGER)
            with self._lock:
                batch, self._resend = self._resend, []
            batch += [_Sent(job) for job in self._work.take()]
            if not batch:  # woken with nothing to send (a child ended with no runs)
                continue
            try:
                self._send(batch)
            except Exception:
                # Nothing reached a child: these runs go first on the next try.
                with self._lock:
                    self._resend = [sent for sent in batch if sent.child is None] + self._resend
                raise

    def _send(self, batch: list[_Sent]) -> None:
        child = self._child_for(batch)
        messages: list[_Generation] = []
        for group in _generations(batch):
            with self._lock:
                tokens = []
                for sent in group:
                    sent.sends += 1
                    sent.child = child
                    token = next(self._tokens)
                    self._sent[token] = sent
                    tokens.append(token)
            try:
                messages.append(_message(tokens, group, self._wants_result(group[0].job)))
            except Exception as exc:  # not even the run read here pickles
                with self._lock:
                    for token in tokens:
                        del self._sent[token]
                self._finish(*((s, failed_result(s.job, s.job.run, exc)) for s in group))
            courtesy.give_way()
        try:
            child.jobs.send_bytes(pickle.dumps(messages, _PROTOCOL))
        except OSError:
            # The child died: its reader finds the runs under way and sends them again.
            _log.warning("scoring_process_unreachable", pid=child.pid)

    def _child_for(self, batch: list[_Sent]) -> _Child:
        objects: dict[int, object] = {}
        for sent in batch:
            objects[id(sent.job.scorer)] = sent.job.scorer
            if sent.job.telemetry is not None:
                objects[id(sent.job.telemetry)] = sent.job.telemetry
        child = self._child
        if child is not None and child.known.issuperset(objects):
            return child
        if child is not None:
            self._forks += 1
            if self._forks == 10:
                _log.warning("scoring_process_restarted_often", reason="new scorer objects")
        # Objects seen earlier and still held keep their ids: the new child has them too.
        if len(self._seen) > _MAX_SEEN:
            self._seen = {}
        self._seen.update(objects)
        # Scorers made per request, or a child that dies at once, would fork in a loop.
        time.sleep(max(0.0, self._last_fork + REFORK_INTERVAL - time.monotonic()))
        return self._fork()

    def _fork(self) -> _Child:
        old, self._child = self._child, None
        if old is not None:
            self._retire(old)
        jobs_read, jobs_write = os.pipe()
        results_read, results_write = os.pipe()
        self._last_fork = time.monotonic()
        # Taken now: in the child, the after-fork reset empties this object's own state.
        objects, child_runner, nice = self._seen, self._child_runner, self.nice
        with warnings.catch_warnings():
            # Python 3.12 warns of forking a process with threads: locks another thread held
            # stay held in the child. agentscore's own are reset after the fork
            # (runtime.hooks), the SDK's processors reset theirs, and a child that hangs
            # anyway is killed after SILENCE_TIMEOUT.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: never returns into the parent's code
            status = 1
            try:
                os.close(jobs_write)
                os.close(results_read)
                _child_main(jobs_read, results_write, objects, child_runner, nice)
                status = 0
            except BaseException as exc:
                _log.exception("scoring_process_failed", error_type=type(exc).__name__)
            finally:
                os._exit(status)
        os.close(jobs_read)
        os.close(results_write)
        child = _Child(
            pid,
            Connection(jobs_write, readable=False),
            Connection(results_read, writable=False),
            frozenset(self._seen),
        )
        with self._lock:
            self._child = child
            self._children.append(child)
        threading.Thread(
            target=self._read_loop, args=(child,), name="agentscore-process-read", daemon=True
        ).start()
        threading.Thread(target=self._watch, args=(child,), daemon=True).start()
        return child

    def _watch(self, child: _Child) -> None:
        while not child.gone.wait(HEARTBEAT):
            if time.monotonic() - child.heard > SILENCE_TIMEOUT:
                _log.error("scoring_process_hung", pid=child.pid, timeout=SILENCE_TIMEOUT)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGKILL)  # its reader sends its runs again
                return

    def _retire(self, child: _Child) -> None:
        child.retired = True
        with contextlib.suppress(OSError):
            child.jobs.close()  # the child sees the end of its pipe: finishes, then exits

    def _retire_all(self) -> None:
        with self._lock:
            children = list(self._children)
            self._child = None
        for child in children:
            self._retire(child)

    def _read_loop(self, child: _Child) -> None:
        courtesy.start_giving_way()
        while True:
            try:
                data = child.results.recv_bytes()
            except (EOFError, OSError):
                break
            child.heard = time.monotonic()
            try:
                self._take_results(data)
            except Exception as exc:  # a message that does not unpickle: the child is broken
                _log.error("scoring_process_garbled", pid=child.pid, error_type=type(exc).__name__)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGKILL)
        child.gone.set()
        child.results.close()
        _, status = os.waitpid(child.pid, 0)
        self._ended(child, status)

    def _take_results(self, data: bytes) -> None:
        if not data:  # a heartbeat
            return
        finished: list[tuple[_Sent, ScoreResult]] = []
        # Each result pickled on its own: a batch is read a result at a time, with pauses.
        for token, status, carried in pickle.loads(data):
            with self._lock:
                sent = self._sent.pop(token, None)
            if sent is None:
                continue
            if status == _UNREADABLE:
                error = ScoringMessageUnreadable(
                    f"the scoring process could not read it ({carried})"
                )
                finished.append((sent, failed_result(sent.job, sent.job.run, error)))
            elif carried is None:  # nothing here wanted it: only how it ended came back
                self._count(ScoreStatus(status))
            else:
                finished.append((sent, _cast(pickle.loads(carried), ScoreResult)))
            courtesy.give_way()
        self._finish(*finished)

    def _ended(self, child: _Child, status: int) -> None:
        with self._lock:
            self._children.remove(child)
            if self._child is child:
                self._child = None
            lost = [(token, s) for token, s in self._sent.items() if s.child is child]
            for token, _ in lost:
                del self._sent[token]
            again = [s for _, s in lost if s.sends < _SENDS and not self._work.closed]
            self._resend += again
            self._work.nudge()
        if lost or not child.retired:
            _log.error(
                "scoring_process_exited",
                pid=child.pid,
                status=_describe(status),
                runs_sent_again=len(again),
                runs_failed=len(lost) - len(again),
            )
        error = ScoringProcessExited(f"the scoring process exited ({_describe(status)})")
        gone = [sent for _, sent in lost if sent not in again]
        self._finish(*((s, failed_result(s.job, s.job.run, error)) for s in gone))

    def _wants_result(self, job: ScoreJob) -> bool:
        return job.on_result is not None or bool(self._sinks)

    def _finish(self, *finished: tuple[_Sent, ScoreResult]) -> None:
        """Results to the sinks that want them, on the background loop (one wake-up for the
        lot), each result counted once it was delivered."""
        wanted = []
        for sent, result in finished:
            if self._wants_result(sent.job):
                wanted.append((sent.job, result))
            else:
                self._count(result.status)
        if not wanted:
            return

        async def deliver_then_count(job: ScoreJob, result: ScoreResult) -> None:
            try:
                sinks = (job.on_result, *self._sinks)
                await deliver(result, sinks, timeout=self.sink_timeout, telemetry=job.telemetry)
            finally:
                self._count(result.status)

        async def deliver_all() -> None:
            async with anyio.create_task_group() as group:
                for job, result in wanted:
                    group.start_soon(deliver_then_count, job, result)

        self._loop.spawn(deliver_all)

    def _count(self, status: ScoreStatus) -> None:
        with self._lock:
            if status is ScoreStatus.FAILED:
                self._failed += 1
            else:
                self._scored += 1
            self._work.finished()


def _generations(batch: list[_Sent]) -> list[list[_Sent]]:
    """The batch's jobs grouped by run: a generation's scorers go to the child together (one
    copy of the run, one shared judge request)."""
    groups: dict[int, list[_Sent]] = {}
    for sent in batch:
        job = sent.job
        groups.setdefault(id(job.read if job.read is not None else job.run), []).append(sent)
    return list(groups.values())


# A generation for the child: its runs' tokens, whether results are wanted back, and the rest
# pickled apart, so that a run the child cannot read fails alone (its tokens still known).
_Generation = tuple[list[int], bool, bytes]


def _message(tokens: list[int], group: list[_Sent], want: bool) -> _Generation:
    """One generation for the child: the run's messages as handed over (read in the child)
    when they pickle, else the run read here."""
    first = group[0].job
    scorers = [id(sent.job.scorer) for sent in group]
    telemetry = None if first.telemetry is None else id(first.telemetry)
    shared = first.together is not None
    run, read = first.run, first.read
    if read is not None:
        try:
            return tokens, want, pickle.dumps((scorers, telemetry, shared, run, read), _PROTOCOL)
        except Exception:  # a generator, an open file: read here instead
            run, read = read(), None
    return tokens, want, pickle.dumps((scorers, telemetry, shared, run, None), _PROTOCOL)


def _child_main(
    jobs_fd: int, results_fd: int, objects: dict[int, object], runner: Runner, nice: int
) -> None:
    """The scoring process: runs what arrives until the parent closes the pipe, then finishes
    what it holds and exits."""
    # A terminal's Ctrl-C, or a TERM to the whole group, is for the parent: it closes the
    # pipe when it goes, and this process finishes what it holds first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # Scoring takes the CPU the agent's requests leave: on a busy machine it falls behind
    # (its runs wait in the queue), not the agent.
    os.nice(nice)
    courtesy.no_host()  # before the scoring loop's thread starts
    jobs = Connection(jobs_fd, writable=False)
    results = _Results(Connection(results_fd, readable=False))

    async def heartbeat() -> None:  # from the scoring loop: its silence is what matters
        while True:
            results.beat()
            await anyio.sleep(HEARTBEAT)

    background_loop.spawn(heartbeat)
    try:
        while True:
            try:
                data = jobs.recv_bytes()
            except EOFError:
                break
            for tokens, want, generation in pickle.loads(data):
                try:
                    _submit(runner, objects, results, tokens, want, pickle.loads(generation))
                except Exception as exc:  # an object of a class made after the fork, say
                    _log.error("scoring_message_unreadable", error_type=type(exc).__name__)
                    results.unreadable(tokens, exc)
    finally:
        runner.shutdown(timeout=None)
        _flush_telemetry(objects.values())
        results.close()


def _submit(
    runner: Runner,
    objects: dict[int, object],
    results: _Results,
    tokens: list[int],
    want: bool,
    generation: tuple[Any, ...],
) -> None:
    scorer_ids, telemetry_id, shared, run, reader = generation
    # What the parent sent by id: a broken scorer object among them fails in the runner, as
    # it would in the parent's.
    scorers = [cast(Scorer, objects[i]) for i in scorer_ids]
    telemetry = None if telemetry_id is None else cast(Telemetry, objects[telemetry_id])
    together = Together(scorers) if shared else None
    for token, scorer in zip(tokens, scorers, strict=True):
        runner.submit(ScoreJob(scorer, run, telemetry, results.sink(token, want), reader, together))


class _Results:
    """The child's results on their way to the parent, a batch every `RESULTS_EVERY`
    seconds: the parent's reader wakes once a batch, not once a run."""

    def __init__(self, pipe: Connection) -> None:
        self._pipe = pipe
        # (token, status, the result pickled if wanted; for an unreadable run, why)
        self._batch: list[tuple[int, str, bytes | str | None]] = []
        self._changed = threading.Condition()
        self._closed = False
        self._beat = False
        self._thread = threading.Thread(target=self._send_loop, daemon=True)
        self._thread.start()

    def sink(self, token: int, want: bool) -> ScoreSink:
        def keep(result: ScoreResult) -> None:
            pickled = None
            if want:
                try:
                    pickled = pickle.dumps(result, _PROTOCOL)
                except Exception as exc:  # counted in the parent, never delivered there
                    _log.error("scoring_result_unpicklable", error_type=type(exc).__name__)
            with self._changed:
                self._batch.append((token, result.status.value, pickled))
                self._changed.notify()

        return keep

    def unreadable(self, tokens: list[int], exc: Exception) -> None:
        """Runs this process could not read: the parent ends them as failed."""
        error = ScoreError.of(exc)
        why = f"{error.type}: {error.message}"
        with self._changed:
            self._batch.extend((token, _UNREADABLE, why) for token in tokens)
            self._changed.notify()

    def beat(self) -> None:
        """The scoring loop is alive: an empty message goes up (a heartbeat)."""
        with self._changed:
            self._beat = True
            self._changed.notify()

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify()
        self._thread.join()
        self._pipe.close()

    def _send_loop(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._batch or self._beat or self._closed)
                closed = self._closed
            if self._batch and not closed:
                time.sleep(RESULTS_EVERY)
            with self._changed:
                batch, self._batch, self._beat = self._batch, [], False
            self._pipe.send_bytes(pickle.dumps(batch, _PROTOCOL) if batch else b"")
            if closed:
                return


def _cast(value: object, kind: type[Any]) -> Any:
    if not isinstance(value, kind):
        raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
    return value


def _flush_telemetry(objects: Any) -> None:
    """The child ends with os._exit (the parent's exit hooks are the parent's): what its
    exporters hold goes out first."""
    from opentelemetry import metrics, trace
    from opentelemetry._logs import get_logger_provider

    providers: list[object] = [
        trace.get_tracer_provider(),
        get_logger_provider(),
        metrics.get_meter_provider(),
    ]
    for item in objects:
        if isinstance(item, Telemetry):
            providers += [item.tracer_provider, item.logger_provider, item.meter_provider]
    done: set[int] = set()
    for provider in providers:
        flush = getattr(provider, "force_flush", None)
        if provider is None or id(provider) in done or flush is None:
            continue
        done.add(id(provider))
        try:
            flush()
        except Exception as exc:
            _log.error("scoring_process_flush_failed", error_type=type(exc).__name__)


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


_all: weakref.WeakSet[ProcessRunner] = weakref.WeakSet()


def _forget_in_child() -> None:
    """In any forked child (ours, or a pre-forking server's worker): the pipes to the
    parent's scoring processes are the parent's. Held open here, a scoring process would
    never see its parent close them."""
    for process_runner in list(_all):
        for child in process_runner._children:
            with contextlib.suppress(OSError):
                child.jobs.close()
            with contextlib.suppress(OSError):
                child.results.close()
        process_runner._reset()


after_fork_in_child(_forget_in_child)
