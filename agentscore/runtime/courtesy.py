"""Scoring in the host's interpreter gives the GIL back often enough that the host never waits
long for it.

A thread that wants the GIL while another holds it waits until the holder blocks for long
enough to be overtaken. The zero-timeout poll an event loop makes between callbacks is too
short for that: the waiter is woken, but the holder has taken the GIL back before the waiter
runs, and the waiter's switch-interval clock starts again. So an agent thread woken while
agentscore's loop works through scoring waits for all of the work that is ready (about
0.8 ms of CPU per faithfulness run on the local judge, times the runs under way), not for
one callback.

On a courteous loop's thread, every `GIL_SLICE` of CPU time without blocking ends in a real
sleep, which a waiting thread wins: between the loop's callbacks (`CourteousSelector`) and
between the pieces of a long callback (`give_way`, which scorers call between steps). The
span processor's reader thread gives way between the spans it reads.
"""

from __future__ import annotations

import asyncio
import selectors
import threading
import time

__all__ = ["GIL_SLICE", "CourteousSelector", "burst_starts", "courteous_event_loop", "give_way"]

# Seconds of an agentscore thread's CPU time between pauses (docs/benchmarks.md, "Giving the GIL
# back"). A host thread woken during scoring waits about this long at most, plus the longest
# piece of work with no pause point; a shorter slice costs busy scoring more pauses (each
# about 80 µs of waiting and 17 µs of CPU on Linux).
GIL_SLICE = 0.00025


class _BurstStart(threading.local):
    # Thread CPU time when this thread last waited or paused; None on threads that are not
    # agentscore's own (the caller's, with its own loop perhaps): they never pause.
    since: float | None = None


_burst = _BurstStart()


def burst_starts() -> None:
    """On a thread of agentscore's own that has just waited: its work starts again now, and
    `give_way` on this thread pauses after every `GIL_SLICE` of it."""
    _burst.since = time.thread_time()


def give_way() -> None:
    """Between two pieces of scoring work: on agentscore's own threads (the background loop,
    the span reader), once `GIL_SLICE` has run since the thread last waited, let a thread
    waiting on the GIL have it. On any other thread, nothing."""
    since = _burst.since
    if since is not None and time.thread_time() - since >= GIL_SLICE:
        # sleep(0) still blocks in the kernel (tens of µs): long enough for a thread
        # waiting on the GIL to take it, which a zero-timeout poll is not.
        time.sleep(0)
        _burst.since = time.thread_time()


class CourteousSelector(selectors.DefaultSelector):
    """The platform's default selector, giving way between callbacks. Create it on the loop's
    own thread (the loop factory runs there)."""

    def __init__(self) -> None:
        super().__init__()
        burst_starts()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        busy = timeout is not None and timeout <= 0  # callbacks are ready to run
        if busy:
            give_way()
        events = super().select(timeout)
        if not busy:  # the loop waited
            burst_starts()
        return events


def courteous_event_loop() -> asyncio.AbstractEventLoop:
    """An asyncio loop on a `CourteousSelector` (the background loop's `loop_factory`)."""
    return asyncio.SelectorEventLoop(CourteousSelector())
