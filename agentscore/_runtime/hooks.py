"""The process hooks: one after-fork hook and one exit hook for all of agentscore.

Each module that keeps threads or locks registers what to reset in a forked child (whose
copies of them belong to the parent) and what to finish at exit, here. The order is the
registration order after a fork, and the reverse of it at exit (what was started last, on top
of what was started first, stops first).
"""

from __future__ import annotations

import atexit
import math
import os
import threading
import time
from collections.abc import Callable

import structlog

__all__ = [
    "EXIT_TIMEOUT_ENV",
    "after_fork_in_child",
    "at_exit",
    "drain",
    "exit_deadline",
    "exit_flush_timeout",
    "flush_buffers",
    "on_drain",
    "on_flush",
]

_log = structlog.get_logger("agentscore._runtime")
_after_fork: list[Callable[[], None]] = []
_at_exit: list[Callable[[], None]] = []
_drains: list[Callable[[float], bool]] = []
_flushes: list[Callable[[float | None], bool]] = []
EXIT_TIMEOUT_ENV = "AGENTSCORE_EXIT_FLUSH_TIMEOUT"
_DEFAULT_EXIT_TIMEOUT = 5.0
_exit_deadline: float | None = None
_lock = threading.Lock()


def after_fork_in_child(reset: Callable[[], None]) -> None:
    """Call `reset()` in a forked child, before it runs anything else of agentscore's."""
    _after_fork.append(reset)


def at_exit(finish: Callable[[], None]) -> None:
    """Call `finish()` when the interpreter exits."""
    _at_exit.append(finish)


def on_drain(wait: Callable[[float], bool]) -> None:
    """Register `wait(timeout)`: waits up to `timeout` seconds for pending work of one kind
    (queued scores) and says whether it all finished. Exporters call `drain` before closing,
    so what is still being scored reaches them, whichever layer owns that work."""
    _drains.append(wait)


def drain(timeout: float) -> bool:
    """Wait for every registered kind of pending work, sharing one deadline."""
    deadline = time.monotonic() + timeout
    finished = True
    for wait in list(_drains):
        finished = wait(max(0.0, deadline - time.monotonic())) and finished
    return finished


def on_flush(flush: Callable[[float | None], bool]) -> None:
    """Register `flush(timeout)`: sends what was delivered and is still buffered (the batched
    posts of a score sink) and says whether it all went within `timeout` (None: no limit). A
    runner's `flush` calls `flush_buffers` once its jobs are done, so that what they
    delivered has left the process too, whichever layer buffers it."""
    _flushes.append(flush)


def flush_buffers(timeout: float | None) -> bool:
    """Flush every registered buffer, sharing one deadline."""
    deadline = None if timeout is None else time.monotonic() + timeout
    finished = True
    for flush in list(_flushes):
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        finished = flush(left) and finished
    return finished


def exit_flush_timeout() -> float:
    """Seconds pending scores get at interpreter exit: AGENTSCORE_EXIT_FLUSH_TIMEOUT, else 5."""
    raw = os.environ.get(EXIT_TIMEOUT_ENV, "")
    try:
        value = float(raw) if raw.strip() else _DEFAULT_EXIT_TIMEOUT
    except ValueError:
        value = -1.0
    if not 0.0 <= value < math.inf:
        _log.warning("invalid_exit_flush_timeout", value=raw[:40], used=_DEFAULT_EXIT_TIMEOUT)
        return _DEFAULT_EXIT_TIMEOUT
    return value


def exit_deadline() -> float:
    """The `time.monotonic()` by which every exit hook must be done: one budget for all of
    them, fixed when the first one asks."""
    global _exit_deadline
    with _lock:
        if _exit_deadline is None:
            _exit_deadline = time.monotonic() + exit_flush_timeout()
        return _exit_deadline


def _run_after_fork() -> None:
    global _exit_deadline, _lock
    _lock = threading.Lock()
    _exit_deadline = None
    for reset in _after_fork:
        try:
            reset()
        except Exception as exc:  # a child must start even if one reset fails
            _log.error("after_fork_reset_failed", hook=reset.__qualname__, error=type(exc).__name__)


@atexit.register
def _run_at_exit() -> None:
    for finish in reversed(_at_exit):
        try:
            finish()
        except Exception as exc:
            _log.error("exit_hook_failed", hook=finish.__qualname__, error=type(exc).__name__)


os.register_at_fork(after_in_child=_run_after_fork)
