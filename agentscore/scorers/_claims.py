"""The claim-verdict scorer shared by faithfulness and hallucination.

Default mode makes one judge call that returns the claims with their verdicts; the score is
computed here and the reason composed from the verdicts. `stepwise=True` reproduces Mastra's
flow instead: extract claims, analyze them, ask for a reason, each its own call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentscore._runtime.callbacks import call_user, on_loop
from agentscore.context import ContextParams, GetContext, found_context
from agentscore.errors import InputTooLargeError
from agentscore.judges.base import JudgeRequest
from agentscore.judges.resolve import JudgeLike
from agentscore.protocol import prompts
from agentscore.protocol.protocol import (
    AnalyzePayload,
    ClaimMode,
    Claims,
    ClaimVerdicts,
    ExtractPayload,
    Reason,
    ReasonPayload,
    Task,
    Verdict,
    VerdictItem,
    Verdicts,
    VerifyPayload,
)
from agentscore.protocol.reason import compose_reason
from agentscore.scorers.base import Score, Scorer, StepParams
from agentscore.scorers.options import CLAIM_OPTIONS, ClaimOptions, built_in

__all__ = ["build_claim_scorer", "checked_output", "resolve_context"]

_DESCRIPTIONS: dict[ClaimMode, str] = {
    "faithfulness": "Share of the output's claims supported by the context (higher is better).",
    "hallucination": "Share of the output's claims not grounded in the context (lower is better).",
}
MAX_OUTPUT_CHARS = 50_000
MAX_CONTEXT_CHARS = 400_000


@dataclass(frozen=True, slots=True)
class _Claims:
    """What the steps of one claim scorer read: its mode and its own options."""

    mode: ClaimMode
    context: Sequence[str] | None
    get_context: GetContext | None
    unsure_counts_as_supported: bool
    user_facts: bool


def build_claim_scorer(
    mode: ClaimMode,
    model: JudgeLike,
    options: ClaimOptions,
    *,
    id: str,
    threshold: float | None,
) -> Scorer:
    """A faithfulness or hallucination scorer; `threshold` is the factory's default pass line."""
    shared = built_in(options, threshold, known=CLAIM_OPTIONS)
    claims = _Claims(
        mode=mode,
        context=options.get("context"),
        get_context=options.get("get_context"),
        unsure_counts_as_supported=options.get("unsure_counts_as_supported", False),
        user_facts=options.get("user_facts", True),
    )
    stepwise = options.get("stepwise", False)
    steps = _StepwiseSteps(claims) if stepwise else _OneCallSteps(claims)
    return Scorer(
        id=id,
        description=_DESCRIPTIONS[mode],
        judge=model,
        preprocess=steps.preprocess,
        analyze=steps.analyze,
        generate_score=steps.generate_score,
        generate_reason=steps.generate_reason,
        higher_is_better=mode == "faithfulness",
        **shared,
    )


class _CommonSteps:
    def __init__(self, options: _Claims) -> None:
        self.options = options
        self.mode = options.mode

    @on_loop
    def generate_score(self, params: StepParams) -> Score:
        if params.state.get("no_context"):
            return Score(status="no_context")
        verdicts: list[VerdictItem] = params.state["verdicts"]
        if not verdicts:
            return Score(0.0, status="no_claims")
        counted = self._counted(verdicts)
        return Score(round(counted / len(verdicts) * params.scale, 2))

    def _counted(self, verdicts: Sequence[VerdictItem]) -> int:
        """Supported claims for faithfulness, hallucinated ones for hallucination."""
        lenient = self.options.unsure_counts_as_supported
        supported = sum(
            1
            for item in verdicts
            if item.verdict is Verdict.YES or (lenient and item.verdict is Verdict.UNSURE)
        )
        return supported if self.mode == "faithfulness" else len(verdicts) - supported

    def claims_shape(self, claims: list[str]) -> Any:
        # The seeds differ: faithfulness reports a list, hallucination an object.
        return claims if self.mode == "faithfulness" else {"claims": claims}

    async def resolve_context(self, params: StepParams, step: str) -> list[str]:
        options = self.options
        context = await resolve_context(
            params, options.context, options.get_context, step, user_facts=options.user_facts
        )
        params.state["context"] = context
        params.state["no_context"] = not context
        return context


