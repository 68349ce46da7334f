"""`agentscore eval --estimate`: what a run would send the judge, counted before anything is.

The targets go through the same path as a run (the run each level of scorer judges, the
pipeline's composition, each scorer's prompt builders and the shared-request planner), with a judge
that keeps the body of each request it is asked instead of sending it. So the requests
counted are the ones the run would send: one per record for scorers that share a request,
none for a record a scorer has no context for.

Token rule (documented in docs/quickstart.md):
- input: the characters of every message of the body, and of the JSON schema sent with it
  (structured output), divided by 4, rounded up. agentscore does not use tiktoken: it
  downloads its vocabularies on first use, and an estimate sends nothing anywhere.
- output: the reply the request asks for, written out as JSON and counted the same way:
  each claim restated (the claims are the answer split as the local judge splits it), and
  for each verdict `"yes"` and a reason: a sentence about the claim, its length plus
  `CLAIM_REASON_EXTRA` characters (judges restate the claim: "The context states that ...");
  an entry that judges no claim (a context item, a criterion) gets `REASON_CHARS`.
Repair requests (an invalid reply re-asked) and retries are not in the estimate; identical
requests are counted once, as the judge's response cache answers the repeats.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import structlog
from pydantic import BaseModel

from agentscore._runtime.loop import background_loop
from agentscore.ci._table import render_table
from agentscore.errors import ConfigurationError, JudgeRequestError
from agentscore.judges.base import Judge, JudgeReply, JudgeRequest, JudgeUsage
from agentscore.judges.local import LocalJudge
from agentscore.judges.openai import OpenAIJudge
from agentscore.pipeline.generation import Generation, Scoring, score_generation
from agentscore.protocol.protocol import (
    AnalyzePayload,
    Claims,
    ClaimVerdicts,
    CompletenessPayload,
    ContextRelevancePayload,
    CriterionScores,
    ExtractPayload,
    ItemVerdicts,
    Payload,
    Reason,
    RelevancyPayload,
    Requirements,
    RubricPayload,
    StatementVerdicts,
    Task,
    ToolChoicePayload,
    Verdicts,
    VerifyPayload,
)
from agentscore.run import Level, ScorerRun
from agentscore.scorers.base import Scorer
from agentscore.telemetry.core import prices_from_env

__all__ = [
    "CHARS_PER_TOKEN",
    "REASON_CHARS",
    "Estimate",
    "PlanningJudge",
    "estimate_records",
    "print_estimate",
]

T = TypeVar("T", bound=BaseModel)

CHARS_PER_TOKEN = 4
REASON_CHARS = 80
CLAIM_REASON_EXTRA = 40
_REASON = "r" * REASON_CHARS
# Sections of a shared request whose entries follow the claims extracted once at its top.
_ON_CLAIMS = (VerifyPayload, RelevancyPayload)
_SHAREABLE = (
    VerifyPayload,
    RelevancyPayload,
    CompletenessPayload,
    ContextRelevancePayload,
    RubricPayload,
)


def count_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def body_tokens(body: Mapping[str, Any]) -> int:
    """The input tokens of a chat completion request body, by the rule above."""
    chars = sum(len(str(message.get("content") or "")) for message in body["messages"])
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
    if schema is not None:
        chars += len(json.dumps(schema))
    return math.ceil(chars / CHARS_PER_TOKEN)


class PlanningJudge(OpenAIJudge):
    """An OpenAI-compatible judge that sends nothing: it keeps the body of each request it is
    asked (`planned`) and fails it. Being an `OpenAIJudge` of the run's model, it shares
    requests exactly as the run's judge would."""

    def __init__(self, model: str) -> None:
        super().__init__(model, use_cache=False)
        self.planned: list[tuple[str, dict[str, Any]]] = []

    async def complete(self, request: JudgeRequest[T]) -> JudgeReply[T]:
        self.planned.append((request.task, self.request_body(request)))
        raise _not_sent()


class _FirstRequest:
    """Keeps the first request a scorer asks alone (its payload says what the reply holds)."""

    model_name = "estimate"
    provider_name = "agentscore.estimate"

    def __init__(self) -> None:
        self.request: JudgeRequest[Any] | None = None

    async def complete(self, request: JudgeRequest[T]) -> JudgeReply[T]:
        self.request = self.request or request
        raise _not_sent()


