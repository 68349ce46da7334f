"""Completeness: the share of what the question asks for that the answer covers."""

from __future__ import annotations

from typing import Unpack

from agentscore.judges.base import JudgeRequest
from agentscore.judges.resolve import JudgeLike
from agentscore.protocol import prompts
from agentscore.protocol.protocol import CompletenessPayload, Requirements, Task, Verdict
from agentscore.scorers._claims import checked_output
from agentscore.scorers._verdicts import (
    Judged,
    Wording,
    judged_list_scorer,
    question_of,
    require_llm,
)
from agentscore.scorers.base import Scorer, StepParams
from agentscore.scorers.options import ScorerOptions, built_in

__all__ = ["DEFAULT_THRESHOLD", "create_completeness_scorer"]

# Passing means at least 4 in 5 of the things asked are covered.
DEFAULT_THRESHOLD = 0.8
# A requirement covered only partly counts half.
_WEIGHTS = {Verdict.YES: 1.0, Verdict.UNSURE: 0.5}
_NAME = "completeness"
_WORDING = Wording(
    noun="things asked for",
    good="are covered",
    labels={Verdict.UNSURE: "Partly covered", Verdict.NO: "Missing"},
    empty="Not scored: the answer is empty.",
)


def create_completeness_scorer(
    model: JudgeLike,
    *,
    id: str = "completeness",
    **options: Unpack[ScorerOptions],
) -> Scorer:
    """Score = (covered + 0.5 x partly covered) / requirements x `scale` (higher is better).

    The judge lists what the user's question asks for (each sub-question, requested item or
    constraint) and marks each yes (covered), unsure (partly) or no (left out). An empty
    answer scores 0 ("no_claims"); a run with no user message fails with `MissingInputError`.
    Needs an LLM judge: `model="local"` raises `ConfigurationError`.
    Options: `ScorerOptions`.
    """

    scorer = judged_list_scorer(
        _judge_items,
        key="requirements",
        weights=_WEIGHTS,
        wording=_WORDING,
        id=id,
        description="Share of what the question asks for that the answer covers.",
        model=model,
        options=built_in(options, DEFAULT_THRESHOLD),
    )
    require_llm(scorer.judge, _NAME, "telling what a question asks for takes a language model")
    return scorer


async def _judge_items(params: StepParams) -> list[Judged]:
    output = checked_output(params)
    if not output:
        return []
    question = question_of(params, _NAME)
    reply = await params.ask(
        JudgeRequest(
            task=Task.COMPLETENESS,
            system=prompts.EVALUATOR_SYSTEM,
            prompt=prompts.completeness_prompt(question, output),
            output_type=Requirements,
            payload=CompletenessPayload(question=question, output=output),
        )
    )
    return [Judged(r.requirement, r.verdict, r.reason) for r in reply.requirements]
