"""Task completion: did the run do what the user asked, judged on its whole trajectory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

from agentscore._runtime.callbacks import on_loop
from agentscore.judges.base import JudgeRequest
from agentscore.judges.resolve import JudgeLike
from agentscore.protocol import prompts
from agentscore.protocol.protocol import Goal, Goals, Task, TaskCompletionPayload, Verdict
from agentscore.run import TraceRun, TraceStep
from agentscore.scorers._dialogue import answer_of, bounded, request_of, step_lines
from agentscore.scorers._verdicts import Judged, reason_from, require_llm, weighted_score
from agentscore.scorers.base import Score, Scorer, StepParams
from agentscore.scorers.options import ScorerOptions, built_in

__all__ = ["DEFAULT_THRESHOLD", "create_task_completion_scorer"]

# Passing means at least 4 in 5 of the user's goals are done.
DEFAULT_THRESHOLD = 0.8
# A goal done only partly counts half.
_WEIGHTS = {Verdict.YES: 1.0, Verdict.UNSURE: 0.5}
_LABELS = {Verdict.UNSURE: "Partly done", Verdict.NO: "Not done"}
_NAME = "task completion"
_EMPTY = "Not scored: the run has no steps and no answer."


def create_task_completion_scorer(
    model: JudgeLike,
    *,
    id: str = "task_completion",
    **options: Unpack[ScorerOptions],
) -> Scorer:
    """Score = (done + 0.5 x partly done) / goals x `scale` (higher is better). Level "trace".

    The judge reads the whole trajectory (`TraceRun.of(run)`): what the user asked, each step
    in order (model calls, tool calls with their arguments, results and errors, retrievals),
    and the final answer. It lists the user's goals and marks each yes (done, and reported
    truthfully), unsure (partly) or no (not done, failed, or claimed without a step doing
    it), citing the steps that show it; the reason names them ("step 3 refund_order").
    On a conversation, the request is every turn's user messages and the trajectory every
    turn's steps. A run with no steps and no answer scores 0 ("no_claims"); one with no user
    message fails with `MissingInputError`. Needs an LLM judge: `model="local"` raises
    `ConfigurationError`. Options: `ScorerOptions`.
    """

    async def preprocess(params: StepParams) -> dict[str, object]:
        goals = await _judge_goals(params)
        params.state["items"] = goals
        return {"goals": [goal.model_dump(mode="json") for goal in goals]}

    @on_loop
    def generate_score(params: StepParams) -> Score:
        return weighted_score(_judged(params), _WEIGHTS, params.scale)

    @on_loop
    def generate_reason(params: StepParams) -> str:
        return reason_from(
            params.score or 0.0,
            _judged(params),
            noun="goals",
            good="are done",
            labels=_LABELS,
            empty=_EMPTY,
        )

    scorer = Scorer(
        id=id,
        description="Share of what the user asked for that the run got done.",
        judge=model,
        preprocess=preprocess,
        generate_score=generate_score,
        generate_reason=generate_reason,
        level="trace",
        **built_in(options, DEFAULT_THRESHOLD),
    )
    require_llm(scorer.judge, _NAME, "telling whether a run did what was asked is semantic")
    return scorer


async def _judge_goals(params: StepParams) -> list[Goal]:
    trace = TraceRun.of(params.run)
    request = request_of(params.run, _NAME)
    steps = step_lines(trace)
    answer = answer_of(trace)
    bounded([request, *steps, answer], "request, steps and answer", _NAME)
    params.state["steps"] = trace.steps
    if not steps and not answer:
        return []
    reply = await params.ask(
        JudgeRequest(
            task=Task.TASK_COMPLETION,
            system=prompts.EVALUATOR_SYSTEM,
            prompt=prompts.task_completion_prompt(request, steps, answer),
            output_type=Goals,
            payload=TaskCompletionPayload(request=request, steps=tuple(steps), answer=answer),
            validate=prompts.goals_within(len(steps)),
        )
    )
    return list(reply.goals)


def _judged(params: StepParams) -> list[Judged]:
    steps: Sequence[TraceStep] = params.state.get("steps", ())
    return [
        Judged(goal.goal, goal.verdict, _evidence(goal, steps)) for goal in params.state["items"]
    ]


def _evidence(goal: Goal, steps: Sequence[TraceStep]) -> str:
    """The goal's reason, after the steps it rests on: "step 3 refund_order: ..."."""
    if not goal.steps:
        return goal.reason
    named = ", ".join(f"step {n} {steps[n - 1].name}" for n in dict.fromkeys(goal.steps))
    return f"{named}: {goal.reason.strip()}"
