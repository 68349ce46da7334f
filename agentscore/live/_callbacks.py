"""Run user callbacks without stalling the shared scoring loop.

A sync `get_context`, filter, sink or step that blocks (a database call, `time.sleep`) would
hold the one loop every scorer shares: timeouts could not fire and every other score would
wait behind it. Sync callbacks therefore run in worker threads; a cancel scope around the
call (the scorer's timeout) abandons the thread instead of waiting for it. Async callbacks
are awaited on the loop: they promise not to block.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

__all__ = ["call_user", "on_loop"]

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
        result = await anyio.to_thread.run_sync(
            functools.partial(func, *args), abandon_on_cancel=True
        )
    if inspect.isawaitable(result):
        result = await result
    return result


def _is_async(func: Callable[..., Any]) -> bool:
    while isinstance(func, functools.partial):
        func = func.func
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 - an object with an async __call__
    )
