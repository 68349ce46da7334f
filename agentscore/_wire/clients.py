"""One client per event loop: an `AsyncOpenAI`, or an HTTP client of `agentscore._wire.http`.

The SDK's HTTP connection pool belongs to the loop that opened it; reusing it from another
loop fails ("Event loop is closed", or hangs). Agents and judges are called from the
caller's loop, from trio, and from agentscore's background loop, so each loop gets its own
client, created once and reused for every call on that loop, and closed on that loop when it
ends (`asyncio.run`, `trio.run`): left open, the SDK's finaliser would later schedule the
close on whatever loop runs then, which fails ("Task exception was never retrieved").
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncGenerator, Callable
from typing import Any, Generic, Protocol, TypeVar

from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

__all__ = [
    "LoopLocalClient",
    "create_chat_completion",
    "current_loop_token",
]


class Closable(Protocol):
    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=Closable)


class LoopLocalClient(Generic[ClientT]):
    def __init__(self, factory: Callable[[], ClientT], *, shared: ClientT | None = None) -> None:
        self._factory = factory
        self._shared = shared
        self._per_loop: weakref.WeakKeyDictionary[object, tuple[ClientT, AsyncGenerator[None]]] = (
            weakref.WeakKeyDictionary()
        )

    def get(self) -> ClientT:
        """The client for the running loop; a client the user passed in is used everywhere."""
        if self._shared is not None:
            return self._shared
        loop = current_loop_token()
        entry = self._per_loop.get(loop)
        if entry is None:
            client = self._factory()
            entry = self._per_loop[loop] = (client, _close_when_the_loop_ends(client))
        return entry[0]


async def _closing(client: Closable) -> AsyncGenerator[None]:
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            await client.close()


def _close_when_the_loop_ends(client: Closable) -> AsyncGenerator[None]:
    """An async generator, started on the running loop, whose exit closes `client`.

    Starting it registers it with the loop's async-generator hooks; asyncio (in
    `shutdown_asyncgens`, which `asyncio.run` calls) and trio (when `trio.run`'s main task is
    done) close every generator still open, on that loop. Kept referenced by the caller, so it
    is not closed earlier by garbage collection.
    """
    closer = _closing(client)
    first_step = closer.asend(None)  # the hooks see the generator here
    with contextlib.suppress(StopIteration):
        first_step.send(None)  # runs to the `yield` without suspending
    return closer


def current_loop_token() -> object:
    """An object identifying the running event loop (asyncio loop or trio token)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        import trio

        return trio.lowlevel.current_trio_token()


async def create_chat_completion(
    client: AsyncOpenAI, body: dict[str, Any], *, max_retries: int | None = None
) -> ChatCompletion:
    """POST /chat/completions with a body that is already in wire form.

    Same client, endpoint, retries and response model as `client.chat.completions.create`,
    without its per-call transform of typed parameters, which costs about a millisecond of
    CPU per request; on a busy process that CPU competes for the GIL with the agents.
    `max_retries` replaces the client's own for this call.
    """
    if max_retries is None:
        return await client.post("/chat/completions", body=body, cast_to=ChatCompletion)
    return await client.post(
        "/chat/completions",
        body=body,
        cast_to=ChatCompletion,
        options={"max_retries": max_retries},
    )
