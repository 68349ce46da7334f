"""One `AsyncOpenAI` client per event loop.

The SDK's HTTP connection pool belongs to the loop that opened it; reusing it from another
loop fails ("Event loop is closed", or hangs). Agents and judges are called from the
caller's loop, from trio, and from agentscore's background loop, so each loop gets its own
client, created once and reused for every call on that loop.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any

from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

__all__ = ["LoopLocalClient", "create_chat_completion", "current_loop_token"]


class LoopLocalClient:
    def __init__(
        self, factory: Callable[[], AsyncOpenAI], *, shared: AsyncOpenAI | None = None
    ) -> None:
        self._factory = factory
        self._shared = shared
        self._per_loop: weakref.WeakKeyDictionary[object, AsyncOpenAI] = weakref.WeakKeyDictionary()

    def get(self) -> AsyncOpenAI:
        """The client for the running loop; a client the user passed in is used everywhere."""
        if self._shared is not None:
            return self._shared
        loop = current_loop_token()
        client = self._per_loop.get(loop)
        if client is None:
            client = self._factory()
            self._per_loop[loop] = client
        return client


def current_loop_token() -> object:
    """An object identifying the running event loop (asyncio loop or trio token)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        import trio

        return trio.lowlevel.current_trio_token()


async def create_chat_completion(client: AsyncOpenAI, body: dict[str, Any]) -> ChatCompletion:
    """POST /chat/completions with a body that is already in wire form.

    Same client, endpoint, retries and response model as `client.chat.completions.create`,
    without its per-call transform of typed parameters, which costs about a millisecond of
    CPU per request; on a busy process that CPU competes for the GIL with the agents.
    """
    return await client.post("/chat/completions", body=body, cast_to=ChatCompletion)
