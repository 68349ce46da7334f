"""Context relevance: the share of the retrieved or tool-returned context items that bear on
the question, judged item by item."""

from __future__ import annotations

from collections.abc import Sequence

from agentscore.claims import prompts
from agentscore.claims.protocol import ContextRelevancePayload, ItemVerdicts, Task, Verdict
from agentscore.context import GetContext
from agentscore.judges.base import JudgeRequest
from agentscore.judges.resolve import JudgeLike
from agentscore.runtime.callbacks import on_loop
from agentscore.scorers._claims import check_context_options, resolve_context, scaled_threshold
from agentscore.scorers._verdicts import Judged, question_of, reason_from, weighted_score
from agentscore.scorers.base import Score, Scorer, StepParams

__all__ = ["DEFAULT_THRESHOLD", "create_context_relevance_scorer"]

# Passing means at least 7 items in 10 bear on the question.
DEFAULT_THRESHOLD = 0.7
# A marginally relevant item counts half.
_WEIGHTS = {Verdict.YES: 1.0, Verdict.UNSURE: 0.5}
_NAME = "context relevance"


def create_context_relevance_scorer(
    model: JudgeLike = None,
    *,
    context: Sequence[str] | None = None,
    get_context: GetContext | None = None,
    scale: float = 1.0,
    threshold: float | None = DEFAULT_THRESHOLD,
    strict_mode: bool = False,
    include_reason: bool = True,
    verbose: bool = False,
    timeout: float | None = None,
    id: str = "context_relevance",
) -> Scorer:
    """Score = (relevant + 0.5 x marginal) / context items x `scale` (higher is better).

    Each context item gets a verdict against the user's question: yes (useful for answering
    it), unsure (marginal), no (irrelevant). Context as for faithfulness: `get_context(params)`
    if given, else `context`, else the run's tool results and retrieved documents (one item
    each). No context ends as "no_context" (no score); a run with no user message fails with
    `MissingInputError`. With `model="local"` (the default) the verdicts are lexical: an item
    sharing a content word with the question is "yes", any other "unsure".
    """
    check_context_options(context, get_context)

    async def preprocess(params: StepParams) -> dict[str, object]:
        chunks = await resolve_context(params, context, get_context, "analyze", user_facts=False)
        params.state["context"] = chunks
        items: list[Judged] = []
        if chunks:
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
            items = [
                Judged(chunk, item.verdict, item.reason)
                for chunk, item in zip(chunks, reply.items, strict=True)
            ]
        params.state["items"] = items
        return {"items": [item.shape() for item in items]}

    @on_loop
    def generate_score(params: StepParams) -> Score:
        if not params.state["context"]:
            return Score(status="no_context")  # nothing retrieved: nothing to judge
        return weighted_score(params.state["items"], _WEIGHTS, scale)

    @on_loop
    def generate_reason(params: StepParams) -> str:
        assert params.score is not None
        return reason_from(
            params.score,
            params.state["items"],
            noun="context items",
            good="bear on the question",
            labels={Verdict.UNSURE: "Marginal", Verdict.NO: "Irrelevant"},
            empty="Not scored: the judge returned no verdicts.",
        )

    return Scorer(
        id=id,
        description="Share of the context items relevant to the question.",
        judge=model,
        preprocess=preprocess,
        generate_score=generate_score,
        generate_reason=generate_reason,
        scale=scale,
        threshold=scaled_threshold(threshold, scale),
        strict_mode=strict_mode,
        include_reason=include_reason,
        verbose=verbose,
        timeout=timeout,
    )
