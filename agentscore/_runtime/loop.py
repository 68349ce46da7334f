"""One background thread with its own anyio event loop, shared by the process.

Scoring must work the same from sync code, asyncio and trio, including from inside a
running loop (FastAPI, Jupyter, pytest-asyncio). Running it on a loop of our own, in a
daemon thread, gives every caller the same path and never touches the caller's loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import structlog
from anyio.from_thread import BlockingPortal

from agentscore._runtime.courtesy import start_giving_way
from agentscore._runtime.hooks import after_fork_in_child
from agentscore._runtime.threads import start_daemon_thread

__all__ = ["SIGNAL_POLL", "BackgroundLoop", "background_loop", "wait_for_result"]

T = TypeVar("T")
_log = structlog.get_logger("agentscore._runtime")
# How often a waiting caller wakes to let Python run a signal handler (Ctrl-C): the kernel
# hands a process's SIGINT to any of its threads, and when that is not the main thread, a
# wait without a timeout in the main thread never returns to run the handler.
SIGNAL_POLL = 0.2


def wait_for_result(future: concurrent.futures.Future[T]) -> T:
    """`future.result()` that Ctrl-C interrupts whichever thread received the signal; on any
    interruption the work is cancelled."""
    try:
        while True:
            try:
                return future.result(timeout=SIGNAL_POLL)
            except TimeoutError:
                if future.done():  # its own TimeoutError, or it finished just now
                    return future.result()
    except BaseException:
        future.cancel()
        raise


class BackgroundLoop:
    """A daemon thread running an anyio loop, reachable through a blocking portal.

    A `courteous` loop (the scoring loop) gives the GIL to waiting threads during long work
    (`agentscore._runtime.courtesy`); the loop that runs a sync caller's agent does not: its
    work is the caller's own.
    """

    def __init__(self, name: str = "agentscore-background", *, courteous: bool = False) -> None:
        self._name = name
        self._courteous = courteous
        self._reset()
        _loops.add(self)

    def _reset(self) -> None:
        # Also the state of a forked child: the parent's thread and loop did not come along.
        self._lock = threading.Lock()
        self._portal: BlockingPortal | None = None
        self._ident: int | None = None  # the loop thread's, from its start
        self._thread: threading.Thread | None = None  # once it runs
        self._start: _Start | None = None
        self._stop: anyio.Event | None = None
        self._asyncio_loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[object]] = set()
        # Callbacks handed over while the thread was still starting; it runs them first.
        self._early: list[tuple[Callable[[], object], contextvars.Context]] = []

    @property
    def thread(self) -> threading.Thread | None:
        """The loop's thread, once it runs."""
        return self._thread

    def portal(self) -> BlockingPortal:
        """The running loop's portal, starting the thread on first use and waiting for it."""
        portal = self._portal
        if portal is not None:
            return portal
        with self._lock:
            start = self._start_thread()
        start.ready.wait()
        if start.failure is not None:
            raise RuntimeError("agentscore background loop failed to start") from start.failure
        portal = self._portal
        assert portal is not None
        return portal

    def in_loop_thread(self) -> bool:
        return threading.get_ident() == self._ident

    def call(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run `func(*args)` on the loop and wait for its result, from any other thread."""
        if self.in_loop_thread():
            raise RuntimeError(
                "blocking call made from agentscore's own background loop; await the async "
                "form instead"
            )
        return wait_for_result(self.portal().start_task_soon(func, *args))

    def call_soon(self, func: Callable[[], object]) -> None:
        """Schedule a quick sync callback on the loop from any thread, without waiting, not
        even for the thread to start on first use.

        Much cheaper than a portal round trip, which is why the runner wakes its dispatcher
        with it on the caller's hot path.
        """
        self._hand_over(func, None)

    def spawn(self, func: Callable[[], Awaitable[object]]) -> None:
        """Start `func()` as a task on the loop from any thread, without waiting for it (nor
        for the thread to start on first use)."""

        def start() -> None:
            loop = asyncio.get_running_loop()
            task = loop.create_task(_as_coroutine(func))
            self._tasks.add(task)  # the loop keeps only weak references to tasks
            task.add_done_callback(self._tasks.discard)

        # A fresh context: the caller's (sniffio's "trio", say) must not reach our tasks.
        self._hand_over(start, contextvars.Context())

    def _hand_over(
        self, callback: Callable[[], object], context: contextvars.Context | None
    ) -> None:
        loop = self._asyncio_loop
        if loop is None:
            with self._lock:
                loop = self._asyncio_loop
                if loop is None:
                    # The first use of the loop is on a caller's path (the first submit):
                    # queue the callback for the thread to run once its loop is up, in the
                    # context call_soon_threadsafe would give it.
                    if context is None:
                        context = contextvars.copy_context()
                    self._early.append((callback, context))
                    self._start_thread()
                    return
        loop.call_soon_threadsafe(callback, context=context)

    def _start_thread(self) -> _Start:
        """The current start of the thread, beginning one if none is under way (under
        `self._lock`); never waits for the loop."""
        if self._start is not None:
            return self._start
        start = _Start()
        # Not threading.Thread.start, which waits for the new thread to be scheduled.
        self._ident = start_daemon_thread(lambda: self._run(start), self._name)
        self._start = start
        return start

    def _run(self, start: _Start) -> None:
        self._thread = threading.current_thread()
        try:
            anyio.run(self._main, start, backend="asyncio")
        except BaseException as exc:  # reported to whoever waits for the loop, and logged
            start.failure = exc
        finally:
            with self._lock:
                if self._start is start:
                    # The next use starts a new thread, which runs the callbacks still queued.
                    self._portal = self._asyncio_loop = None
                    self._ident = self._thread = self._start = None
            start.ready.set()
        if start.failure is not None:
            _log.error(
                "background_loop_failed", loop=self._name, error_type=type(start.failure).__name__
            )

    async def _main(self, start: _Start) -> None:
        if self._courteous:
            start_giving_way()
        async with BlockingPortal() as portal:
            loop = asyncio.get_running_loop()
            loop.set_default_executor(_ThreadPerCall())
            self._stop = anyio.Event()
            with self._lock:
                # Under the lock, so that a callback handed over now goes after the early ones.
                for callback, context in self._early:
                    loop.call_soon(callback, context=context)
                self._early.clear()
                self._asyncio_loop, self._portal = loop, portal
            start.ready.set()
            await self._stop.wait()


class _Start:
    """One start of a loop's thread: `ready` is set once its loop runs, or it failed."""

    __slots__ = ("failure", "ready")

    def __init__(self) -> None:
        self.ready = threading.Event()
        self.failure: BaseException | None = None


class _ThreadPerCall(concurrent.futures.ThreadPoolExecutor):
    """The loop's default executor (asyncio sends `getaddrinfo` there): one daemon thread
    per call. The standard pool refuses work once interpreter shutdown has begun, which is
    exactly when the exit flush opens the judge's first connection. (asyncio insists on a
    ThreadPoolExecutor; none of the pool's own machinery is used.)"""

    def submit(
        self, fn: Callable[..., T], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # handed to the waiting coroutine
                future.set_exception(exc)

        threading.Thread(target=run, name="agentscore-executor", daemon=True).start()
        return future


async def _as_coroutine(func: Callable[[], Awaitable[object]]) -> object:
    return await func()


_loops: weakref.WeakSet[BackgroundLoop] = weakref.WeakSet()


def _reset_loops_in_child() -> None:
    for loop in list(_loops):
        loop._reset()


# A child of fork() has only the forking thread: every loop restarts on its first use there.
after_fork_in_child(_reset_loops_in_child)

# Scoring shares the host's GIL: it gives it back during long work.
background_loop = BackgroundLoop(courteous=True)
