"""Scoring in the host's interpreter runs in the time the host leaves: it gives the GIL back
often, and stays out while the host is at work.

Between callbacks, agentscore's loop polls for I/O, which lets a thread waiting on the GIL
take it. But a scoring run that never waits (faithfulness on the local judge: about 0.6 ms
of CPU) is a single callback, and the runs under way go one after another: an agent thread
woken meanwhile waits for all of them, or for CPython's switch interval (5 ms) to force a
switch. So on agentscore's own threads (the scoring loop, the span processor's reader),
`give_way` between the pieces of such work (a scorer's steps, the local judge's claims, a
result's telemetry and sinks, the spans the reader reads) ends every slice of the thread's
CPU time with a pause: `GIL_SLICE`, or what `gil_slice` sets for a task (a runner's
`gil_slice` option, for its jobs).

A pause is a real sleep, which a thread waiting on the GIL wins. If the process's other
threads then kept a core busy for most of the pause, the host is in the middle of its own
work (a request handing off between its threads, each hand-off a moment when scoring could
take the GIL back): the pause goes on, in short sleeps, until they let go or `LONGEST_PAUSE`
has passed. A host that waits on a model most of the time (a live agent) barely slows
scoring; a host that computes (docs/benchmarks.md, "Staying out while the host works")
gets its requests through with no slice of scoring between their steps.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = [
    "GIL_SLICE",
    "HOST_BUSY_SHARE",
    "LONGEST_PAUSE",
    "gil_slice",
    "give_way",
    "start_giving_way",
]

# The default seconds of an agentscore thread's CPU time between pauses (docs/benchmarks.md,
# "Waiting for the GIL"). A host thread woken during scoring waits about this long at most,
# plus the longest piece of work with no `give_way`; a shorter slice costs busy scoring more
# pauses, each a wait in the kernel and some CPU.
GIL_SLICE = 0.00025

# Wall seconds a pause lasts at most, however busy the host: so scoring goes on (one slice in
# every LONGEST_PAUSE at worst) beside a host that never rests, and its queue still drains.
LONGEST_PAUSE = 0.005

# The host is at work when its threads used this share of a core during the pause or more.
HOST_BUSY_SHARE = 0.5

# One sleep while the host is at work: how soon after it lets go scoring comes back.
_RECHECK = 0.0005


class _LastPause(threading.local):
    # The thread's CPU time at its last pause; None on threads that are not agentscore's own
    # (the caller's, running its own loop perhaps): they never pause.
    at: float | None = None


_last_pause = _LastPause()
# A task's own slice (None: GIL_SLICE). A context variable, not a setting of the thread: the
# runners that share agentscore's loop thread may each have their own.
_slice: ContextVar[float | None] = ContextVar("agentscore_gil_slice", default=None)


@contextmanager
def gil_slice(seconds: float) -> Iterator[None]:
    """Within this block (and the tasks it starts), `give_way` pauses after every `seconds`
    of the thread's CPU time instead of `GIL_SLICE`; infinite: it never pauses."""
    token = _slice.set(seconds)
    try:
        yield
    finally:
        _slice.reset(token)


def start_giving_way() -> None:
    """Called once by a thread of agentscore's own: from now on, `give_way` on this thread
    pauses after every slice of its CPU time."""
    _last_pause.at = time.thread_time()


def give_way() -> None:
    """Between two pieces of scoring work: on a thread that gives way, once a slice of its CPU
    time has gone by since its last pause, pause while the host works. On any other thread,
    nothing."""
    last = _last_pause.at
    if last is None:
        return
    limit = _slice.get()
    if time.thread_time() - last >= (GIL_SLICE if limit is None else limit):
        _last_pause.at = _pause()


def _pause() -> float:
    """Pauses while the host works; returns the thread's CPU time at the end."""
    # sleep(0) still blocks in the kernel: long enough for a thread waiting on the GIL to take
    # it. Its CPU from then on is the process's less this thread's.
    started = now = time.perf_counter()
    sleep = 0.0
    while True:
        process, own = time.process_time(), time.thread_time()
        time.sleep(sleep)
        at, now = now, time.perf_counter()
        own_after = time.thread_time()
        others = time.process_time() - process - (own_after - own)
        if others < HOST_BUSY_SHARE * (now - at) or now - started >= LONGEST_PAUSE:
            return own_after
        sleep = min(_RECHECK, started + LONGEST_PAUSE - now)
