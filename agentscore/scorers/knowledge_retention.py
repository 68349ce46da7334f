"""Knowledge retention: answers that forget or contradict what the user or the tools said
earlier in the conversation."""

from __future__ import annotations

from typing import Unpack

from agentscore._runtime.callbacks import on_loop
from agentscore.judges.base import JudgeRequest
from agentscore.judges.resolve import JudgeLike
from agentscore.protocol import prompts
from agentscore.protocol.protocol import (
    KnowledgeRetentionPayload,
    RetentionVerdict,
    RetentionVerdicts,
    StatedFact,
    Task,
)
from agentscore.protocol.reason import quote
from agentscore.scorers._dialogue import bounded, turn_texts, turns_of
from agentscore.scorers._verdicts import require_llm
from agentscore.scorers.base import Score, Scorer, StepParams
from agentscore.scorers.options import ScorerOptions, built_in

__all__ = ["DEFAULT_THRESHOLD", "create_knowledge_retention_scorer"]

# Passing means at most one answer in 5 forgets or contradicts what was said.
DEFAULT_THRESHOLD = 0.8
_NAME = "knowledge retention"
# Violations quoted in a reason; the rest are counted.
_QUOTED = 3


def create_knowledge_retention_scorer(
    model: JudgeLike,
    *,
    id: str = "knowledge_retention",
    **options: Unpack[ScorerOptions],
) -> Scorer:
    """Score = (1 - answers that forget or contradict / answers) x `scale` (higher is
    better). Level "conversation".

    The judge reads the conversation's numbered turns (`ConversationRun.turns`: each turn's
    user messages, tool calls and results, and answer; a generation or trace is split into
    turns at each user message), lists the facts the user or the tools stated with the turn
    of each, and gives each turn's answer one verdict against the facts stated up to it:
    keeps, forgets (ignores one it needed, or asks for it again) or contradicts, naming the
    facts. The reason names the turns: 'turn 3 contradicts turn 1: "..." (...)'. A
    conversation with no turns scores 0 ("no_claims"). Needs an LLM judge: `model="local"`
    raises `ConfigurationError`. Options: `ScorerOptions`.
    """

    async def preprocess(params: StepParams) -> dict[str, object]:
        reply = await _judge_turns(params)
        params.state["reply"] = reply
        return reply.model_dump(mode="json")

    @on_loop
    def generate_score(params: StepParams) -> Score:
        answers = params.state["reply"].answers
        if not answers:
            return Score(0.0, status="no_claims")
        kept = sum(1 for answer in answers if answer.verdict == "keeps")
        return Score(round(kept / len(answers) * params.scale, 2))

    @on_loop
    def generate_reason(params: StepParams) -> str:
        return _reason(params.score or 0.0, params.state["reply"])

    scorer = Scorer(
        id=id,
        description="Share of the answers that keep what the user and the tools said earlier.",
        judge=model,
        preprocess=preprocess,
        generate_score=generate_score,
        generate_reason=generate_reason,
        level="conversation",
        **built_in(options, DEFAULT_THRESHOLD),
    )
    require_llm(scorer.judge, _NAME, "telling whether an answer contradicts a fact is semantic")
    return scorer


async def _judge_turns(params: StepParams) -> RetentionVerdicts:
    turns = bounded(turn_texts(turns_of(params.run)), "turns", _NAME)
    if not turns:
        return RetentionVerdicts(facts=[], answers=[])
    return await params.ask(
        JudgeRequest(
            task=Task.KNOWLEDGE_RETENTION,
            system=prompts.EVALUATOR_SYSTEM,
            prompt=prompts.knowledge_retention_prompt(turns),
            output_type=RetentionVerdicts,
            payload=KnowledgeRetentionPayload(turns=turns),
            validate=prompts.retention_per_turn(len(turns)),
        )
    )


def _reason(score: float, reply: RetentionVerdicts) -> str:
    answers = reply.answers
    if not answers:
        return "Not scored: the conversation has no turns."
    broken = [answer for answer in answers if answer.verdict != "keeps"]
    if not broken:
        every = "the one answer keeps" if len(answers) == 1 else f"all {len(answers)} answers keep"
        stated = f"{len(reply.facts)} fact{'' if len(reply.facts) == 1 else 's'} stated"
        return (
            f"The score is {score:g} because {every} what the user and the tools said ({stated})."
        )
    verb = "forgets or contradicts" if len(broken) == 1 else "forget or contradict"
    head = (
        f"The score is {score:g} because {len(broken)} of {len(answers)} answers {verb} "
        "what the user or the tools said."
    )
    named = [_violation(answer, reply.facts) for answer in broken[:_QUOTED]]
    if len(broken) > _QUOTED:
        named.append(f"and {len(broken) - _QUOTED} more")
    return f"{head} {'; '.join(named)}."


def _violation(answer: RetentionVerdict, facts: list[StatedFact]) -> str:
    """'turn 3 contradicts turn 1: "the order is 1042" (it says 2001)'."""
    cited = [facts[number - 1] for number in dict.fromkeys(answer.facts)]
    turns = sorted({fact.turn for fact in cited})
    where = "turn" if len(turns) == 1 else "turns"
    listed = ", ".join(str(turn) for turn in turns[:-1])
    numbers = f"{listed} and {turns[-1]}" if listed else str(turns[-1])
    stated = [fact.fact.strip() for fact in cited]
    if len(stated) > 1:  # one quote of several facts: "a; b", not "a.; b."
        stated = [text.removesuffix(".") for text in stated]
    what = quote([("; ".join(stated), answer.reason)])
    return f"turn {answer.turn} {answer.verdict} {where} {numbers}: {what}"
