"""Rubric: a G-Eval-style judge of criteria the user writes, each scored on a points scale."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Unpack

from agentscore._options import check_number
from agentscore._runtime.callbacks import on_loop
from agentscore.errors import ConfigurationError
from agentscore.judges.base import JudgeRequest
from agentscore.judges.resolve import JudgeLike
from agentscore.protocol import prompts
from agentscore.protocol.protocol import CriterionScores, RubricPayload, Task
from agentscore.scorers._claims import checked_output
from agentscore.scorers._verdicts import question_of, require_llm
from agentscore.scorers.base import Score, Scorer, StepParams
from agentscore.scorers.options import ScorerOptions, built_in

__all__ = ["DEFAULT_POINTS", "DEFAULT_THRESHOLD", "create_rubric_scorer"]

# deepeval's G-Eval scale: each criterion 0 to 10.
DEFAULT_POINTS = 10
# Passing means 7 of 10 on average.
DEFAULT_THRESHOLD = 0.7
_NAME = "the rubric scorer"


def create_rubric_scorer(
    model: JudgeLike,
    *,
    criteria: Sequence[str] | Mapping[str, str],
    points: int = DEFAULT_POINTS,
    id: str = "rubric",
    **options: Unpack[ScorerOptions],
) -> Scorer:
    """Score = mean over criteria of (points given / `points`) x `scale` (higher is better).

    `criteria`: what a good answer does, one sentence each (a list), or named
    (`{"polite": "Addresses the user courteously."}`). The judge works out each criterion's
    evaluation steps, then gives it an integer from 0 to `points` with a one-sentence reason,
    in one request (G-Eval's form, without token probabilities). The reason lists every
    criterion's points and reason. An empty answer scores 0 ("no_claims"). Needs an LLM
    judge: `model="local"` raises `ConfigurationError`.
    Options: `ScorerOptions`.
    """
    named = _named(criteria)
    check_number("points", points, low=1, integer=True)
    texts = tuple(f"{name}: {text}" if name else text for name, text in named)

    async def preprocess(params: StepParams) -> dict[str, object]:
        output = checked_output(params)
        scores: list[dict[str, object]] = []
        if output:
            question = question_of(params, _NAME)
            reply = await params.ask(
                JudgeRequest(
                    task=Task.RUBRIC,
                    system=prompts.EVALUATOR_SYSTEM,
                    prompt=prompts.rubric_prompt(question, output, texts, points),
                    output_type=CriterionScores,
                    payload=RubricPayload(
                        question=question, output=output, criteria=texts, points=points
                    ),
                    validate=prompts.one_score_per(len(texts), points),
                )
            )
            scores = [
                {"criterion": text, "score": entry.score, "points": points, "reason": entry.reason}
                for text, entry in zip(texts, reply.criteria, strict=True)
            ]
        params.state["criteria"] = scores
        return {"criteria": scores}

    @on_loop
    def generate_score(params: StepParams) -> Score:
        scores = params.state["criteria"]
        if not scores:
            return Score(0.0, status="no_claims")
        mean = sum(entry["score"] for entry in scores) / (len(scores) * points)
        return Score(round(mean * params.scale, 2))

    @on_loop
    def generate_reason(params: StepParams) -> str:
        scores = params.state["criteria"]
        if not scores:
            return "Not scored: the answer is empty."
        listed = "; ".join(
            f"{entry['criterion']}: {entry['score']}/{points} ({entry['reason'].strip()})"
            for entry in scores
        )
        return f"The score is {params.score:g} from {len(scores)} criteria. {listed}."

    scorer = Scorer(
        id=id,
        description="Mean of the user's criteria, each scored by the judge.",
        judge=model,
        preprocess=preprocess,
        generate_score=generate_score,
        generate_reason=generate_reason,
        **built_in(options, DEFAULT_THRESHOLD),
    )
    require_llm(scorer.judge, _NAME, "scoring free-text criteria takes a language model")
    return scorer


def _named(criteria: Sequence[str] | Mapping[str, str]) -> list[tuple[str, str]]:
    if isinstance(criteria, str):
        raise ConfigurationError("criteria must be a list of strings or a mapping, not a string")
    pairs = list(criteria.items()) if isinstance(criteria, Mapping) else [("", c) for c in criteria]
    if not pairs:
        raise ConfigurationError("a rubric needs at least one criterion")
    for name, text in pairs:
        if not isinstance(name, str) or not isinstance(text, str) or not text.strip():
            raise ConfigurationError(f"every criterion must be a non-empty string, got {text!r}")
    return pairs
