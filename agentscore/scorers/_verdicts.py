"""What the scorers built on one judged list share: items with verdicts, a weighted score,
a reason written from the verdicts, and the check that an LLM judge is there when needed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from agentscore._runtime.callbacks import on_loop
from agentscore.errors import ConfigurationError, MissingInputError
from agentscore.judges.base import Judge
from agentscore.judges.local import LocalJudge
from agentscore.judges.resolve import JudgeLike
from agentscore.protocol.protocol import Verdict
from agentscore.protocol.reason import quote
from agentscore.scorers.base import Score, Scorer, StepParams
from agentscore.scorers.options import ScorerOptions

__all__ = [
    "CONFIDENT",
    "JudgeItems",
    "Judged",
    "Wording",
    "judged_list_scorer",
    "question_of",
    "reason_from",
    "require_llm",
    "undecided_reason",
    "weighted_score",
]


@dataclass(frozen=True, slots=True)
class Judged:
    """One judged item: a statement, a requirement, a context item or a tool call."""

    text: str
    verdict: Verdict
    reason: str
    # How sure the judge is, when it says (the local judge does); below CONFIDENT: a guess.
    confidence: float | None = None

    @property
    def decided(self) -> bool:
        return self.confidence is None or self.confidence >= CONFIDENT

    def shape(self) -> dict[str, object]:
        shaped: dict[str, object] = {
            "text": self.text,
            "verdict": self.verdict.value,
            "reason": self.reason,
        }
        if self.confidence is not None:
            shaped["confidence"] = self.confidence
        return shaped


# The confidence from which a verdict counts as decided (a cascade's `confident_at` default).
CONFIDENT = 0.9


# The judged items of one run; None when there was no context to judge.
JudgeItems = Callable[[StepParams], Awaitable[list[Judged] | None]]


@dataclass(frozen=True, slots=True)
class Wording:
    """How the reason of a judged-list scorer reads (see `reason_from`)."""

    noun: str
    good: str
    labels: Mapping[Verdict, str]
    empty: str


def judged_list_scorer(
    judge_items: JudgeItems,
    *,
    key: str,
    weights: Mapping[Verdict, float],
    wording: Wording,
    id: str,
    description: str,
    model: JudgeLike,
    options: ScorerOptions,
) -> Scorer:
    """A scorer whose judge gives a verdict per item: the weighted share of its verdicts,
    with the reason written from them. The analysis step reports the items under `key`.
    `options` are checked and scaled already (`options.built_in`)."""

    async def preprocess(params: StepParams) -> dict[str, object]:
        items = await judge_items(params)
        params.state["items"] = items
        return {key: [item.shape() for item in items or ()]}

    @on_loop
    def generate_score(params: StepParams) -> Score:
        items = params.state["items"]
        if items is None:
            return Score(status="no_context")  # nothing retrieved: nothing to judge
        return weighted_score(items, weights, params.scale)

    @on_loop
    def generate_reason(params: StepParams) -> str:
        if params.score is None:  # undecided items would decide pass or fail
            return undecided_reason(params.state["items"], noun=wording.noun, good=wording.good)
        return reason_from(
            params.score,
            params.state["items"] or (),
            noun=wording.noun,
            good=wording.good,
            labels=wording.labels,
            empty=wording.empty,
        )

    return Scorer(
        id=id,
        description=description,
        judge=model,
        preprocess=preprocess,
        generate_score=generate_score,
        generate_reason=generate_reason,
        **options,
    )


def weighted_score(
    items: Sequence[Judged], weights: Mapping[Verdict, float], scale: float
) -> Score:
    """Sum of the items' verdict weights over their number, x `scale`; none: "no_claims"."""
    if not items:
        return Score(0.0, status="no_claims")
    total = sum(weights.get(item.verdict, 0.0) for item in items)
    score = round(total / len(items) * scale, 2)
    guessed = [item for item in items if not item.decided]
    if not guessed:
        return Score(score)
    # What the score would be with each guess the worst and the best verdict.
    certain = sum(weights.get(item.verdict, 0.0) for item in items if item.decided)
    best = max(weights.values(), default=0.0)
    lowest = round(certain / len(items) * scale, 2)
    highest = round((certain + best * len(guessed)) / len(items) * scale, 2)
    return Score(score, could_be=(lowest, highest))


def undecided_reason(items: Sequence[Judged], *, noun: str, good: str) -> str:
    """Why a run has no score: the items its judge could not tell, which decide the verdict."""
    guessed = [(item.text, item.reason) for item in items if not item.decided]
    return (
        f"Not scored: the judge could not tell whether {len(guessed)} of {len(items)} {noun} "
        f"{good}, and they decide pass or fail: {quote(guessed)}. An LLM judge (a model "
        "name, or a cascade such as 'local+gpt-4o-mini') can."
    )


def reason_from(
    score: float,
    items: Sequence[Judged],
    *,
    noun: str,
    good: str,
    labels: Mapping[Verdict, str],
    empty: str,
) -> str:
    """ "The score is S because K of N <noun> <good>." then the others quoted, by verdict."""
    if not items:
        return empty
    counted = sum(1 for item in items if item.verdict is Verdict.YES)
    head = f"The score is {score:g} because {counted} of {len(items)} {noun} {good}."
    parts = [head]
    for verdict, label in labels.items():
        chosen = [(item.text, item.reason) for item in items if item.verdict is verdict]
        if chosen:
            parts.append(f"{label}: {quote(chosen)}.")
    return " ".join(parts)


def require_llm(judge: Judge, scorer: str, why: str) -> None:
    """Refuse, at construction, a semantic question the local judge cannot answer."""
    if isinstance(judge, LocalJudge):
        raise ConfigurationError(
            f"{scorer} needs an LLM judge: {why}. Pass model='gpt-4o-mini' (or any model name "
            "on an OpenAI-compatible endpoint) or a Judge instance"
        )


def question_of(params: StepParams, scorer: str) -> str:
    question = params.run.input_text.strip()
    if not question:
        raise MissingInputError(
            f"the run has no user message: {scorer} judges the answer against the question"
        )
    return question
