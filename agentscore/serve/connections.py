"""Connections: a header read timeout, a cap on open connections per port, and the file limit
for them (both ports' connections share one descriptor table).

uvicorn bounds neither the time a client takes to send a request's headers nor how many
connections stay open (its `limit_concurrency` acts only once headers are complete, so
half-sent requests pass it), and each open connection holds a file descriptor. Here every
connection must finish its headers within `header_timeout` seconds (also on a kept-alive
connection's next request) or gets 408; past `max_connections`, the oldest connection that
still owes us bytes is closed with 503 to make room, so a flood of half-sent requests cannot
keep a fresh client out. The body's own timeout is the app's (`ServeApp`).
"""

from __future__ import annotations

import asyncio
import resource
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["ConnectionLimits", "connection_limits", "guarded_protocol"]

# Descriptors the service needs besides client connections: SQLite (database, WAL, shm),
# the listening socket, exporters' and the judge's connections, log files.
_FILES_RESERVED = 64
# asyncio accepts up to `backlog` sockets a loop tick before their protocols run (and the
# ones those evict close a tick later), so for a moment the open sockets can exceed the cap
# by a few backlogs. That must fit the descriptor limit: asyncio's accept loop retries every
# EMFILE in a burst, one logged traceback each, and fresh clients wait meanwhile.
_BACKLOGS_IN_FLIGHT = 3

_TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
_EVICTED = (
    b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\nconnection: close\r\n"
    b"content-length: 0\r\n\r\n"
)


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    http: int  # connections open on the HTTP port at most
    backlog: int  # its listen backlog
    grpc: int  # connections open on the gRPC port at most (0 without it)


def connection_limits(max_connections: int, *, grpc: bool) -> ConnectionLimits:
    """Per-port connection caps and the HTTP backlog that fit the descriptor limit together,
    raised first if it can be; fewer connections than asked when it cannot (the two ports
    then share what there is alike). gRPC closes a connection past its cap as soon as it
    has accepted it, so its cap is all it needs."""
    ports = 2 if grpc else 1
    backlog = min(max(max_connections // 8, 16), 2048)
    wanted = ports * max_connections + _FILES_RESERVED + _BACKLOGS_IN_FLIGHT * backlog
    room = _raise_file_limit(wanted) - _FILES_RESERVED
    each = max_connections
    if room < ports * max_connections + _BACKLOGS_IN_FLIGHT * backlog:
        backlog = max(16, min(backlog, room // 8))
        each = max(1, (room - _BACKLOGS_IN_FLIGHT * backlog) // ports)
    return ConnectionLimits(http=each, backlog=backlog, grpc=each if grpc else 0)


def _raise_file_limit(wanted: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return int(soft)


def guarded_protocol(*, max_connections: int, header_timeout: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the two bounds above (`uvicorn.Config(http=...)`)."""

    class GuardedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._opened = 0.0
            self._header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._opened = self.loop.time()
            self._arm_header_timer()
            if len(self.connections) > max_connections:
                waiting = [
                    c
                    for c in self.connections
                    if isinstance(c, GuardedH11Protocol) and c is not self and c._owes_bytes()
                ]
                victim = min(waiting, key=lambda c: c._opened, default=self)
                victim._close_with(_EVICTED)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm_header_timer()  # the next request's headers have the same deadline

        def _arm_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
            self._header_timer = self.loop.call_later(header_timeout, self._headers_overdue)

        def _headers_overdue(self) -> None:
            if self.conn.their_state is h11.IDLE and self.conn.our_state is h11.IDLE:
                self._close_with(_TIMED_OUT)

        def _owes_bytes(self) -> bool:
            # Still sending its request (headers or body), not answered, not already closing.
            return (
                self.conn.their_state in (h11.IDLE, h11.SEND_BODY)
                and self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE)
                and not self.transport.is_closing()
            )

        def _close_with(self, reply: bytes) -> None:
            if not self.transport.is_closing():
                self.transport.write(reply)
                self.transport.close()

    return GuardedH11Protocol
