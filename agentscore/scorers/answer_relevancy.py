"""Answer relevancy: the share of the answer's statements that address the question."""

from __future__ import annotations

from typing import Unpack

from agentscore._options import check_number
from agentscore.judges.base import JudgeRequest
from agentscore.judges.resolve import JudgeLike
from agentscore.protocol import prompts
from agentscore.protocol.protocol import RelevancyPayload, StatementVerdicts, Task, Verdict
from agentscore.scorers._claims import checked_output
from agentscore.scorers._verdicts import Judged, Wording, judged_list_scorer, question_of
from agentscore.scorers.base import Scorer, StepParams
from agentscore.scorers.options import ScorerOptions, built_in

__all__ = ["DEFAULT_THRESHOLD", "DEFAULT_UNCERTAINTY_WEIGHT", "create_answer_relevancy_scorer"]

# Passing means at least 7 statements in 10 are on topic.
DEFAULT_THRESHOLD = 0.7
# Mastra's weight of a statement that is related but does not answer ("unsure").
DEFAULT_UNCERTAINTY_WEIGHT = 0.3
_NAME = "answer relevancy"
_WORDING = Wording(
    noun="statements",
    good="address the question",
    labels={Verdict.UNSURE: "Related but not an answer", Verdict.NO: "Off-topic"},
    empty="Not scored: the answer makes no statements to judge.",
)


def create_answer_relevancy_scorer(
    model: JudgeLike = None,
    *,
    uncertainty_weight: float = DEFAULT_UNCERTAINTY_WEIGHT,
    id: str = "answer_relevancy",
    **options: Unpack[ScorerOptions],
) -> Scorer:
    """Score = (yes + `uncertainty_weight` x unsure) / statements x `scale` (higher is better).

    The judge splits the answer into statements and gives each a verdict against the user's
    question: yes (addresses it), unsure (related, does not answer), no (off-topic). Mastra's
    semantics (`uncertainty_weight=0.3`); `uncertainty_weight=1.0` is deepeval's, where only
    "no" counts against. An answer with no statements scores 0 ("no_claims"); a run with no
    user message fails with `MissingInputError`. With `model="local"` (the default) the
    verdicts are lexical: a statement sharing a content word or an identifier with the
    question, or continuing one that does, is "yes"; one about another thing of the kind
    asked about ("order 2001" for "order 1042") is "no"; any other is left undecided, and a
    run whose undecided statements could turn pass into fail ends "undecided", with no score
    and a reason naming them (see docs/local-judge.md).
    Options: `ScorerOptions`.
    """
    check_number("uncertainty_weight", uncertainty_weight, low=0, high=1)

    async def judge_items(params: StepParams) -> list[Judged]:
        output = checked_output(params)
        if not output:
            return []
        question = question_of(params, _NAME)
        reply = await params.ask(
            JudgeRequest(
                task=Task.RELEVANCY,
                system=prompts.EVALUATOR_SYSTEM,
                prompt=prompts.relevancy_prompt(question, output),
                output_type=StatementVerdicts,
                payload=RelevancyPayload(question=question, output=output),
            )
        )
        return [Judged(s.statement, s.verdict, s.reason, s.confidence) for s in reply.statements]

    return judged_list_scorer(
        judge_items,
        key="statements",
        weights={Verdict.YES: 1.0, Verdict.UNSURE: uncertainty_weight},
        wording=_WORDING,
        id=id,
        description="Share of the answer's statements that address the question.",
        model=model,
        options=built_in(options, DEFAULT_THRESHOLD),
    )
