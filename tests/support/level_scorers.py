"""Scorers of every level, as a user's module gives them to `agentscore eval --scorer
tests.support.level_scorers:ATTR`: deterministic ones that need no judge, and a conversation scorer
that asks an OpenAI-compatible judge (`JUDGED`)."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel

from agentscore.messages import assistant_text
from agentscore.run import ConversationRun, TraceRun
from agentscore.scorers import JudgePrompt, StepParams, create_scorer


def _repeats(params: StepParams) -> float:
    assert isinstance(params.run, TraceRun)
    calls = Counter((step.name, step.arguments) for step in params.run.tool_steps)
    params.state["repeated"] = [(name, n) for (name, _), n in calls.items() if n > 1]
    return 0.0 if params.state["repeated"] else 1.0


def _repeats_reason(params: StepParams) -> str:
    assert isinstance(params.run, TraceRun)
    repeated = params.state["repeated"]
    if not repeated:
        return f"{len(params.run.tool_steps)} tool call(s), none repeated"
    return "; ".join(f"{name} called {n} times with the same arguments" for name, n in repeated)


def _answered(params: StepParams) -> float:
    assert isinstance(params.run, ConversationRun)
    turns = params.run.turns
    params.state["silent"] = [n for n, t in enumerate(turns, 1) if not assistant_text(t.output)]
    return 1 - len(params.state["silent"]) / len(turns)


def _answered_reason(params: StepParams) -> str:
    assert isinstance(params.run, ConversationRun)
    silent = params.state["silent"]
    if not silent:
        asked = " | ".join(m.content or "" for t in params.run.turns for m in t.input)
        return f"all {len(params.run.turns)} turns answered: {asked}"
    return "; ".join(f"turn {n} has no answer" for n in silent)


def _history(params: StepParams) -> float:
    return 1.0


def _history_reason(params: StepParams) -> str:
    users = [m.content for m in params.run.input if m.role == "user"]
    return f"{len(users)} user message(s) in the input: {' | '.join(map(str, users))}"


NO_REPEATS = create_scorer(
    id="no_repeats",
    level="trace",
    generate_score=_repeats,
    generate_reason=_repeats_reason,
    threshold=1.0,
)
ANSWERED_EVERY_TURN = create_scorer(
    id="answered_every_turn",
    level="conversation",
    generate_score=_answered,
    generate_reason=_answered_reason,
    threshold=1.0,
)
SEES_HISTORY = create_scorer(
    id="sees_history",
    generate_score=_history,
    generate_reason=_history_reason,
    threshold=0.0,
)
ALL = [NO_REPEATS, ANSWERED_EVERY_TURN, SEES_HISTORY]
LEVELS = [NO_REPEATS, ANSWERED_EVERY_TURN]
NOT_SCORERS = ["no_repeats"]


class Contradiction(BaseModel):
    turn: int
    earlier: int
    why: str


class Contradictions(BaseModel):
    contradictions: list[Contradiction]


def _retention_prompt(params: StepParams) -> str:
    assert isinstance(params.run, ConversationRun)
    lines = [
        f"turn {n}: user: {t.input[-1].content if t.input else ''} | agent: "
        f"{assistant_text(t.output)}"
        for n, t in enumerate(params.run.turns, 1)
    ]
    return "Which answers contradict an earlier turn?\n" + "\n".join(lines)


def _retention(params: StepParams) -> float:
    assert isinstance(params.run, ConversationRun)
    found = params.results["analyze_step_result"]["contradictions"]
    return 1 - len(found) / len(params.run.turns)


def _retention_reason(params: StepParams) -> str:
    found = params.results["analyze_step_result"]["contradictions"]
    if not found:
        return "no answer contradicts an earlier turn"
    return "; ".join(f"turn {c['turn']} contradicts turn {c['earlier']}: {c['why']}" for c in found)


JUDGED = [
    create_scorer(
        id="remembers",
        level="conversation",
        judge="judge-model",
        analyze=JudgePrompt(
            description="contradicted turns",
            prompt=_retention_prompt,
            output_type=Contradictions,
        ),
        generate_score=_retention,
        generate_reason=_retention_reason,
        threshold=1.0,
    )
]
