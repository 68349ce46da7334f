"""A bounded in-memory cache of judge replies, keyed on everything that determines them."""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from threading import Lock
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json

from agentscore._options import check_number

__all__ = ["DEFAULT_MAX_BYTES", "ResponseCache", "cache_key"]

# 2048 typical replies take about 4 MB; the byte bound stops a few huge ones from taking more.
DEFAULT_MAX_BYTES = 16 * 2**20


def cache_key(model: str, temperature: float, system: str, prompt: str, schema: Any) -> str:
    material = json.dumps([model, temperature, system, prompt, schema], sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()


class ResponseCache:
    """Least-recently-used map from request key to a validated reply, bounded both by entries
    and by the total size of the replies' JSON. Thread-safe."""

    def __init__(self, max_entries: int = 2048, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        check_number("ResponseCache max_entries", max_entries, low=1, integer=True)
        check_number("ResponseCache max_bytes", max_bytes, low=1, integer=True)
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._entries: OrderedDict[str, tuple[BaseModel, int]] = OrderedDict()
        self._bytes = 0
        self._lock = Lock()

    def get(self, key: str) -> BaseModel | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: str, value: BaseModel) -> None:
        size = len(to_json(value))
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._bytes -= previous[1]
            if size > self._max_bytes:
                return  # keeping it would evict everything else
            self._entries[key] = (value, size)
            self._bytes += size
            while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._bytes -= evicted

    @property
    def nbytes(self) -> int:
        """The size of the cached replies' JSON, in bytes."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)
