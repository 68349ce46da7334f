"""What judging cost, on every result: requests, tokens, time, cache hits; and its price."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["JudgeUsage", "Price", "judge_cost"]


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


class Price(BaseModel):
    """What a judge model's tokens cost, per million, in the currency you bill in.

    agentscore ships no price table: prices change, and differ by contract and provider.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_million: float = Field(ge=0, allow_inf_nan=False)
    output_per_million: float = Field(ge=0, allow_inf_nan=False)


def judge_cost(usage: JudgeUsage, model: str | None, prices: Mapping[str, Price]) -> float | None:
    """What `usage` cost at the price of `model` (its exact name, a cascade's `local+MODEL`
    included); None when the model has no price, or when requests were sent and none
    reported its tokens (the cost is then unknown, and 0 would be a guess)."""
    price = prices.get(model) if model else None
    if price is None:
        return None
    if usage.calls and not (usage.input_tokens or usage.output_tokens):
        return None
    return (
        usage.input_tokens * price.input_per_million
        + usage.output_tokens * price.output_per_million
    ) / 1_000_000
