"""Scoring in the host's interpreter gives the GIL back often enough that the host never waits
long for it.

Between callbacks, agentscore's loop polls for I/O, which lets a thread waiting on the GIL
take it. But a scoring run that never waits (faithfulness on the local judge: about 0.6 ms
of CPU) is a single callback, and the runs under way go one after another: an agent thread
woken meanwhile waits for all of them, or for CPython's switch interval (5 ms) to force a
switch. So on agentscore's own threads (the scoring loop, the span processor's reader),
`give_way` between the pieces of such work (a scorer's steps, the local judge's claims, a
result's telemetry and sinks, the spans the reader reads) ends every `GIL_SLICE` of the
thread's CPU time with a real sleep, which a waiting thread wins.
"""

from __future__ import annotations

import threading
import time

__all__ = ["GIL_SLICE", "give_way", "start_giving_way"]

# Seconds of an agentscore thread's CPU time between pauses (docs/benchmarks.md, "Giving the
# GIL back"). A host thread woken during scoring waits about this long at most, plus the
# longest piece of work with no `give_way`; a shorter slice costs busy scoring more pauses
# (each about 80 µs of waiting and 17 µs of CPU on Linux).
GIL_SLICE = 0.00025


class _LastPause(threading.local):
    # The thread's CPU time at its last pause; None on threads that are not agentscore's own
    # (the caller's, running its own loop perhaps): they never pause.
    at: float | None = None


_last_pause = _LastPause()


def start_giving_way() -> None:
    """Called once by a thread of agentscore's own: from now on, `give_way` on this thread
    pauses after every `GIL_SLICE` of its CPU time."""
    _last_pause.at = time.thread_time()


def give_way() -> None:
    """Between two pieces of scoring work: on a thread that gives way, once `GIL_SLICE` of its
    CPU time has gone by since its last pause, let a thread waiting on the GIL have it. On
    any other thread, nothing."""
    last = _last_pause.at
    if last is not None and time.thread_time() - last >= GIL_SLICE:
        # sleep(0) still blocks in the kernel (about 80 µs here): long enough for a thread
        # waiting on the GIL to take it.
        time.sleep(0)
        _last_pause.at = time.thread_time()
