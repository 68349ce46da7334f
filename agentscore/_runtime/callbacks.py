"""Run user callbacks without stalling the shared scoring loop.

A sync `get_context`, filter, sink or step that blocks (a database call, `time.sleep`) would
hold the one loop every scorer shares: timeouts could not fire and every other score would
wait behind it. Sync callbacks therefore run in worker threads; a cancel scope around the
call (the scorer's timeout) abandons the thread instead of waiting for it. Async callbacks
are awaited on the loop: they promise not to block.

Python cannot stop a thread, so a callback that never returns keeps its thread for good.
Once `MAX_ABANDONED_CALLS` calls of one callback outlived their timeout and still run, its
next calls fail at once with `CallbackBacklogError` (a failed result, never a new thread),
so a hung database cannot grow the process to thousands of threads: at most that many
abandoned threads per callback, plus anyio's pool of live ones.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import anyio.to_thread

from agentscore._runtime.hooks import after_fork_in_child
from agentscore.errors import CallbackBacklogError

__all__ = ["MAX_ABANDONED_CALLS", "abandoned_callbacks", "call_user", "on_loop"]

MAX_ABANDONED_CALLS = 64

F = TypeVar("F", bound=Callable[..., Any])
_ON_LOOP = "_agentscore_on_loop"


def on_loop(func: F) -> F:
    """Mark library code that is quick and non-blocking, so it skips the thread hop."""
    setattr(func, _ON_LOOP, True)
    return func


async def call_user(func: Callable[..., Any], *args: Any) -> Any:
    """`func(*args)`, awaited if it returns an awaitable; sync code runs in a worker thread."""
    if getattr(func, _ON_LOOP, False) or _is_async(func):
        result = func(*args)
    else:
        call = _Call.start(func)
        try:
            result = await anyio.to_thread.run_sync(
                functools.partial(call.run, func, *args), abandon_on_cancel=True
            )
        finally:
            call.leave()
    if inspect.isawaitable(result):
        result = await result
    return result


def _is_async(func: Callable[..., Any]) -> bool:
    while isinstance(func, functools.partial):
        func = func.func
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 - an object with an async __call__
    )


def abandoned_callbacks() -> int:
    """Sync callbacks whose caller gave up (a timeout) and that still hold a thread."""
    with _Call.lock:
        return sum(_Call.abandoned.values())


class _Call:
    """One sync callback call in a worker thread, and whether its caller left it running.

    Only abandoned calls count against MAX_ABANDONED_CALLS, and per callback: live calls
    are bounded by the thread pool already, and one callback that hangs (a `get_context` on
    a dead database) must not stop the sinks or other scorers' callbacks. A call cancelled
    before its thread picked it up never runs (anyio skips it).
    """

    lock: ClassVar[threading.Lock] = threading.Lock()
    abandoned: ClassVar[dict[object, int]] = {}

    def __init__(self, key: object) -> None:
        self._key = key
        self._state = "waiting"  # -> "running" -> "done" | "abandoned" -> "done"

    @classmethod
    def start(cls, func: Callable[..., Any]) -> _Call:
        key = _key(func)
        with cls.lock:
            if cls.abandoned.get(key, 0) >= MAX_ABANDONED_CALLS:
                raise CallbackBacklogError(
                    f"{MAX_ABANDONED_CALLS} calls of "
                    f"{getattr(func, '__qualname__', type(func).__name__)} outlived their "
                    "timeout and are still running (it likely hangs); this one was not started"
                )
        return cls(key)

    def run(self, func: Callable[..., Any], *args: Any) -> Any:
        with _Call.lock:
            if self._state != "waiting":
                return None  # the caller has gone: do not start
            self._state = "running"
        try:
            return func(*args)
        finally:
            with _Call.lock:
                if self._state == "abandoned":
                    left = _Call.abandoned[self._key] - 1
                    if left:
                        _Call.abandoned[self._key] = left
                    else:
                        del _Call.abandoned[self._key]
                self._state = "done"

    def leave(self) -> None:
        """The caller is done waiting: a call still running from here on is abandoned."""
        with _Call.lock:
            if self._state == "running":
                self._state = "abandoned"
                _Call.abandoned[self._key] = _Call.abandoned.get(self._key, 0) + 1
            elif self._state == "waiting":
                self._state = "done"


def _key(func: Callable[..., Any]) -> object:
    # Bound methods compare equal per object; an unhashable callable counts by its type.
    while isinstance(func, functools.partial):
        func = func.func
    try:
        hash(func)
    except Exception:  # unhashable, or a __hash__ that raises
        return type(func)
    return func


def _reset_in_child() -> None:
    # A forked child has none of its parent's threads: nothing is running there.
    _Call.lock = threading.Lock()
    _Call.abandoned = {}


after_fork_in_child(_reset_in_child)