class _OneCallSteps(_CommonSteps):
    async def preprocess(self, params: StepParams) -> Any:
        output = checked_output(params)
        if not output:
            params.state["verdicts"] = []
            return self.claims_shape([])
        context = await self.resolve_context(params, "analyze")
        if not context:
            return None  # nothing to judge against: no judge call
        reply = await params.ask(
            JudgeRequest(
                task=Task.VERIFY,
                system=prompts.system_prompt(self.mode),
                prompt=prompts.verify_prompt(self.mode, output, context),
                output_type=ClaimVerdicts,
                payload=VerifyPayload(mode=self.mode, output=output, context=tuple(context)),
                validate=_check_claim_texts,
            )
        )
        params.state["verdicts"] = [
            VerdictItem(
                claim=item.claim,
                verdict=item.verdict,
                reason=item.reason,
                confidence=item.confidence,
                decided_by=item.decided_by or params.judge.model_name,
            )
            for item in reply.claims
        ]
        return self.claims_shape([item.claim for item in reply.claims])

    @on_loop
    def analyze(self, params: StepParams) -> dict[str, Any] | None:
        if params.state.get("no_context"):
            return None
        return _verdicts_shape(params.state["verdicts"])

    @on_loop
    def generate_reason(self, params: StepParams) -> str:
        assert params.score is not None
        return compose_reason(
            self.mode,
            params.score,
            params.state["verdicts"],
            unsure_counts_as_supported=self.options.unsure_counts_as_supported,
        )


class _StepwiseSteps(_CommonSteps):
    async def preprocess(self, params: StepParams) -> Any:
        output = checked_output(params)
        claims: list[str] = []
        if output:
            reply = await params.ask(
                JudgeRequest(
                    task=Task.EXTRACT,
                    system=prompts.system_prompt(self.mode),
                    prompt=prompts.extract_prompt(output),
                    output_type=Claims,
                    payload=ExtractPayload(output=output),
                )
            )
            claims = [claim.strip() for claim in reply.claims if claim.strip()]
        params.state["claims"] = claims
        return self.claims_shape(claims)

    async def analyze(self, params: StepParams) -> dict[str, Any] | None:
        claims: list[str] = params.state["claims"]
        verdicts: list[VerdictItem] = []
        if claims:
            context = await self.resolve_context(params, "analyze")
            if not context:
                return None  # nothing to judge against: no verdict call
            reply = await params.ask(
                JudgeRequest(
                    task=Task.ANALYZE,
                    system=prompts.system_prompt(self.mode),
                    prompt=prompts.analyze_prompt(self.mode, claims, context),
                    output_type=Verdicts,
                    payload=AnalyzePayload(
                        mode=self.mode, claims=tuple(claims), context=tuple(context)
                    ),
                    validate=prompts.one_verdict_per_claim(len(claims)),
                )
            )
            # The claim text is ours, whatever the judge echoed back.
            verdicts = [
                item.model_copy(
                    update={
                        "claim": claim,
                        "decided_by": item.decided_by or params.judge.model_name,
                    }
                )
                for claim, item in zip(claims, reply.verdicts, strict=True)
            ]
        params.state["verdicts"] = verdicts
        return _verdicts_shape(verdicts)

    async def generate_reason(self, params: StepParams) -> str:
        assert params.score is not None
        verdicts: list[VerdictItem] = params.state["verdicts"]
        if not verdicts:
            return compose_reason(
                self.mode,
                params.score,
                verdicts,
                unsure_counts_as_supported=self.options.unsure_counts_as_supported,
            )
        await self.resolve_context(params, "generate_reason")
        reply = await params.ask(
            JudgeRequest(
                task=Task.REASON,
                system=prompts.system_prompt(self.mode),
                prompt=prompts.reason_prompt(
                    self.mode,
                    params.score,
                    params.scale,
                    [
                        item.model_dump(mode="json", include={"claim", "verdict", "reason"})
                        for item in verdicts
                    ],
                ),
                output_type=Reason,
                payload=ReasonPayload(
                    mode=self.mode,
                    score=params.score,
                    verdicts=tuple(verdicts),
                    unsure_counts_as_supported=self.options.unsure_counts_as_supported,
                ),
            )
        )
        return reply.reason


def checked_output(params: StepParams) -> str:
    """The run's answer, refused when it is too long to judge."""
    output = params.run.output_text.strip()
    if len(output) > MAX_OUTPUT_CHARS:
        raise InputTooLargeError(
            f"output has {len(output)} characters, more than the {MAX_OUTPUT_CHARS} this scorer "
            "judges; score a shorter output or split it"
        )
    return output


def _check_claim_texts(value: ClaimVerdicts) -> None:
    if any(not item.claim.strip() for item in value.claims):
        raise ValueError("every claim must be a non-empty string")


async def resolve_context(
    params: StepParams,
    context: Sequence[str] | None,
    get_context: GetContext | None,
    step: str,
    *,
    user_facts: bool,
) -> list[str]:
    """`get_context` wins over static `context`; with neither, the run's tool results and
    retrieved documents. Empty when none of them gives any."""
    raw: object
    if get_context is not None:
        request = ContextParams(
            run=params.run,
            step="generate_reason" if step == "generate_reason" else "analyze",
            results=dict(params.results),
            score=params.score,
        )
        # Off the loop: a slow sync get_context must not hold every other score.
        raw = await call_user(get_context, request)
    elif context is not None:
        raw = context
    else:
        raw = found_context(params.run)
    chunks = _as_chunks(raw)
    if not chunks:
        # No source gave any: the run ends as no_context. The user's own words alone are
        # not a source; against them every other claim would read as invented.
        return []
    if user_facts:
        chunks.extend(chunk for chunk in _user_facts(params) if chunk not in chunks)
    size = sum(len(chunk) for chunk in chunks)
    # A judge that reads the context itself instead of sending it in a prompt (the local
    # judge) says how much it reads.
    limit = getattr(params.judge, "max_context_chars", MAX_CONTEXT_CHARS)
    if size > limit:
        raise InputTooLargeError(
            f"context has {size} characters, more than the {limit} this scorer judges"
        )
    return chunks


