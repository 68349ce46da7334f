"""The judge contract: a structured request in, a validated pydantic value and its cost out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from agentscore.protocol.protocol import Payload
from agentscore.usage import JudgeUsage

__all__ = ["Judge", "JudgeReply", "JudgeRequest", "JudgeUsage", "Validator"]

T = TypeVar("T", bound=BaseModel)
Validator = Callable[[T], None]


@dataclass(frozen=True, slots=True)
class JudgeRequest(Generic[T]):
    """One judgement to make.

    LLM judges send `system` and `prompt` and parse the reply into `output_type`; `validate`
    adds checks a schema cannot express (e.g. one verdict per claim) and raises `ValueError`.
    `payload` carries the same request as data (a model of `agentscore.protocol.protocol`),
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
