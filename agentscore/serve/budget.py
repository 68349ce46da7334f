"""The judge budget: requests and tokens per minute, shared by every scorer of the service.

Two token buckets refilled continuously. A job starts only while both hold something; what it
really cost (the judge usage on its result) is charged afterwards, so a bucket can go below
zero and then holds new jobs back until it has refilled. Work over budget waits on disk.

Requests are charged one at a time as the judge makes them, retries included (`acquire`, the
gate of `agentscore.judges.requests`): a judge answering 503 spends the budget as the
provider counts it. Tokens are known only afterwards and charged then.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import anyio

__all__ = ["JudgeBudget"]


class JudgeBudget:
    """`requests_per_minute` / `tokens_per_minute`: None means no limit on that one."""

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._limits = (requests_per_minute, tokens_per_minute)
        self._levels = [requests_per_minute or 0.0, tokens_per_minute or 0.0]
        self._clock = clock
        self._updated = clock()
        self._lock = threading.Lock()

    @property
    def limited(self) -> bool:
        return any(limit is not None for limit in self._limits)

    def available(self) -> bool:
        """True when a new job may start now."""
        with self._lock:
            self._refill()
            return all(
                limit is None or level >= 1.0
                for limit, level in zip(self._limits, self._levels, strict=True)
            )

    def wait_time(self) -> float:
        """Seconds until `available()` can next be true."""
        with self._lock:
            self._refill()
            waits = [
                (1.0 - level) * 60.0 / limit
                for limit, level in zip(self._limits, self._levels, strict=True)
                if limit is not None and level < 1.0
            ]
        return max(waits, default=0.0)

    async def acquire(self) -> None:
        """Charge one request now and wait until the budget has refilled to cover it, so
        concurrent requests queue up in order instead of all going when one token is back."""
        with self._lock:
            self._refill()
            self._levels[0] -= 1
            waits = [
                -level * 60.0 / limit if index == 0 else (1.0 - level) * 60.0 / limit
                for index, (limit, level) in enumerate(zip(self._limits, self._levels, strict=True))
                if limit is not None and level < (0.0 if index == 0 else 1.0)
            ]
        wait = max(waits, default=0.0)
        if wait > 0:
            await anyio.sleep(wait)

    def charge(self, requests: int, tokens: int) -> None:
        with self._lock:
            self._refill()
            self._levels[0] -= requests
            self._levels[1] -= tokens

    def _refill(self) -> None:
        now = self._clock()
        elapsed, self._updated = now - self._updated, now
        for index, limit in enumerate(self._limits):
            if limit is not None:
                self._levels[index] = min(limit, self._levels[index] + elapsed * limit / 60.0)
