"""The combined judge request of several scorers on one target (a generation, a trace or a
conversation), and its split.

Each scorer's request (a payload of the judge protocol) becomes a section of one prompt: the
data blocks (question, answer, each distinct context; a run's request and steps; a
conversation's turns) appear once, the answer's claims are extracted once at the top when
any section judges claims, and each section replies under its own key. A section is then
validated on its own, so a malformed one costs only its scorer a repair request (see
`repair_request`), never the others their verdicts.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field, WithJsonSchema, create_model

from agentscore.judges.base import JudgeRequest
from agentscore.protocol import prompts
from agentscore.protocol.protocol import (
    ClaimVerdicts,
    CompletenessPayload,
    ContextRelevancePayload,
    ConversationCompletenessPayload,
    ConversationRequests,
    CriterionScores,
    Goals,
    ItemVerdicts,
    KnowledgeRetentionPayload,
    Payload,
    RelevancyPayload,
    Requirements,
    RetentionVerdicts,
    RubricPayload,
    StatementVerdicts,
    Task,
    TaskCompletionPayload,
    VerifyPayload,
)

__all__ = ["Plan", "batchable", "plan", "repair_request"]

_BATCHABLE = (
    VerifyPayload,
    RelevancyPayload,
    CompletenessPayload,
    ContextRelevancePayload,
    RubricPayload,
    TaskCompletionPayload,
    KnowledgeRetentionPayload,
    ConversationCompletenessPayload,
)


def batchable(request: JudgeRequest[Any]) -> bool:
    """A request another scorer's can share: a built-in task, not a custom prompt."""
    return isinstance(request.payload, _BATCHABLE)


@dataclass(frozen=True, slots=True)
class _Section:
    key: str
    payload: Payload
    reply_type: type[BaseModel]
    instructions: str
    blocks: tuple[str, ...]  # labels of the data blocks it reads
    # What the section's key holds, for its schema: a reply model's own docstring names
    # the task it answers alone, which misleads here (a claim section replies per claim).
    description: str

    @property
    def on_claims(self) -> bool:
        return isinstance(self.payload, VerifyPayload | RelevancyPayload)


@dataclass(frozen=True, slots=True)
class Plan:
    """The combined request and how to read each scorer's reply back out of it."""

    request: JudgeRequest[BaseModel]
    sections: tuple[_Section, ...]
    data: dict[str, str]  # block label -> text

    def split(
        self, value: BaseModel, originals: Sequence[JudgeRequest[Any]]
    ) -> tuple[list[str], list[Any]]:
        """The shared claims, and each scorer's reply in its own request's type or the
        ValueError that sends its section to `repair_request`."""
        claims: list[str] = [claim.strip() for claim in getattr(value, "claims", None) or []]
        replies = [
            _read(section, getattr(value, section.key, None), claims, original)
            for section, original in zip(self.sections, originals, strict=True)
        ]
        return claims, replies

    def repaired(
        self, index: int, value: Any, claims: list[str], original: JudgeRequest[Any]
    ) -> Any:
        """The reply to `repair_request`, in the type of the scorer's own request."""
        return _read(self.sections[index], value, claims, original, raise_problem=True)


def plan(requests: Sequence[JudgeRequest[Any]]) -> Plan | None:
    """The combined request of `requests` (all `batchable`), or None when they cannot share
    one (they judge different answers, turns or trajectories)."""
    answers = {p.output for r in requests if isinstance(p := r.payload, _OUTPUT_TYPES)}
    turns = {p.turns for r in requests if isinstance(p := r.payload, _TURNS_TYPES)}
    runs = {
        (p.request, p.steps, p.answer)
        for r in requests
        if isinstance(p := r.payload, TaskCompletionPayload)
    }
    if len(answers) > 1 or len(turns) > 1 or len(runs) > 1:
        return None
    data: dict[str, str] = {}
    sections = tuple(
        _section(f"s{number}", request.payload, data)
        for number, request in enumerate(requests, start=1)
        if request.payload is not None
    )
    needs_claims = any(section.on_claims for section in sections)
    prompt = _prompt(sections, data, claims=None if needs_claims else ())
    output_type = _combined_type(
        needs_claims, tuple((s.reply_type, s.description) for s in sections)
    )
    request: JudgeRequest[BaseModel] = JudgeRequest(
        task=Task.COMBINED,
        system=prompts.EVALUATOR_SYSTEM,
        prompt=prompt,
        output_type=output_type,
        validate=_check_claims if needs_claims else None,
    )
    return Plan(request, sections, data)


