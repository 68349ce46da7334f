"""One JSON POST to a score API through `agentscore._wire.http`: every phase within the
sink's `timeout`, no redirect followed (a 3xx would take the key to the origin it names, and
a redirected POST stored nothing), the reply read up to a few kilobytes. A failure or a
status other than 2xx is logged (status or error type, never the key); one that will likely
pass (no answer, 408, 429, 5xx) raises `SendLater`, so that its batcher sends it again."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import structlog

from agentscore._wire.clients import LoopLocalClient
from agentscore._wire.http import Deadlines, HttpFailure, HttpReply, async_client, origin, post
from agentscore.sinks.batching import SendLater

__all__ = ["JsonPoster"]

_log = structlog.get_logger("agentscore.backends")
# What a score API answers is a few bytes of JSON; nothing more is read of it.
_MAX_REPLY_BYTES = 64 * 1024
# Statuses that say "not now" rather than "not this".
_PASSING = frozenset({408, 429})


class JsonPoster:
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._clients = LoopLocalClient(lambda: _Client(self._deadlines()))

    def _deadlines(self) -> Deadlines:
        timeout = self.timeout
        return Deadlines(connect=timeout, read=timeout, write=timeout, pool=timeout, total=timeout)

    async def post(self, url: str, payload: Any, headers: dict[str, str]) -> HttpReply | None:
        """The reply when it is a 2xx; else None, the failure logged; `SendLater` (logged
        too) when the failure will likely pass."""
        try:
            reply = await post(
                self._clients.get().http,
                url,
                content=json.dumps(payload).encode(),
                headers={"Content-Type": "application/json", **headers},
                deadlines=self._deadlines(),
                max_body=_MAX_REPLY_BYTES,
            )
        except HttpFailure as exc:
            cause = type(exc.__cause__ or exc).__name__
            _log.warning(
                "score_backend_unreachable", url=shown_url(url), error_type=cause, later=True
            )
            raise SendLater from None
        except Exception as exc:  # a URL the HTTP library refuses: logged, never raised
            _log.warning(
                "score_backend_unreachable", url=shown_url(url), error_type=type(exc).__name__
            )
            return None
        if not reply.ok:  # a 3xx included: it is not followed
            later = reply.status in _PASSING or reply.status >= 500
            _log.warning(
                "score_backend_rejected", url=shown_url(url), status=reply.status, later=later
            )
            if later:
                raise SendLater
            return None
        return reply


class _Client:
    """The HTTP client of one event loop, closed by `LoopLocalClient` when that loop ends."""

    def __init__(self, deadlines: Deadlines) -> None:
        self.http = async_client(deadlines, max_body=_MAX_REPLY_BYTES)

    async def close(self) -> None:
        await self.http.aclose()


def shown_url(url: str) -> str:
    """The endpoint without what may carry a credential (user info, query)."""
    try:
        path = urlsplit(url).path
    except ValueError:
        path = ""
    return origin(url) + path
