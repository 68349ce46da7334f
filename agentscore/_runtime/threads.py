"""Starting a daemon thread from a caller's request without waiting for the thread to run.

`threading.Thread.start` waits until the new thread has been scheduled and has run its first
lines; on a machine with no core to spare, that is milliseconds of the caller's request (the
first `Evals.submit` of a process starts the scoring loop's thread). `start_daemon_thread`
returns once the thread exists; the thread still gets what `threading.Thread` gives it: its
name, an entry in `threading.enumerate()`, and the `threading.settrace` and
`threading.setprofile` hooks in force when it was started (coverage, profilers). Like a daemon
`threading.Thread`, it never holds up exit. It cannot be joined: its target says when it is
done.
"""

from __future__ import annotations

import _thread
import sys
import threading
from collections.abc import Callable

__all__ = ["start_daemon_thread"]


def start_daemon_thread(target: Callable[[], object], name: str) -> int:
    """Run `target()` in a new daemon thread called `name`; its identifier (what
    `threading.get_ident()` returns in it). Raises RuntimeError when no thread can start."""
    trace, profile = threading.gettrace(), threading.getprofile()

    def run() -> None:
        threading.current_thread().name = name
        if trace is not None:
            sys.settrace(trace)
        if profile is not None:
            sys.setprofile(profile)
        target()

    return _thread.start_new_thread(run, ())
