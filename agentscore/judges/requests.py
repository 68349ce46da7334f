"""A gate every HTTP request to a model judge passes, retries included.

A request budget must count what the provider sees. The judge owns its retries and calls
`before_request()` before each attempt; whoever runs the judge (the service's worker, with its
`--requests-per-minute`) installs a gate for that context that waits for budget and charges it.
Without a gate, requests go out at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["RequestGate", "before_request", "gated_requests"]

RequestGate = Callable[[], Awaitable[None]]

_gate: ContextVar[RequestGate | None] = ContextVar("agentscore_request_gate", default=None)


@contextmanager
def gated_requests(gate: RequestGate) -> Iterator[None]:
    """Judge requests made in this context (and tasks it starts) pass `gate` first."""
    token = _gate.set(gate)
    try:
        yield
    finally:
        _gate.reset(token)


async def before_request() -> None:
    gate = _gate.get()
    if gate is not None:
        await gate()
