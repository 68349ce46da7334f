"""A deadline on the wait for a reply's status line and headers, for `requests`.

`requests` (through http.client) bounds each socket read by the timeout, never the whole
wait: a backend sending its status line and headers a byte at a time, each byte in time,
holds the caller for as long as it likes (http.client reads up to 100 header lines of 64 KiB).
The connections this adapter makes shut their socket down when the headers have not all come
within the timeout (one thread keeps every deadline); the read waiting on it then ends at
once, as a read timeout. The body's wait is the caller's to bound (`OtlpSender` reads it
away within the timeout).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import socket
import threading
import time
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.response import BaseHTTPResponse

__all__ = ["HeaderDeadlineAdapter"]


class _Deadline:
    """Shuts `connection`'s socket down unless `done` is called before `at` (monotonic)."""

    def __init__(self, connection: HTTPConnection, at: float) -> None:
        self.at = at
        # Dropped when done: a deadline waits in the heap until it comes due, and need not
        # keep the connection (and its buffers) alive that long.
        self._connection: HTTPConnection | None = connection
        self._lock = threading.Lock()
        self.passed = False

    def cut(self) -> None:
        with self._lock:
            if self._connection is None or self._connection.sock is None:
                return
            self.passed = True
            with contextlib.suppress(OSError):  # already closed: the read has ended anyway
                self._connection.sock.shutdown(socket.SHUT_RDWR)

    def done(self) -> None:
        with self._lock:
            self._connection = None


class _Watchdog:
    """One thread for every connection's deadline (a timer thread per request cost 0.13 ms
    of CPU, a quarter of what `requests` spends on a POST). Deadlines done in time are
    dropped when they come due."""

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        """Start afresh: in a forked child, which has no watchdog thread (only the forking
        thread survives a fork) and may have a copy of the lock held."""
        self._due: list[tuple[float, int, _Deadline]] = []
        self._added = itertools.count()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, connection: HTTPConnection, seconds: float) -> _Deadline:
        deadline = _Deadline(connection, time.monotonic() + seconds)
        with self._changed:
            heapq.heappush(self._due, (deadline.at, next(self._added), deadline))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="agentscore-http-deadlines", daemon=True
                )
                self._thread.start()
            elif self._due[0][2] is deadline:
                self._changed.notify()
        return deadline

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._due or self._due[0][0] > time.monotonic():
                    self._changed.wait(self._due[0][0] - time.monotonic() if self._due else None)
                _, _, deadline = heapq.heappop(self._due)
            deadline.cut()


_watchdog = _Watchdog()
os.register_at_fork(after_in_child=_watchdog.forget)


def _response_within_timeout(connection: HTTPConnection) -> BaseHTTPResponse:
    timeout = connection.timeout
    if not isinstance(timeout, int | float) or timeout <= 0:
        return HTTPConnection.getresponse(connection)
    deadline = _watchdog.watch(connection, float(timeout))
    try:
        response = HTTPConnection.getresponse(connection)
    except OSError as exc:
        if deadline.passed:  # urllib3 turns a TimeoutError into its read timeout
            raise _too_late() from exc
        raise
    finally:
        deadline.done()
    if deadline.passed:
        # http.client takes the end of the stream for the end of the headers: what came
        # is a reply cut short, not the backend's answer.
        response.close()
        raise _too_late()
    return response


def _too_late() -> TimeoutError:
    return TimeoutError("no complete status line and headers within the timeout")


class _HTTPConnection(HTTPConnection):
    def getresponse(self) -> Any:  # an HTTPResponse, as urllib3's
        return _response_within_timeout(self)


class _HTTPSConnection(HTTPSConnection):
    def getresponse(self) -> Any:
        return _response_within_timeout(self)


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


_POOLS = {"http": _HTTPPool, "https": _HTTPSPool}


class HeaderDeadlineAdapter(HTTPAdapter):
    """An `HTTPAdapter` whose connections (direct, or through an HTTP proxy) wait at most
    the request's read timeout for a reply's status line and headers."""

    def init_poolmanager(
        self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any
    ) -> None:
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = _POOLS
        return manager
