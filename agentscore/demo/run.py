"""`agentscore demo`: answer a few support questions and print their live scores."""

from __future__ import annotations

import os
import time

from agentscore.agent import Agent
from agentscore.ci import render_table
from agentscore.context import ContextParams, extract_tool_results, format_tool_result
from agentscore.demo.reasons import render_reasons
from agentscore.demo.support import (
    INSTRUCTIONS,
    QUESTIONS,
    RECORDED_MODEL,
    replay_client,
    support_tools,
)
from agentscore.evals import Evals
from agentscore.judges.resolve import resolve_judge
from agentscore.result import ScoreResult
from agentscore.scorers import (
    create_answer_relevancy_scorer,
    create_faithfulness_scorer,
    create_hallucination_scorer,
    create_tool_call_accuracy_scorer,
)
from agentscore.telemetry.core import CAPTURE_CONTENT_ENV
from agentscore.telemetry.setup import setup_telemetry

__all__ = ["run_demo"]


def tool_results_context(params: ContextParams) -> list[str]:
    """Context for the hallucination scorer: what the tools returned in this very run."""
    return [format_tool_result(result) for result in extract_tool_results(params.run.output)]


def run_demo(model: str | None = None, judge: str | None = None, *, reasons: bool = False) -> int:
    live_model = model or ("gpt-4o-mini" if os.environ.get("OPENAI_API_KEY") else None)
    judge_name = judge or live_model or "local"
    # The demo's questions and answers are not private, so its traces keep message content
    # (unless the variable says otherwise): `agentscore eval --traces` can score them again.
    capture = None if CAPTURE_CONTENT_ENV in os.environ else True
    telemetry = setup_telemetry("agentscore-demo", capture_content=capture)
    judge_object = resolve_judge(judge_name)
    scorers = [
        create_faithfulness_scorer(judge_object),
        create_hallucination_scorer(judge_object, get_context=tool_results_context),
        create_answer_relevancy_scorer(judge_object),
        # Deterministic: the agent's own tool definitions, recorded in each run, are the schema.
        create_tool_call_accuracy_scorer(),
    ]
    agent = Agent(
        name="support",
        model=live_model or RECORDED_MODEL,
        instructions=INSTRUCTIONS,
        tools=support_tools(),
        client=None if live_model else replay_client(),
        evals=Evals(scorers=scorers, sampling=1.0),
        telemetry=telemetry.telemetry,
    )
    print("agentscore demo: a support agent answers; four scorers judge it live, in the background")
    if live_model:
        print(f"  agent model : {live_model} (live endpoint)")
    else:
        print("  agent model : replayed from a recording shipped with agentscore")
        print("                (no API key and no network needed)")
    print(
        f"  judge       : {judge_object.model_name}"
        + (" (offline local judge)" if judge_name == "local" else "")
    )
    print(f"  traces      : {telemetry.destination}\n")

    answers: list[tuple[str, str, str]] = []
    started = time.perf_counter()
    for question in QUESTIONS:
        result = agent.generate_sync(question)
        answers.append((result.run_id, question, result.text))
        print(f"Q: {question}\nA: {result.text}\n")
    generated = time.perf_counter() - started
    finished = agent.flush(timeout=120)
    scores: dict[tuple[str, str], ScoreResult] = {(s.run_id, s.scorer_id): s for s in agent.scores}
    telemetry.shutdown()

    rows = [
        [
            _clip(question, 48),
            *(_cell(scores.get((run_id, scorer.id))) for scorer in scorers),
        ]
        for run_id, question, _ in answers
    ]
    headers = ["faithfulness ↑", "hallucination ↓", "answer relevancy ↑", "tool calls ↑"]
    print(render_table(["question", *headers], rows))
    print("↑ higher is better, ↓ lower is better")
    if reasons:
        print("\nWhy each answer scored as it did:\n")
        print(
            render_reasons(
                [(run_id, question) for run_id, question, _ in answers],
                list(scores.values()),
                scorer_ids=[scorer.id for scorer in scorers],
            )
        )
    stats = agent.runner.stats()
    # The runner counts a run with no context, or undecided, among those that finished.
    no_context = sum(1 for score in scores.values() if score.status.value == "no_context")
    undecided = sum(1 for score in scores.values() if score.status.value == "undecided")
    print(
        f"\n{len(QUESTIONS)} answers in {generated:.2f}s; scorer runs: "
        f"{stats.scored - no_context - undecided} scored, {no_context} no context, "
        + (f"{undecided} undecided, " if undecided else "")
        + f"{stats.failed} failed, {stats.dropped} dropped, {stats.pending} pending"
    )
    for (run_id, scorer_id), score in sorted(scores.items()):
        if score.status.value == "failed" and score.error is not None:
            print(
                f"  {scorer_id} failed on {run_id[:8]}: {score.error.type}: {score.error.message}"
            )
    print(f"Spans and gen_ai.evaluation.result events were written to {telemetry.destination}")
    if telemetry.telemetry.capture_content and telemetry.destination.endswith(".jsonl"):
        print(f"Score them again from the file: agentscore eval --traces {telemetry.destination}")
    return 0 if finished else 1


def _cell(result: ScoreResult | None) -> str:
    if result is None:
        return "missing"
    if result.failed:
        return f"failed ({result.error.type if result.error else '?'})"
    # A run with nothing judged has no score: a dash, never a 0.00 that reads as a verdict.
    if result.status.value == "no_claims":
        return "- (no claims)"
    if result.status.value == "no_context":
        return "- (no context)"
    if result.status.value == "undecided":
        return "- (undecided)"
    label = f" {result.label}" if result.label else ""
    return f"{result.score:.2f}{label}"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
