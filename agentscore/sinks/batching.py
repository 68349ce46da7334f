"""Posts collected and sent together: a sink hands each item over at once, and one request
carries many.

A `Batcher` keeps what it is handed in a bounded buffer and sends it from a loop of its own
(the `agentscore-sinks` thread, not the scoring loop): up to `max_batch` items a request,
once the oldest waiting item is `interval` seconds old, or at once when `max_batch` are
waiting or a flush asks. A full buffer drops the new item (counted in `dropped`, logged at a
limited rate); a send that fails is its sender's to log. Neither reaches the caller.

A send that fails for a passing reason (the backend unreachable, 408, 429, 5xx) raises
`SendLater`: its batch goes back to the buffer, ahead of what came meanwhile, and is sent again
after a backoff (1 s doubling to 30 s) while the backend has been failing for less than
`retry_window` seconds: an outage of a minute delays the posts, it does not lose them. A
batch failing past the window, or with no room left in the buffer, is dropped, counted in
`dropped` and logged.

`flush()` waits until what was handed over is sent. Every batcher is flushed by a runner's
`flush()` and `shutdown()` (through `agentscore._runtime.hooks.flush_buffers`) and at
interpreter exit; `agentscore serve` flushes them when it stops.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

import anyio
import structlog

from agentscore._options import check_number
from agentscore._runtime.hooks import (
    after_fork_in_child,
    at_exit,
    exit_deadline,
    flush_buffers,
    on_flush,
)
from agentscore._runtime.loop import SIGNAL_POLL, BackgroundLoop
from agentscore.pipeline.retry import RetryPolicy

__all__ = ["Batcher", "SendLater", "flush_batchers"]

T = TypeVar("T")

_log = structlog.get_logger("agentscore.sinks")
_DROP_LOG_INTERVAL = 10.0
_sink_loop = BackgroundLoop("agentscore-sinks")
_BACKOFF = RetryPolicy(first_delay=1.0, max_delay=30.0, window=None)


class SendLater(Exception):
    """Raised by a send whose failure will likely pass: the batch is sent again later."""


class Batcher(Generic[T]):
    """Items for one endpoint, sent by `send(batch)` (awaited on the sinks' loop)."""

    def __init__(
        self,
        name: str,
        send: Callable[[list[T]], Awaitable[object]],
        *,
        max_batch: int = 100,
        interval: float = 1.0,
        max_buffer: int = 10_000,
        retry_window: float = 60.0,
    ) -> None:
        check_number("max_batch", max_batch, low=1, integer=True)
        check_number("interval", interval, low=0)
        check_number("max_buffer", max_buffer, low=1, integer=True)
        check_number("retry_window", retry_window, low=0)
        self.name = name
        self.max_batch = max_batch
        self.interval = interval
        self.max_buffer = max_buffer
        self.retry_window = retry_window
        self._send = send
        self._reset()
        _batchers.add(self)

    def _reset(self) -> None:
        # Also the state of a forked child: what the parent had buffered is the parent's to send.
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._buffer: dict[Hashable, T] = {}
        self._sending = 0
        self._running = False  # a sending task is on the loop: it ends when the buffer empties
        self._hurry = False  # a flush waits: send without waiting for the interval
        self._wake: anyio.Event | None = None
        self._dropped = 0
        self._drop_logged_at = -math.inf
        self._failures = 0  # sends in a row that failed for a passing reason
        self._failing_since = 0.0
        self._retry_at = 0.0

    @property
    def dropped(self) -> int:
        """Items refused because the buffer was full."""
        return self._dropped

    @property
    def pending(self) -> int:
        """Items handed over and not yet sent (waiting, or in a request under way)."""
        with self._lock:
            return len(self._buffer) + self._sending

    def add(self, item: T, key: Hashable | None = None) -> bool:
        """Hand `item` over; False when the buffer was full and it was dropped. An item whose
        `key` is still waiting is replaced by this one, in its place. Never blocks (beyond a
        lock held for a dict update) and never raises."""
        with self._lock:
            if key is not None and key in self._buffer:
                self._buffer[key] = item
                return True
            full = len(self._buffer) >= self.max_buffer
            if full:
                self._dropped += 1
                report = self._drop_report_due()
            else:
                self._buffer[object() if key is None else key] = item
                wake = len(self._buffer) == self.max_batch
        if full:
            if report:
                _log.warning(
                    "score_sink_dropped", sink=self.name, dropped=self.dropped, reason="buffer_full"
                )
            return False
        self._start_or_wake(wake)
        return True

    def _drop_report_due(self) -> bool:
        """Whether this drop is logged: the first one, then one in `_DROP_LOG_INTERVAL`."""
        now = time.monotonic()
        if now - self._drop_logged_at < _DROP_LOG_INTERVAL:
            return False
        self._drop_logged_at = now
        return True

    def _start_or_wake(self, wake: bool) -> None:
        """Start the sending task if none runs; else wake it when `wake` (a full batch, a
        flush), to send without waiting for the interval."""
        with self._lock:
            start = not self._running
            self._running = True
        try:
            if start:
                _sink_loop.spawn(self._run)
            elif wake:
                _sink_loop.call_soon(self._wake_up)
        except Exception as exc:  # the loop would not start: the next item tries again
            if start:
                with self._lock:
                    self._running = False
            _log.error("score_sink_failed", sink=self.name, error_type=type(exc).__name__)

    def flush(self, timeout: float | None = None) -> bool:
        """Send what is buffered now and wait for it (and whatever joins it meanwhile) to be
        sent; False if `timeout` (seconds) ran out first."""
        if _sink_loop.in_loop_thread():
            raise RuntimeError("flush() from the sinks' own loop would wait on itself")
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            if not self._buffer and not self._sending:
                return True
            self._hurry = True
        self._start_or_wake(True)
        with self._lock:
            while self._buffer or self._sending:
                left = SIGNAL_POLL if deadline is None else deadline - time.monotonic()
                if left <= 0:
                    return False
                # In slices: a wait without a timeout would keep Ctrl-C from the main thread.
                self._changed.wait(min(left, SIGNAL_POLL))
        return True

    def _wake_up(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _run(self) -> None:
        """Send batches until the buffer is empty, then end (the next item starts another)."""
        while True:
            now = time.monotonic()
            due = now + self.interval
            with self._lock:
                if not self._buffer:
                    self._running = self._hurry = False
                    self._changed.notify_all()
                    return
                ready = self._hurry or len(self._buffer) >= self.max_batch
                self._wake = wake = None if ready else anyio.Event()
            if self._retry_at > now:  # the backend failed: not before the backoff is over
                await anyio.sleep(self._retry_at - now)
            elif wake is not None:
                with anyio.move_on_after(max(0.0, due - time.monotonic())):
                    await wake.wait()
            with self._lock:
                self._wake = None
                keys = list(itertools.islice(self._buffer, self.max_batch))
                batch = [self._buffer.pop(key) for key in keys]
                self._sending = len(batch)
            try:
                await self._send(batch)
            except SendLater:
                self._later(keys, batch)
            except Exception as exc:  # a sender logs its own failures: this one is a bug
                self._failures = 0
                _log.error("score_sink_failed", sink=self.name, error_type=type(exc).__name__)
            else:
                self._failures, self._retry_at = 0, 0.0
            finally:
                with self._lock:
                    self._sending = 0
                    self._changed.notify_all()

    def _later(self, keys: list[Hashable], batch: list[T]) -> None:
        """Put a batch whose send will likely pass back in the buffer, ahead of what came
        meanwhile (an item whose key came again stays replaced), to be sent after a backoff;
        or drop it, counted, past the retry window or beyond the buffer's room."""
        now = time.monotonic()
        if self._failures == 0:
            self._failing_since = now
        self._failures += 1
        delay = _BACKOFF.delay(self._failures)
        with self._lock:
            back = {key: item for key, item in zip(keys, batch, strict=True)}
            back = {key: item for key, item in back.items() if key not in self._buffer}
            if now + delay - self._failing_since > self.retry_window:
                kept = 0
            else:
                kept = max(0, min(len(back), self.max_buffer - len(self._buffer)))
            self._buffer = {**dict(itertools.islice(back.items(), kept)), **self._buffer}
            lost = len(back) - kept
            self._dropped += lost
            self._retry_at = now + delay
        if lost:
            _log.warning(
                "score_sink_dropped",
                sink=self.name,
                dropped=lost,
                reason="backend_unavailable" if kept == 0 else "buffer_full",
            )


_batchers: weakref.WeakSet[Batcher[Any]] = weakref.WeakSet()


def flush_batchers(timeout: float | None) -> bool:
    """Flush every batcher in the process, sharing one deadline."""
    deadline = None if timeout is None else time.monotonic() + timeout
    finished = True
    for batcher in list(_batchers):
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        finished = batcher.flush(left) and finished
    return finished


def _reset_in_child() -> None:
    for batcher in list(_batchers):
        batcher._reset()


def _flush_at_exit() -> None:
    # A runner whose exit hook runs after this one flushes them again once its jobs are done.
    flush_buffers(max(0.0, exit_deadline() - time.monotonic()))


on_flush(flush_batchers)
after_fork_in_child(_reset_in_child)
at_exit(_flush_at_exit)