def _not_sent() -> JudgeRequestError:
    error = JudgeRequestError("not sent: estimating")
    error.usage = JudgeUsage()
    return error


@dataclass(slots=True)
class Estimate:
    records: int = 0
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    _seen: set[str] = field(default_factory=set)

    def cost(self, price: tuple[float, float] | None) -> float | None:
        if price is None:
            return None
        return (self.input_tokens * price[0] + self.output_tokens * price[1]) / 1_000_000

    def render(self, model: str, price: tuple[float, float] | None, upper_bound: bool) -> str:
        cost = self.cost(price)
        table = render_table(
            ["judge requests", "input tokens", "output tokens", "cost"],
            [
                [
                    f"{self.requests:,}",
                    f"{self.input_tokens:,}",
                    f"{self.output_tokens:,}",
                    "-" if cost is None else f"{cost:,.6f}",
                ]
            ],
        )
        lines = [
            f"estimate for {self.records:,} records, judge {model} (nothing was sent):",
            table,
            f"tokens: characters / {CHARS_PER_TOKEN}; output: each claim restated, with a "
            f"verdict and a reason {CLAIM_REASON_EXTRA} characters longer than the claim; "
            "repairs and retries not included",
        ]
        if upper_bound:
            lines.append("a cascade: an upper bound (its local stage decides some claims alone)")
        if cost is None:
            lines.append("cost: give --judge-price IN,OUT or AGENTSCORE_JUDGE_PRICES")
        return "\n".join(lines)


def print_estimate(
    items: Sequence[Mapping[Level, ScorerRun]],
    model: str,
    build: Callable[[Judge], list[Scorer]],
    price: tuple[float, float] | None,
) -> int:
    """Print what scoring `items` (targets: the run each level of scorer judges) would send
    `model`, with the scorers `build` makes for a judge; the exit status (2 when the scorers
    cannot be built)."""
    cascade = model.startswith("local+")
    if price is None and model in prices_from_env():
        known = prices_from_env()[model]
        price = (known.input_per_million, known.output_per_million)
    try:
        if model == "local":
            build(LocalJudge())  # the same refusals as a run (completeness needs an LLM)
            print(Estimate(records=len(items)).render(model, price or (0.0, 0.0), False))
            return 0
        judge = PlanningJudge(model.removeprefix("local+"))
        scorers = build(judge)
    except ConfigurationError as exc:
        print(f"agentscore eval: {exc}", file=sys.stderr)
        return 2
    print(estimate_records(items, scorers, judge).render(model, price, cascade))
    return 0


def estimate_records(
    items: Sequence[Mapping[Level, ScorerRun]], scorers: Sequence[Scorer], judge: PlanningJudge
) -> Estimate:
    """What scoring `items` with `scorers` (whose LLM judge is `judge`) would send."""

    async def run() -> Estimate:
        found = Estimate(records=len(items))
        for item in items:
            for level, run in item.items():
                chosen = [scorer for scorer in scorers if scorer.level == level]
                if chosen:
                    await _estimate_run(run, chosen, judge, found)
        return found

    with _quiet():
        return background_loop.call(run)


@contextmanager
def _quiet() -> Iterator[None]:
    """No warning per record for the requests not sent, nor for records without context
    (the run itself says that)."""
    processors = structlog.get_config()["processors"]

    def drop(_logger: object, _method: str, event: MutableMapping[str, Any]) -> Any:
        if event.get("event") in ("scorer_failed", "scorer_has_no_context"):
            raise structlog.DropEvent
        return event

    structlog.configure(processors=[drop, *processors])
    try:
        yield
    finally:
        structlog.configure(processors=processors)


