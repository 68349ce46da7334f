"""Batch evaluation: score a dataset, optionally running a target (an agent) on each item first."""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from agentscore._redact import redact
from agentscore._runtime.loop import background_loop
from agentscore.adapters import coerce_messages
from agentscore.agent import Agent
from agentscore.errors import ConfigurationError
from agentscore.messages import Message
from agentscore.pipeline.generation import Generation, Scoring, score_generation
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.run import Level, ScorerRun, TraceRun
from agentscore.scorers.base import Scorer

__all__ = [
    "EvalItemResult",
    "EvalReport",
    "ScorerSummary",
    "run_evals",
    "run_evals_sync",
    "score_targets",
    "score_targets_sync",
    "split_messages",
    "summarize",
]

Target = Agent | Callable[[Any], Any]
_BATCH = Scoring()


class EvalItemResult(BaseModel):
    """One item: its position, the run that was scored, each scorer's result, or the error."""

    model_config = ConfigDict(frozen=True)

    index: int
    run: ScorerRun | None = None
    scorer_results: dict[str, ScoreResult] = Field(default_factory=dict)
    error: str | None = None


class ScorerSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    scorer_id: str
    mean: float | None
    pass_rate: float | None
    scored: int
    failed: int
    # Runs the scorer had no context for: not judged, so outside the mean and the pass rate.
    no_context: int = 0


class EvalReport(BaseModel):
    """`scores` maps scorer id to its mean score over the items it scored."""

    model_config = ConfigDict(frozen=True)

    scores: dict[str, float | None]
    summaries: dict[str, ScorerSummary]
    items: list[EvalItemResult]


async def run_evals(
    data: Sequence[Mapping[str, Any]],
    scorers: Sequence[Scorer],
    target: Target | None = None,
    *,
    concurrency: int = 8,
    on_item_complete: Callable[[EvalItemResult], object] | None = None,
) -> EvalReport:
    """Score every item of `data` with every scorer, `concurrency` items at a time.

    An item is a mapping with `input`, and `output` unless a `target` produces it (an `Agent`,
    or any sync or async callable taking the input), or with `messages` (a whole
    conversation, split after its last user message); optional `ground_truth`, `context`
    (kept in `run.request_context["context"]`, which `agentscore.context.run_context` reads),
    `documents` (retrieved documents, `run.documents`) and `id`. Trace scorers judge each
    item's own trajectory (`TraceRun.of`: the tool calls and results its messages tell). A
    failing item is recorded with its error and counts as failed for every scorer; it never
    stops the run. `on_item_complete` (sync or async) sees each item's result as soon as it is
    scored.
    """
    _check_batch(scorers, concurrency, "run_evals")
    conversational = [scorer.id for scorer in scorers if scorer.level == "conversation"]
    if conversational:
        raise ConfigurationError(
            f"run_evals scores generations; {', '.join(conversational)} judge conversations: "
            "give them to `agentscore eval` with a file of conversation records"
        )

    async def evaluate(index: int) -> EvalItemResult:
        return await _evaluate_item(index, data[index], scorers, target)

    items = await _each(len(data), evaluate, concurrency, on_item_complete)
    summaries = {scorer.id: summarize(scorer, items) for scorer in scorers}
    return EvalReport(
        scores={scorer_id: summary.mean for scorer_id, summary in summaries.items()},
        summaries=summaries,
        items=items,
    )


async def score_targets(
    targets: Sequence[Mapping[Level, ScorerRun]],
    scorers: Sequence[Scorer],
    *,
    concurrency: int = 8,
    on_item_complete: Callable[[EvalItemResult], object] | None = None,
) -> list[EvalItemResult]:
    """Score each target, `concurrency` at a time: a target maps each level of scorer that
    judges it to the run it judges (a generation's `ScorerRun`, its `TraceRun`, a
    `ConversationRun`); a scorer whose level the target lacks does not judge it. The results
    come back in the targets' order; `on_item_complete` as with `run_evals`."""
    _check_batch(scorers, concurrency, "score_targets")

    async def evaluate(index: int) -> EvalItemResult:
        runs = targets[index]
        scored = await _score_runs(runs, scorers)
        return EvalItemResult(
            index=index, run=next(iter(runs.values()), None), scorer_results=scored
        )

    return await _each(len(targets), evaluate, concurrency, on_item_complete)


def score_targets_sync(
    targets: Sequence[Mapping[Level, ScorerRun]],
    scorers: Sequence[Scorer],
    *,
    concurrency: int = 8,
    on_item_complete: Callable[[EvalItemResult], object] | None = None,
) -> list[EvalItemResult]:
    """Blocking `score_targets`, safe from sync code and from inside a running loop."""

    async def call() -> list[EvalItemResult]:
        return await score_targets(
            targets, scorers, concurrency=concurrency, on_item_complete=on_item_complete
        )

    return background_loop.call(call)


def _check_batch(scorers: Sequence[Scorer], concurrency: int, name: str) -> None:
    if concurrency < 1:
        raise ConfigurationError("concurrency must be at least 1")
    if not scorers:
        raise ConfigurationError(f"{name} needs at least one scorer")


