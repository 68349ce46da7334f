"""The offline local judge: deterministic, in-process, no network, no model download.

It answers the claim scorers' requests (extract, verify, analyze, reason) from their
structured payload with the rule-based grounding checks in `_grounding`, and answer and
context relevancy with a lexical approximation (`_relevance`); other tasks, and prompts
written for LLMs (custom `JudgePrompt` steps), are refused with `UnsupportedTaskError`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from agentscore.errors import UnsupportedTaskError
from agentscore.judges.base import JudgeReply, JudgeRequest, JudgeUsage
from agentscore.protocol.protocol import (
    AnalyzePayload,
    ClaimMode,
    ContextRelevancePayload,
    ExtractPayload,
    ReasonPayload,
    RelevancyPayload,
    VerifyPayload,
)
from agentscore.protocol.reason import compose_reason

__all__ = ["LocalJudge"]

T = TypeVar("T", bound=BaseModel)


class LocalJudge:
    """Rule-based grounding judge; see docs/local-judge.md for what it catches and misses.

    It reads contexts of up to `max_context_chars` characters (an LLM judge's prompt limits
    the claim scorers to 400,000): the context is prepared once, shared by every scorer
    judging the same context, and each claim reads only the lines that share a word or a
    number with it.
    """

    max_context_chars = 8_000_000

    @property
    def model_name(self) -> str:
        return "local"

    @property
    def provider_name(self) -> str:
        return "agentscore.local"

    def __repr__(self) -> str:
        return "LocalJudge()"

    async def complete(self, request: JudgeRequest[T]) -> JudgeReply[T]:
        started = time.perf_counter()
        data = self._answer(request)
        value = request.output_type.model_validate(data)
        if request.validate is not None:
            request.validate(value)
        # No request is sent: `calls` counts requests to a model, which budgets limit.
        usage = JudgeUsage(duration_ms=(time.perf_counter() - started) * 1000)
        return JudgeReply(value, usage)

    def _answer(self, request: JudgeRequest[Any]) -> dict[str, Any]:
        # Imported on first use: its tables cost import time that LLM-judge users never need.
        from agentscore.judges.local._grounding import split_claims
        from agentscore.judges.local._relevance import item_verdicts, statement_verdicts

        payload = request.payload
        if isinstance(payload, ExtractPayload):
            return {"claims": split_claims(payload.output)}
        if isinstance(payload, VerifyPayload):
            claims = split_claims(payload.output)
            return {"claims": _verdicts(claims, payload.context, payload.mode)}
        if isinstance(payload, AnalyzePayload):
            return {"verdicts": _verdicts(payload.claims, payload.context, payload.mode)}
        if isinstance(payload, ReasonPayload):
            reason = compose_reason(
                payload.mode,
                payload.score,
                payload.verdicts,
                unsure_counts_as_supported=payload.unsure_counts_as_supported,
            )
            return {"reason": reason}
        if isinstance(payload, RelevancyPayload):
            texts = split_claims(payload.output)
            return {"statements": statement_verdicts(texts, payload.question, payload.output)}
        if isinstance(payload, ContextRelevancePayload):
            return {"items": item_verdicts(payload.context, payload.question)}
        error = UnsupportedTaskError(
            f"the local judge cannot answer {request.task!r}; give this scorer an LLM judge "
            "(a model name or OpenAIJudge)"
        )
        error.usage = JudgeUsage()  # refused before any work: nothing to count
        raise error


def _verdicts(
    claims: Sequence[str], context: Sequence[str], mode: ClaimMode
) -> list[dict[str, Any]]:
    from agentscore.judges.local._grounding import check_claims

    return [
        {
            "claim": check.claim,
            "verdict": check.verdict,
            "reason": check.reason,
            "confidence": check.confidence,
            "decided_by": "local",
        }
        for check in check_claims(claims, context, mode=mode)
    ]
