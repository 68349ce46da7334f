"""A bounded in-memory cache of judge replies, keyed on everything that determines them."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json

from agentscore._memo import RecentValues
from agentscore._options import check_number

__all__ = ["DEFAULT_MAX_BYTES", "ResponseCache", "cache_key"]

# The byte bound stops a few huge replies from taking the room of thousands of typical ones.
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
        self._replies: RecentValues[BaseModel] = RecentValues(entries=max_entries, size=max_bytes)

    def get(self, key: str) -> BaseModel | None:
        return self._replies.get(key)

    def put(self, key: str, value: BaseModel) -> None:
        self._replies.put(key, value, len(to_json(value)))

    @property
    def nbytes(self) -> int:
        """The size of the cached replies' JSON, in bytes."""
        return self._replies.total_size

    def __len__(self) -> int:
        return len(self._replies)
