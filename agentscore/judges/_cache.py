"""A bounded in-memory cache of judge replies, keyed on everything that determines them."""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from threading import Lock
from typing import Any

from pydantic import BaseModel

from agentscore.errors import ConfigurationError

__all__ = ["ResponseCache", "cache_key"]


def cache_key(model: str, temperature: float, system: str, prompt: str, schema: Any) -> str:
    material = json.dumps([model, temperature, system, prompt, schema], sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()


class ResponseCache:
    """Least-recently-used map from request key to a validated reply. Thread-safe."""

    def __init__(self, max_entries: int = 2048) -> None:
        if max_entries < 1:
            raise ConfigurationError("ResponseCache max_entries must be at least 1")
        self._max_entries = max_entries
        self._entries: OrderedDict[str, BaseModel] = OrderedDict()
        self._lock = Lock()

    def get(self, key: str) -> BaseModel | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: str, value: BaseModel) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
