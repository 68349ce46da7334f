"""What judging cost, on every result: requests, tokens, time, cache hits."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["JudgeUsage"]


class JudgeUsage(BaseModel):
    """What judging cost: requests sent, tokens, wall time, and replies served from the cache."""

    model_config = ConfigDict(frozen=True)

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    duration_ms: float = 0.0
    cache_hits: int = 0

    def __add__(self, other: JudgeUsage) -> JudgeUsage:
        return JudgeUsage(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            duration_ms=self.duration_ms + other.duration_ms,
            cache_hits=self.cache_hits + other.cache_hits,
        )