async def _estimate_run(
    run: ScorerRun, scorers: Sequence[Scorer], judge: PlanningJudge, found: Estimate
) -> None:
    judge.planned.clear()
    await score_generation(Generation.of(scorers), run, Scoring())
    planned, judge.planned = list(judge.planned), []
    if not planned:
        return
    originals = [await _first_request(scorer, run) for scorer in scorers]
    payloads = [r.payload for r in originals if r is not None and r.payload is not None]
    shared = [p for p in payloads if isinstance(p, _SHAREABLE)]
    for task, body in planned:
        key = json.dumps(body, sort_keys=True)
        if key in found._seen:  # the response cache answers a repeat
            continue
        found._seen.add(key)
        found.requests += 1
        found.input_tokens += body_tokens(body)
        if task == Task.COMBINED:
            reply = await _combined_reply(shared)
        else:
            request = next((r for r in originals if r is not None and r.task == task), None)
            reply = await _own_reply(request) if request is not None else {}
        found.output_tokens += count_tokens(json.dumps(reply))


async def _first_request(scorer: Scorer, run: ScorerRun) -> JudgeRequest[Any] | None:
    recorder = _FirstRequest()
    await scorer.run(run, judge=recorder)
    return recorder.request


async def _claims(text: str) -> list[str]:
    request = JudgeRequest(
        task=Task.EXTRACT,
        system="",
        prompt="",
        output_type=Claims,
        payload=ExtractPayload(output=text),
    )
    reply = await LocalJudge().complete(request)
    return list(reply.value.claims)


def _verdicts(count: int) -> list[dict[str, str]]:
    return [{"verdict": "yes", "reason": _REASON} for _ in range(count)]


def _claim_verdicts(claims: Sequence[str]) -> list[dict[str, str]]:
    return [{"verdict": "yes", "reason": "r" * (len(c) + CLAIM_REASON_EXTRA)} for c in claims]


async def _requirements(question: str) -> list[dict[str, str]]:
    parts = await _claims(question) or [question]
    return [{"requirement": part, "verdict": "yes", "reason": _REASON} for part in parts]


async def _combined_reply(payloads: Sequence[Payload]) -> dict[str, Any]:
    """The shared request's reply: the claims once, then each section under its key."""
    reply: dict[str, Any] = {}
    answer = next((p.output for p in payloads if isinstance(p, _ON_CLAIMS)), None)
    claims = await _claims(answer) if answer is not None else []
    if answer is not None:
        reply["claims"] = claims
    for number, payload in enumerate(payloads, start=1):
        reply[f"s{number}"] = await _section(payload, claims)
    return reply


async def _section(payload: Payload, claims: list[str]) -> dict[str, Any]:
    if isinstance(payload, _ON_CLAIMS):
        return {"items": _claim_verdicts(claims)}
    if isinstance(payload, ContextRelevancePayload):
        return {"items": _verdicts(len(payload.context))}
    if isinstance(payload, CompletenessPayload):
        return {"requirements": await _requirements(payload.question)}
    if isinstance(payload, RubricPayload):
        return {"criteria": [{"score": 1, "reason": _REASON} for _ in payload.criteria]}
    return {}


async def _own_reply(request: JudgeRequest[Any]) -> dict[str, Any]:
    """The reply to one scorer's own request, by its output type."""
    payload, output = request.payload, request.output_type
    text = getattr(payload, "output", None)
    claims = await _claims(text) if isinstance(text, str) else []
    if isinstance(payload, AnalyzePayload):
        claims = list(payload.claims)
    entries = _claim_verdicts(claims)
    if output is ClaimVerdicts:
        return {"claims": [{"claim": c, **e} for c, e in zip(claims, entries, strict=True)]}
    if output is Verdicts:
        return {"verdicts": [{"claim": c, **e} for c, e in zip(claims, entries, strict=True)]}
    if output is StatementVerdicts:
        return {"statements": [{"statement": c, **e} for c, e in zip(claims, entries, strict=True)]}
    if output is Claims:
        return {"claims": claims}
    if output is Reason:
        return {"reason": _REASON}
    if output is ItemVerdicts:
        if isinstance(payload, ContextRelevancePayload):
            return {"items": _verdicts(len(payload.context))}
        if isinstance(payload, ToolChoicePayload):
            return {"items": _verdicts(len(payload.calls))}
        return {"items": _claim_verdicts(claims)}
    if output is Requirements and isinstance(payload, CompletenessPayload):
        return {"requirements": await _requirements(payload.question)}
    if output is CriterionScores and isinstance(payload, RubricPayload):
        return {"criteria": [{"score": 1, "reason": _REASON} for _ in payload.criteria]}
    return {}