def repair_request(
    plan: Plan, index: int, claims: Sequence[str], original: JudgeRequest[Any]
) -> JudgeRequest[Any]:
    """The one request that re-asks a malformed section alone: on the claims the combined
    reply extracted (so every scorer judges the same claims), or the scorer's own request."""
    section = plan.sections[index]
    if not section.on_claims:
        return original
    return JudgeRequest(
        task=original.task,
        system=original.system,
        prompt=_prompt((section,), plan.data, claims=claims),
        output_type=ItemVerdicts,
        payload=original.payload,
        validate=prompts.one_item_per(len(claims)),
    )


_OUTPUT_TYPES = (VerifyPayload, RelevancyPayload, CompletenessPayload, RubricPayload)
_TURNS_TYPES = (KnowledgeRetentionPayload, ConversationCompletenessPayload)


def _section(key: str, payload: Payload | None, data: dict[str, str]) -> _Section:
    def use(label: str, text: str) -> str:
        # One block per distinct text: two scorers with the same context share it.
        for known, existing in data.items():
            if existing == text and known.split()[0] == label:
                return known
        name = (
            label if label not in data else f"{label} {sum(k.startswith(label) for k in data) + 1}"
        )
        data[name] = text
        return name

    if isinstance(payload, VerifyPayload):
        answer = use("ANSWER", payload.output)
        context = use("CONTEXT", prompts.context_text(payload.context))
        rules = prompts.verdict_rules(payload.mode)
        text = (
            f"Judge each claim against {context} only, never against your own knowledge "
            f"(the rules' context is {context}). {rules}"
        )
        described = (
            f"{payload.mode.capitalize()}: exactly one entry per claim of `claims`, in their "
            f"order: whether {context} supports the claim, and why."
        )
        return _Section(key, payload, ItemVerdicts, text, (answer, context), described)
    if isinstance(payload, RelevancyPayload):
        question, answer = use("QUESTION", payload.question), use("ANSWER", payload.output)
        text = f"Judge each claim, as a statement of the ANSWER, against the {question}. "
        described = (
            "Answer relevancy: exactly one entry per claim of `claims`, in their order: "
            f"whether the claim, as a statement of {answer}, addresses the {question}, and why."
        )
        return _Section(
            key,
            payload,
            ItemVerdicts,
            text + prompts.RELEVANCY_RULES,
            (question, answer),
            described,
        )
    if isinstance(payload, CompletenessPayload):
        question, answer = use("QUESTION", payload.question), use("ANSWER", payload.output)
        described = (
            f"Completeness: each thing the {question} asks for, with whether {answer} covers it."
        )
        return _Section(
            key, payload, Requirements, prompts.COMPLETENESS_RULES, (question, answer), described
        )
    if isinstance(payload, ContextRelevancePayload):
        question = use("QUESTION", payload.question)
        context = use("CONTEXT", prompts.context_text(payload.context))
        text = prompts.CONTEXT_RELEVANCE_RULES.replace("CONTEXT item", f"item of {context}")
        text += f" Exactly {len(payload.context)} items."
        described = (
            f"Context relevance: exactly one entry per item of {context} "
            f"({len(payload.context)}), in their order: whether it bears on the {question}."
        )
        return _Section(key, payload, ItemVerdicts, text, (question, context), described)
    if isinstance(payload, RubricPayload):
        question, answer = use("QUESTION", payload.question), use("ANSWER", payload.output)
        criteria = use("CRITERIA", prompts.numbered(payload.criteria))
        text = prompts.rubric_rules(payload.points).replace("CRITERION", f"criterion of {criteria}")
        text += f" Exactly {len(payload.criteria)} entries."
        described = (
            f"Rubric: exactly one entry per criterion of {criteria} ({len(payload.criteria)}), "
            f"in their order: how well {answer} meets it, from 0 to {payload.points}."
        )
        return _Section(
            key, payload, CriterionScores, text, (question, answer, criteria), described
        )
    if isinstance(payload, TaskCompletionPayload):
        request = use("REQUEST", payload.request)
        steps = use("STEPS", prompts.numbered(payload.steps) or "(no steps)")
        answer = use("ANSWER", payload.answer or "(no answer)")
        text = (
            prompts.TASK_COMPLETION_RULES.replace("REQUEST", request)
            .replace("STEPS", steps)
            .replace("ANSWER", answer)
        )
        described = (
            f"Task completion: each thing the {request} asks the agent to get done, with "
            f"whether the {steps} and the {answer} got it done, and the numbers of the steps "
            f"of {steps} that show it."
        )
        return _Section(key, payload, Goals, text, (request, steps, answer), described)
    if isinstance(payload, KnowledgeRetentionPayload):
        turns = use("TURNS", prompts.turns_text(payload.turns))
        text = prompts.KNOWLEDGE_RETENTION_RULES.replace("TURNS", turns)
        text += f" Exactly {len(payload.turns)} answers."
        described = (
            f"Knowledge retention: the facts the user or the tools stated in {turns}, each "
            f"with its turn, and exactly one verdict per turn of {turns} "
            f"({len(payload.turns)}), in order: whether that turn's answer keeps, forgets or "
            "contradicts the facts stated up to it."
        )
        return _Section(key, payload, RetentionVerdicts, text, (turns,), described)
    if isinstance(payload, ConversationCompletenessPayload):
        turns = use("TURNS", prompts.turns_text(payload.turns))
        text = prompts.CONVERSATION_COMPLETENESS_RULES.replace("TURNS", turns)
        described = (
            f"Conversation completeness: each thing the user asked for across {turns}, with "
            "the turn where it was asked, whether an answer satisfies it, and the turn whose "
            "answer does."
        )
        return _Section(key, payload, ConversationRequests, text, (turns,), described)
    raise TypeError(f"not a batchable payload: {type(payload).__name__}")