_USER_SAID = "The user said: "
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
# Sentences starting so ask or request; they state no fact ("Tell me about ...").
_REQUESTS = (
    "tell show give list explain describe help find check please can could would will "
    "what where when who whom whose which why how is are do does did"
)
_REQUEST_WORDS = frozenset(_REQUESTS.split())


def _user_facts(params: StepParams) -> list[str]:
    """What the user stated in the run's input, as context: an answer that restates the
    user's own facts ("your shoes were delivered 45 days ago") is grounded in the
    conversation, not invented. Questions and requests state nothing and are left out;
    the label lets a judge read the rest as the user's word rather than as a record."""
    facts = (_statements(message.content) for message in params.run.input
             if message.role == "user" and message.content)  # fmt: skip
    return [_USER_SAID + fact for fact in facts if fact]


def _statements(text: str) -> str:
    kept = []
    for match in _SENTENCE.finditer(text):
        sentence = match.group().strip()
        first = sentence.split(maxsplit=1)[0].lower().strip(",;:") if sentence else ""
        if first and not sentence.endswith("?") and first not in _REQUEST_WORDS:
            kept.append(sentence)
        elif first:
            kept.extend(_presupposed(sentence))
    return " ".join(kept)


# A first-person clause hung on a noun inside a question states a fact the question takes as
# given: "Can I return shoes I received 45 days ago?" says the user received them then.
# Only after a content word: after "if", "whether", "that" or a verb the clause is asked.
_FIRST_PERSON = frozenset({"I", "we", "We"})
_CLAUSE_STOPS = frozenset({"and", "but", "or", "so", "because", "when", "while"})
_FUNCTION_WORDS = (
    "if whether that than when where why how and or but so because as to for of in on at "
    "with from by about the a an this these those my your our it they he she was were am be "
    "been being has have had can could will would shall should may might must do does did "
    "not still also just even"
)
_NOT_A_NOUN = _REQUEST_WORDS | frozenset(_FUNCTION_WORDS.split())
# "Did the package I ordered ship?": with do-support or a modal and a noun subject, the main
# verb comes after the subject's clause, so where that clause ends cannot be told; skip it.
_AUXILIARIES = "do does did can could will would shall should may might must has have had"
_VERB_LATER = frozenset(_AUXILIARIES.split())
_PRONOUNS = frozenset({"i", "you", "we", "they", "he", "she", "it"})


def _presupposed(question: str) -> list[str]:
    words = question.rstrip("?!. ").split()
    lowered = [word.lower() for word in words]
    start = 1 if lowered and lowered[0] in _REQUEST_WORDS - _VERB_LATER else 0
    subject_after_auxiliary = len(words) > start + 1 and lowered[start] in _VERB_LATER
    if subject_after_auxiliary and lowered[start + 1] not in _PRONOUNS:
        return []
    facts = []
    for index in range(1, len(words)):
        noun = words[index - 1]
        if words[index] not in _FIRST_PERSON or noun.lower() in _NOT_A_NOUN:
            continue
        if not noun.isalpha():
            continue
        clause: list[str] = []
        for word in words[index:]:
            if word.lower() in _CLAUSE_STOPS:
                break
            clause.append(word.rstrip(",;:"))
            if word.endswith((",", ";", ":")):
                break
        if len(clause) >= 3:  # a verb and what it says, not a bare "I do"
            facts.append(f"{noun} {' '.join(clause)}.")
    return facts


def _as_chunks(raw: object) -> list[str]:
    """Context as a list of strings; other values (tool results are often dicts) become JSON."""
    if raw is None:
        return []
    if isinstance(raw, str):
        return [raw] if raw.strip() else []
    if not isinstance(raw, Sequence):
        raise TypeError(f"get_context must return a list of strings, got {type(raw).__name__}")
    chunks: list[str] = []
    for item in raw:
        text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False, default=str)
        if text.strip():
            chunks.append(text)
    return chunks


def _verdicts_shape(verdicts: Sequence[VerdictItem]) -> dict[str, Any]:
    # exclude_none: a judge that reports no confidence leaves the seeds' shape unchanged.
    return {"verdicts": [item.model_dump(mode="json", exclude_none=True) for item in verdicts]}
