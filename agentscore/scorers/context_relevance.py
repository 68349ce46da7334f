"""Context relevance: the share of the retrieved or tool-returned context items that bear on
the question, judged item by item."""

from __future__ import annotations

from typing import Unpack

from agentscore.judges.base import JudgeRequest
from agentscore.judges.resolve import JudgeLike
from agentscore.protocol import prompts
from agentscore.protocol.protocol import ContextRelevancePayload, ItemVerdicts, Task, Verdict
from agentscore.scorers._claims import resolve_context
from agentscore.scorers._verdicts import Judged, Wording, judged_list_scorer, question_of
from agentscore.scorers.base import Scorer, StepParams
from agentscore.scorers.options import CONTEXT_OPTIONS, ContextOptions, built_in

__all__ = ["DEFAULT_THRESHOLD", "create_context_relevance_scorer"]

# Passing means at least 7 items in 10 bear on the question.
DEFAULT_THRESHOLD = 0.7
# A marginally relevant item counts half.
_WEIGHTS = {Verdict.YES: 1.0, Verdict.UNSURE: 0.5}
_NAME = "context relevance"
_WORDING = Wording(
    noun="context items",
    good="bear on the question",
    labels={Verdict.UNSURE: "Marginal", Verdict.NO: "Irrelevant"},
    empty="Not scored: the judge returned no verdicts.",
)


def create_context_relevance_scorer(
    model: JudgeLike = None,
    *,
    id: str = "context_relevance",
    **options: Unpack[ContextOptions],
) -> Scorer:
    """Score = (relevant + 0.5 x marginal) / context items x `scale` (higher is better).

    Each context item gets a verdict against the user's question: yes (useful for answering
    it), unsure (marginal), no (irrelevant). Context as for faithfulness: `get_context(params)`
    if given, else `context`, else the run's tool results and retrieved documents (one item
    each). No context ends as "no_context" (no score); a run with no user message fails with
    `MissingInputError`. With `model="local"` (the default) the verdicts are lexical: an item
    sharing a content word with the question is "yes", any other "unsure".
    Options: `ContextOptions`.
    """
    shared = built_in(options, DEFAULT_THRESHOLD, known=CONTEXT_OPTIONS)
    context, get_context = options.get("context"), options.get("get_context")

    async def judge_items(params: StepParams) -> list[Judged] | None:
        chunks = await resolve_context(params, context, get_context, "analyze", user_facts=False)
        if not chunks:
            return None
        question = question_of(params, _NAME)
        reply = await params.ask(
            JudgeRequest(
                task=Task.CONTEXT_RELEVANCE,
                system=prompts.EVALUATOR_SYSTEM,
                prompt=prompts.context_relevance_prompt(question, chunks),
                output_type=ItemVerdicts,
                payload=ContextRelevancePayload(question=question, context=tuple(chunks)),
                validate=prompts.one_item_per(len(chunks)),
            )
        )
        return [
            Judged(chunk, item.verdict, item.reason)
            for chunk, item in zip(chunks, reply.items, strict=True)
        ]

    return judged_list_scorer(
        judge_items,
        key="items",
        weights=_WEIGHTS,
        wording=_WORDING,
        id=id,
        description="Share of the context items relevant to the question.",
        model=model,
        options=shared,
    )