async def _each(
    count: int,
    evaluate: Callable[[int], Awaitable[EvalItemResult]],
    concurrency: int,
    on_item_complete: Callable[[EvalItemResult], object] | None,
) -> list[EvalItemResult]:
    results: list[EvalItemResult | None] = [None] * count
    slots = anyio.Semaphore(concurrency)

    async def one(index: int) -> None:
        async with slots:
            outcome = await evaluate(index)
        results[index] = outcome
        if on_item_complete is not None:
            returned = on_item_complete(outcome)
            if inspect.isawaitable(returned):
                await returned

    async with anyio.create_task_group() as task_group:
        for index in range(count):
            task_group.start_soon(one, index)
    return [result for result in results if result is not None]


def run_evals_sync(
    data: Sequence[Mapping[str, Any]],
    scorers: Sequence[Scorer],
    target: Target | None = None,
    *,
    concurrency: int = 8,
    on_item_complete: Callable[[EvalItemResult], object] | None = None,
) -> EvalReport:
    """Blocking `run_evals`, safe from sync code and from inside a running loop."""

    async def call() -> EvalReport:
        return await run_evals(
            data, scorers, target, concurrency=concurrency, on_item_complete=on_item_complete
        )

    return background_loop.call(call)


def summarize(scorer: Scorer, items: Sequence[EvalItemResult]) -> ScorerSummary:
    """An item that errored before scoring, or whose score failed, counts as failed: a pass
    rate over the survivors alone would hide a run where everything broke. Runs with no
    context were not judged: counted apart, neither passed nor failed."""
    results = [item.scorer_results[scorer.id] for item in items if scorer.id in item.scorer_results]
    # Runs with nothing to judge (no claims) carry no signal: they stay out of the mean.
    scores = [r.score for r in results if r.score is not None and r.status is ScoreStatus.SCORED]
    passed = sum(1 for r in results if r.passed)
    judged = sum(1 for r in results if r.passed is not None)
    failed = sum(1 for r in results if r.status is ScoreStatus.FAILED)
    failed += sum(1 for item in items if item.error is not None)
    return ScorerSummary(
        scorer_id=scorer.id,
        mean=math.fsum(scores) / len(scores) if scores else None,
        pass_rate=passed / (judged + failed) if judged + failed else None,
        scored=len(scores),
        failed=failed,
        no_context=sum(1 for r in results if r.status is ScoreStatus.NO_CONTEXT),
    )


async def _evaluate_item(
    index: int, item: Mapping[str, Any], scorers: Sequence[Scorer], target: Target | None
) -> EvalItemResult:
    try:
        run = await _run_for(item, target)
    except Exception as exc:
        # The target's own errors can quote its credentials ("Bearer sk-..." from the SDK).
        return EvalItemResult(index=index, error=redact(f"{type(exc).__name__}: {exc}"))
    runs: dict[Level, ScorerRun] = {"generation": run}
    if any(scorer.level == "trace" for scorer in scorers):
        runs["trace"] = TraceRun.of(run)
    return EvalItemResult(index=index, run=run, scorer_results=await _score_runs(runs, scorers))


async def _score_runs(
    runs: Mapping[Level, ScorerRun], scorers: Sequence[Scorer]
) -> dict[str, ScoreResult]:
    """Each scorer on the run of its level, if the target has one. The pipeline's
    composition, with no telemetry, retry or sink: a batch run emits no spans, and its
    failures are reported per record (the CLI's circuit breaker stops a dead judge). The LLM
    scorers of one run on one judge share one judge request."""
    found: dict[str, ScoreResult] = {}
    for level, run in runs.items():
        chosen = [scorer for scorer in scorers if scorer.level == level]
        if chosen:
            results = await score_generation(Generation.of(chosen), run, _BATCH)
            found.update((s.id, result) for s, result in zip(chosen, results, strict=True))
    # In the scorers' order, not the order they finished in (sharing a request, they finish
    # together), so reports and "first failure" lines are stable.
    return {scorer.id: found[scorer.id] for scorer in scorers if scorer.id in found}


def split_messages(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """A record in the `messages` form (a whole conversation) as `input` and `output`, split
    after the last user message; other records unchanged."""
    if "messages" not in record:
        return record
    messages = coerce_messages(record["messages"])
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    if last_user < 0:
        raise ValueError("'messages' has no user message")
    return {**record, "input": messages[: last_user + 1], "output": messages[last_user + 1 :]}


async def _run_for(item: Mapping[str, Any], target: Target | None) -> ScorerRun:
    if not isinstance(item, Mapping):
        raise ValueError("an item must be a mapping")
    item = split_messages(item)
    if "input" not in item:
        raise ValueError("an item needs an 'input' (or 'messages')")
    request_context = {"context": item["context"]} if item.get("context") is not None else {}
    common: dict[str, Any] = {
        "input": item["input"],
        "ground_truth": item.get("ground_truth"),
        "request_context": request_context,
        "documents": item.get("documents") or [],
    }
    if item.get("id") is not None:
        common["run_id"] = str(item["id"])
    if target is None:
        if "output" not in item:
            raise ValueError("an item needs an 'output' when no target is given")
        return ScorerRun(output=item["output"], **common)
    if isinstance(target, Agent):
        result = await target.generate(item["input"], scorers=[])
        return ScorerRun(
            output=result.output,
            trace_id=result.trace_id,
            span_id=result.span_id,
            response_id=result.response_id,
            agent_name=target.name,
            **common,
        )
    produced = target(item["input"])
    if inspect.isawaitable(produced):
        produced = await produced
    return ScorerRun(output=_as_output(produced), **common)


def _as_output(value: Any) -> list[Message]:
    return coerce_messages(value if value is not None else "", default_role="assistant")
