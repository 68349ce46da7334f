"""The judge contract: a structured request in, a validated pydantic value and its cost out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict

from agentscore.claims.protocol import Payload

__all__ = ["Judge", "JudgeReply", "JudgeRequest", "JudgeUsage", "Validator"]

T = TypeVar("T", bound=BaseModel)
Validator = Callable[[T], None]


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


@dataclass(frozen=True, slots=True)
class JudgeRequest(Generic[T]):
    """One judgement to make.

    LLM judges send `system` and `prompt` and parse the reply into `output_type`; `validate`
    adds checks a schema cannot express (e.g. one verdict per claim) and raises `ValueError`.
    `payload` carries the same request as data (a model of `agentscore.claims.protocol`),
    for judges that do not read prompts (the local judge); `task` names it (`Task`), or is
    "custom:..." for a user's `JudgePrompt`, which has no payload.
    """

    task: str
    system: str
    prompt: str
    output_type: type[T]
    payload: Payload | None = None
    validate: Validator[T] | None = None


@dataclass(frozen=True, slots=True)
class JudgeReply(Generic[T]):
    value: T
    usage: JudgeUsage


@runtime_checkable
class Judge(Protocol):
    """Anything that can answer a `JudgeRequest`. Failures raise `agentscore.errors.JudgeError`."""

    @property
    def model_name(self) -> str: ...

    @property
    def provider_name(self) -> str: ...

    async def complete(self, request: JudgeRequest[T]) -> JudgeReply[T]: ...
