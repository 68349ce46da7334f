"""Conversation completeness: the user's requests across the turns, each satisfied or not."""

from __future__ import annotations

from typing import Unpack

from agentscore._runtime.callbacks import on_loop
from agentscore.judges.base import JudgeRequest
from agentscore.judges.resolve import JudgeLike
from agentscore.protocol import prompts
from agentscore.protocol.protocol import (
    ConversationCompletenessPayload,
    ConversationRequest,
    ConversationRequests,
    Task,
    Verdict,
)
from agentscore.scorers._dialogue import bounded, turn_texts, turns_of
from agentscore.scorers._verdicts import Judged, reason_from, require_llm, weighted_score
from agentscore.scorers.base import Score, Scorer, StepParams
from agentscore.scorers.options import ScorerOptions, built_in

__all__ = ["DEFAULT_THRESHOLD", "create_conversation_completeness_scorer"]

# Passing means at least 4 in 5 of the user's requests are satisfied.
DEFAULT_THRESHOLD = 0.8
# A request satisfied only partly counts half.
_WEIGHTS = {Verdict.YES: 1.0, Verdict.UNSURE: 0.5}
_LABELS = {Verdict.UNSURE: "Partly satisfied", Verdict.NO: "Not satisfied"}
_NAME = "conversation completeness"


def create_conversation_completeness_scorer(
    model: JudgeLike,
    *,
    id: str = "conversation_completeness",
    **options: Unpack[ScorerOptions],
) -> Scorer:
    """Score = (satisfied + 0.5 x partly satisfied) / requests x `scale` (higher is better).
    Level "conversation".

    `create_completeness_scorer` over turns: the judge reads the conversation's numbered
    turns (`ConversationRun.turns`; a generation or trace is split into turns at each user
    message), lists every distinct thing the user asked for with the turn where it was first
    asked, and marks each yes (an answer of that turn or a later one satisfies it), unsure
    (partly) or no (none does), naming the turn that satisfies it. The reason names both
    turns. A conversation with no turns, or whose user asks for nothing, scores 0
    ("no_claims"). Needs an LLM judge: `model="local"` raises `ConfigurationError`.
    Options: `ScorerOptions`.
    """

    async def preprocess(params: StepParams) -> dict[str, object]:
        requests = await _judge_requests(params)
        params.state["items"] = requests
        return {"requests": [request.model_dump(mode="json") for request in requests]}

    @on_loop
    def generate_score(params: StepParams) -> Score:
        return weighted_score(_judged(params), _WEIGHTS, params.scale)

    @on_loop
    def generate_reason(params: StepParams) -> str:
        return reason_from(
            params.score or 0.0,
            _judged(params),
            noun="requests",
            good="are satisfied",
            labels=_LABELS,
            empty="Not scored: the user asked for nothing in the conversation.",
        )

    scorer = Scorer(
        id=id,
        description="Share of the user's requests across the turns that an answer satisfies.",
        judge=model,
        preprocess=preprocess,
        generate_score=generate_score,
        generate_reason=generate_reason,
        level="conversation",
        **built_in(options, DEFAULT_THRESHOLD),
    )
    require_llm(scorer.judge, _NAME, "telling what a user asked for is semantic")
    return scorer


async def _judge_requests(params: StepParams) -> list[ConversationRequest]:
    turns = bounded(turn_texts(turns_of(params.run)), "turns", _NAME)
    if not turns:
        return []
    reply = await params.ask(
        JudgeRequest(
            task=Task.CONVERSATION_COMPLETENESS,
            system=prompts.EVALUATOR_SYSTEM,
            prompt=prompts.conversation_completeness_prompt(turns),
            output_type=ConversationRequests,
            payload=ConversationCompletenessPayload(turns=turns),
            validate=prompts.requests_within(len(turns)),
        )
    )
    # A request never satisfied has no turn that satisfies it, whatever the judge wrote.
    return [
        item.model_copy(update={"satisfied_in": None}) if item.verdict is Verdict.NO else item
        for item in reply.requests
    ]


def _judged(params: StepParams) -> list[Judged]:
    return [Judged(item.request, item.verdict, _where(item)) for item in params.state["items"]]


def _where(item: ConversationRequest) -> str:
    """The request's reason after its turns: "asked in turn 2, satisfied in turn 4: ..."."""
    asked = f"asked in turn {item.turn}"
    if item.satisfied_in is not None:
        asked += f", satisfied in turn {item.satisfied_in}"
    return f"{asked}: {item.reason.strip()}"