def _prompt(
    sections: Sequence[_Section], data: dict[str, str], claims: Sequence[str] | None
) -> str:
    keys = ", ".join(f'"{section.key}"' for section in sections)
    if claims:  # a section re-asked alone, on the claims already extracted
        parts = ["Answer the section below; reply with its JSON object alone."]
    else:
        parts = [f"Answer each section below under its own key ({keys}) of one JSON object."]
    if claims is None:
        parts.append(
            'First, under "claims", split the ANSWER into claims (a list of strings). '
            + prompts.CLAIM_RULES
        )
    if any(section.on_claims for section in sections):
        parts.append(
            "A section on claims gives exactly one entry per claim, in the order of the claims."
        )
    for section in sections:
        parts.append(f'Section "{section.key}": {section.instructions}')
    used = {label for section in sections for label in section.blocks}
    parts.extend(prompts.block(label, text) for label, text in data.items() if label in used)
    if claims:
        parts.append(prompts.block("CLAIMS", prompts.numbered(claims)))
    return "\n\n".join(parts)


@functools.lru_cache(maxsize=256)
def _combined_type(
    needs_claims: bool, replies: tuple[tuple[type[BaseModel], str], ...]
) -> type[BaseModel]:
    """The reply model: `claims`, then one loosely parsed key per section (validated later,
    one by one) whose schema is still its section's, for structured output, described as
    the section's content. Cached per shape: the judges memoise schemas per type."""
    fields: dict[str, Any] = {}
    if needs_claims:
        fields["claims"] = (list[str], Field(description="The ANSWER's claims."))
    for number, (reply, description) in enumerate(replies, start=1):
        schema = {**_inline(reply.model_json_schema()), "description": description}
        fields[f"s{number}"] = (Annotated[Any, WithJsonSchema(schema)], None)
    model: type[BaseModel] = create_model("CombinedReply", **fields)
    return model


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its `$defs` references replaced by their definitions (one level of
    nesting inside another model's schema cannot point at a `$defs` of its own)."""
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(definitions[ref.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


def _check_claims(value: BaseModel) -> None:
    claims = getattr(value, "claims", [])
    if any(not isinstance(claim, str) or not claim.strip() for claim in claims):
        raise ValueError("every claim must be a non-empty string")


def _read(
    section: _Section,
    raw: Any,
    claims: list[str],
    original: JudgeRequest[Any],
    *,
    raise_problem: bool = False,
) -> Any:
    """The scorer's reply from its section, or the ValueError that makes it a repair."""
    try:
        if raw is None:
            raise ValueError(f'the reply has no section "{section.key}"')
        value = section.reply_type.model_validate(raw)
        reply = _as_original(section, value, claims, original)
        if original.validate is not None:
            original.validate(reply)
        return reply
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        if raise_problem:
            raise
        return exc


def _as_original(
    section: _Section, value: BaseModel, claims: list[str], original: JudgeRequest[Any]
) -> BaseModel:
    """A section's reply in the type the scorer's own request expects."""
    if not section.on_claims:
        return value
    assert isinstance(value, ItemVerdicts)
    if len(value.items) != len(claims):
        raise ValueError(
            f"expected exactly {len(claims)} entries, one per claim in order, "
            f"got {len(value.items)}"
        )
    if original.output_type is ClaimVerdicts:
        return ClaimVerdicts.model_validate(
            {
                "claims": [
                    {"claim": claim, "verdict": item.verdict, "reason": item.reason}
                    for claim, item in zip(claims, value.items, strict=True)
                ]
            }
        )
    return StatementVerdicts.model_validate(
        {
            "statements": [
                {"statement": claim, "verdict": item.verdict, "reason": item.reason}
                for claim, item in zip(claims, value.items, strict=True)
            ]
        }
    )
