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
from anyio.from_thread import BlockingPortal

from agentscore._runtime.courtesy import start_giving_way
from agentscore._runtime.hooks import after_fork_in_child

__all__ = ["SIGNAL_POLL", "BackgroundLoop", "background_loop", "wait_for_result"]

T = TypeVar("T")
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
        self._thread: threading.Thread | None = None
        self._stop: anyio.Event | None = None
        self._asyncio_loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[object]] = set()

    @property
    def thread(self) -> threading.Thread | None:
        return self._thread

    def portal(self) -> BlockingPortal:
        """The running loop's portal, starting the thread on first use."""
        portal = self._portal
        if portal is not None:
            return portal
        with self._lock:
            if self._portal is None:
                self._start()
            assert self._portal is not None
            return self._portal

    def in_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def call(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run `func(*args)` on the loop and wait for its result, from any other thread."""
        if self.in_loop_thread():
            raise RuntimeError(
                "blocking call made from agentscore's own background loop; await the async "
                "form instead"
            )
        return wait_for_result(self.portal().start_task_soon(func, *args))

    def call_soon(self, func: Callable[[], object]) -> None:
        """Schedule a quick sync callback on the loop from any thread, without waiting.

        Much cheaper than a portal round trip, which is why the runner wakes its dispatcher
        with it on the caller's hot path.
        """
        self.portal()
        assert self._asyncio_loop is not None
        self._asyncio_loop.call_soon_threadsafe(func)

    def spawn(self, func: Callable[[], Awaitable[object]]) -> None:
        """Start `func()` as a task on the loop from any thread, without waiting for it."""
        self.portal()
        loop = self._asyncio_loop
        assert loop is not None

        def start() -> None:
            task = loop.create_task(_as_coroutine(func))
            self._tasks.add(task)  # the loop keeps only weak references to tasks
            task.add_done_callback(self._tasks.discard)

        # A fresh context: the caller's (sniffio's "trio", say) must not reach our tasks.
        loop.call_soon_threadsafe(start, context=contextvars.Context())

    def _start(self) -> None:
        ready = threading.Event()
        failure: list[BaseException] = []

        async def main() -> None:
            if self._courteous:
                start_giving_way()
            async with BlockingPortal() as portal:
                self._asyncio_loop = asyncio.get_running_loop()
                self._asyncio_loop.set_default_executor(_ThreadPerCall())
                self._stop = anyio.Event()
                self._portal = portal
                ready.set()
                await self._stop.wait()

        def target() -> None:
            try:
                anyio.run(main, backend="asyncio")
            except BaseException as exc:  # surfaced to the starting thread below
                failure.append(exc)
                ready.set()
            finally:
                self._portal = None

        self._thread = threading.Thread(target=target, name=self._name, daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise RuntimeError("agentscore background loop failed to start") from failure[0]


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
