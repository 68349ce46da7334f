"""The agent's tool loop and its live-scoring hook, against scripted endpoints."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import anyio
import pytest
import trio

from agentscore import Agent, tool
from agentscore.errors import ConfigurationError
from agentscore.evals import Evals, SampledScorer
from agentscore.judges import OpenAIJudge
from agentscore.pipeline.retry import RetryPolicy
from agentscore.pipeline.runner import Runner
from agentscore.result import ScoreStatus
from agentscore.scorers import (
    create_faithfulness_scorer,
    create_hallucination_scorer,
)
from agentscore.testing import ScriptedEndpoint, chat_completion, http_error
from tests.support.agent import (
    ORDER_ANSWER,
    agent_endpoint,
    judge_endpoint,
    lookup_order,
    tool_context,
)


def make_agent(judge: ScriptedEndpoint, runner: Runner, **evals: Any) -> tuple[Agent, Any]:
    model = agent_endpoint()
    scorer = create_hallucination_scorer(
        OpenAIJudge("judge", client=judge.client(max_retries=0)), get_context=tool_context
    )
    agent = Agent(
        name="support",
        model="agent-model",
        instructions="Answer from tools.",
        tools=[lookup_order],
        client=model.client(max_retries=0),
        evals=Evals(scorers=[scorer], runner=runner, **evals),
    )
    return agent, model


@pytest.mark.anyio
async def test_tool_loop_then_live_hallucination_score_from_tool_results() -> None:
    runner = Runner()
    judge = judge_endpoint()
    agent, model = make_agent(judge, runner)

    result = await agent.generate("Where is order 42?")

    assert result.text == ORDER_ANSWER
    assert [m.role for m in result.output] == ["assistant", "tool", "assistant"]
    assert json.loads(result.output[1].content or "")["status"] == "shipped"
    assert result.messages[0].role == "system"
    assert result.usage.requests == 2 and result.usage.input_tokens == 200
    assert result.steps == 2
    assert result.response_id and result.trace_id and result.span_id
    tools_sent = model.requests[0]["tools"][0]["function"]
    assert tools_sent["name"] == "lookup_order"
    assert tools_sent["parameters"]["properties"]["order_id"]["type"] == "integer"

    assert await agent.aflush(timeout=10)
    [score] = agent.scores
    assert score.status is ScoreStatus.SCORED
    assert score.score == 0.0
    assert score.run_id == result.run_id
    assert score.trace_id == result.trace_id
    assert score.response_id == result.response_id
    assert '"shipped": "May 2"' in judge.requests[0]["messages"][1]["content"]
    assert runner.stats().scored == 1


@pytest.mark.anyio
async def test_generate_returns_before_a_slow_judge_finishes() -> None:
    runner = Runner()
    agent, _ = make_agent(judge_endpoint(delay=2.0), runner)

    started = time.perf_counter()
    await agent.generate("Where is order 42?")

    # Returned with the judge's 2 s still to run: no score yet, the job pending.
    assert agent.scores == []
    assert runner.stats().pending == 1
    assert await agent.aflush(timeout=10)
    assert agent.scores[0].score == 0.0
    assert time.perf_counter() - started >= 2.0


def test_the_same_flow_from_plain_sync_code() -> None:
    runner = Runner()
    agent, _ = make_agent(judge_endpoint(), runner)
    result = agent.generate_sync("Where is order 42?")
    assert result.text == ORDER_ANSWER
    assert agent.flush(timeout=10)
    assert agent.scores[0].score == 0.0


def test_the_same_flow_under_trio() -> None:
    runner = Runner()
    agent, _ = make_agent(judge_endpoint(), runner)

    async def main() -> str:
        result = await agent.generate("Where is order 42?")
        assert await agent.aflush(timeout=10)
        return result.text

    assert trio.run(main) == ORDER_ANSWER
    assert agent.scores[0].score == 0.0


def test_sync_calls_from_inside_a_running_asyncio_loop() -> None:
    """As in a Jupyter cell or a sync FastAPI dependency: a loop runs on this thread."""
    runner = Runner()
    agent, _ = make_agent(judge_endpoint(), runner)

    async def main() -> str:
        asyncio.get_running_loop()
        text = agent.generate_sync("Where is order 42?").text
        assert agent.flush(timeout=10)
        return text

    assert asyncio.run(main()) == ORDER_ANSWER
    assert asyncio.run(main()) == ORDER_ANSWER  # and again: no "event loop is closed"
    assert [s.score for s in agent.scores] == [0.0, 0.0]


@pytest.mark.anyio
async def test_judge_failure_is_a_failed_result_and_the_agent_is_unaffected() -> None:
    runner = Runner()
    judge = ScriptedEndpoint([http_error(401)] * 5)
    agent, _ = make_agent(judge, runner)

    result = await agent.generate("Where is order 42?")

    assert result.text == ORDER_ANSWER
    assert await agent.aflush(timeout=10)
    [score] = agent.scores
    assert score.status is ScoreStatus.FAILED
    assert score.error is not None and score.error.type == "JudgeAuthError"
    assert not score.error.transient
    assert len(judge.requests) == 1  # a permanent failure is not retried
    assert runner.stats().failed == 1


@pytest.mark.anyio
async def test_a_passing_judge_outage_delays_the_score_instead_of_failing_it() -> None:
    runner = Runner(retry=RetryPolicy(first_delay=0.05, max_delay=0.1, window=5))
    calls: list[int] = []

    def outage_then_healthy(body: dict[str, Any]) -> Any:
        calls.append(1)
        claim = {"claim": "Order 42 shipped on May 2.", "verdict": "yes", "reason": "tool"}
        return http_error(503) if len(calls) <= 3 else chat_completion({"claims": [claim]})

    judge = ScriptedEndpoint(outage_then_healthy)
    agent, _ = make_agent(judge, runner)

    assert (await agent.generate("Where is order 42?")).text == ORDER_ANSWER
    assert await agent.aflush(timeout=10)
    [score] = agent.scores
    assert score.status is ScoreStatus.SCORED
    assert len(judge.requests) == 4
    stats = runner.stats()
    assert (stats.scored, stats.failed, stats.delayed, stats.pending) == (1, 0, 0, 0)


@pytest.mark.anyio
async def test_an_outage_longer_than_the_retry_window_fails_with_its_error_type() -> None:
    runner = Runner(retry=RetryPolicy(first_delay=0.05, max_delay=0.05, window=0.3))
    judge = ScriptedEndpoint([http_error(503)] * 50)
    agent, _ = make_agent(judge, runner)

    await agent.generate("Where is order 42?")
    assert await agent.aflush(timeout=10)
    [score] = agent.scores
    assert score.status is ScoreStatus.FAILED
    assert score.error is not None and score.error.type == "JudgeServerError"
    assert score.error.transient
    assert 2 <= len(judge.requests) <= 8  # retried within the window, then given up


@pytest.mark.anyio
async def test_a_shutdown_during_an_outage_ends_the_waiting_run_at_once() -> None:
    # Exit in the middle of a judge outage: the run waiting to retry must not hold the exit
    # for its backoff (an hour here); it tries once more at once, and that result stands.
    runner = Runner(retry=RetryPolicy(first_delay=3600, max_delay=3600, window=7200))
    judge = ScriptedEndpoint([http_error(503)] * 50)
    agent, _ = make_agent(judge, runner)

    await agent.generate("Where is order 42?")
    deadline = time.monotonic() + 60
    while runner.stats().delayed == 0:
        assert time.monotonic() < deadline, "the run never started waiting to retry"
        await anyio.sleep(0.02)
    # Within a minute, not the hour's backoff.
    assert await anyio.to_thread.run_sync(runner.shutdown, 60.0)
    stats = runner.stats()
    assert (stats.failed, stats.delayed, stats.pending) == (1, 0, 0)
    [score] = agent.scores
    assert score.error is not None and score.error.type == "JudgeServerError"
    assert len(judge.requests) == 2  # woken by the shutdown: one last try, and it stands


@pytest.mark.anyio
async def test_sampling_is_deterministic_on_the_trace_id() -> None:
    runner = Runner()
    judge = judge_endpoint()
    model = agent_endpoint()
    judge_client = OpenAIJudge("judge", client=judge.client(max_retries=0))
    half = create_faithfulness_scorer(judge_client, id="half", get_context=tool_context)
    half_too = create_hallucination_scorer(judge_client, id="half-too", get_context=tool_context)
    never = create_faithfulness_scorer(judge_client, id="never", get_context=tool_context)
    agent = Agent(
        name="support",
        model="m",
        tools=[lookup_order],
        client=model.client(max_retries=0),
        evals={
            "scorers": [half, half_too, SampledScorer(never, 0.0)],
            "sampling": 0.5,
            "runner": runner,
        },
    )
    results = [await agent.generate("Where is order 42?") for _ in range(40)]
    assert await agent.aflush(timeout=20)

    scored_runs = {
        s.scorer_id: {s.run_id for s in agent.scores if s.scorer_id == sid}
        for s in agent.scores
        for sid in [s.scorer_id]
    }
    assert "never" not in scored_runs
    assert scored_runs["half"] == scored_runs["half-too"]  # same rate: same traces
    assert 5 <= len(scored_runs["half"]) <= 35
    expected = {
        r.run_id for r in results if (int(r.trace_id or "0", 16) & (2**64 - 1)) / 2**64 < 0.5
    }
    assert scored_runs["half"] == expected


@pytest.mark.anyio
async def test_per_call_override_and_disable() -> None:
    runner = Runner()
    agent, _ = make_agent(judge_endpoint(), runner, sampling=0.0)
    other = create_faithfulness_scorer(
        OpenAIJudge("judge", client=judge_endpoint().client(max_retries=0)),
        id="per-call",
        get_context=tool_context,
    )
    await agent.generate("Where is order 42?")  # sampling 0: nothing
    await agent.generate("Where is order 42?", scorers=[])  # disabled
    await agent.generate("Where is order 42?", scorers=[other], ground_truth="May 5")
    assert await agent.aflush(timeout=10)
    assert [(s.scorer_id, s.score, s.ground_truth) for s in agent.scores] == [
        ("per-call", 1.0, "May 5")
    ]
    assert runner.stats().submitted == 1


@pytest.mark.anyio
async def test_per_call_scorers_take_sampled_scorers_and_reject_other_objects() -> None:
    runner = Runner()
    agent, model = make_agent(judge_endpoint(), runner, sampling=0.0)
    scorer = agent.evals.entries[0].scorer

    await agent.generate("Where is order 42?", scorers=[SampledScorer(scorer, 0.0)])
    await agent.generate("Where is order 42?", scorers=[SampledScorer(scorer, 1.0)])
    requests_before = len(model.requests)
    with pytest.raises(ConfigurationError, match="got str"):
        await agent.generate("Where is order 42?", scorers=["hallucination"])  # type: ignore[list-item]

    assert len(model.requests) == requests_before  # rejected before any model call
    assert await agent.aflush(timeout=10)
    assert runner.stats().submitted == 1
    assert [s.status for s in agent.scores] == [ScoreStatus.SCORED]


@pytest.mark.anyio
async def test_tool_errors_unknown_tools_and_bad_arguments_reach_the_model() -> None:
    @tool
    async def explode() -> str:
        """Always fails."""
        raise RuntimeError("database is down")

    script = [
        chat_completion(
            None,
            tool_calls=[
                ("explode", {}),
                ("no_such_tool", {}),
                ("lookup_order", {"order_id": "not a number"}),
            ],
        ),
        chat_completion("Sorry, I could not look that up."),
    ]
    model = ScriptedEndpoint(script)
    agent = Agent("support", "m", tools=[explode, lookup_order], client=model.client())

    result = await agent.generate("Where is order 42?")

    assert result.text == "Sorry, I could not look that up."
    errors = [json.loads(m.content or "") for m in result.output if m.role == "tool"]
    assert [e["error"] for e in errors] == ["RuntimeError", "LookupError", "ToolArgumentsError"]
    assert "database is down" in errors[0]["message"]
    assert "order_id" in errors[2]["message"]
    sent_back = model.requests[1]["messages"]
    assert [m["role"] for m in sent_back] == ["user", "assistant", "tool", "tool", "tool"]


@pytest.mark.anyio
async def test_max_steps_stops_a_model_that_never_answers() -> None:
    model = ScriptedEndpoint(
        lambda body: chat_completion(None, tool_calls=[("lookup_order", {"order_id": 1})])
    )
    agent = Agent("looper", "m", tools=[lookup_order], client=model.client(), max_steps=3)
    result = await agent.generate("loop")
    assert result.finish_reason == "max_steps"
    assert len(model.requests) == 3
    assert result.text == ""


@pytest.mark.anyio
async def test_the_filter_sees_only_sampled_runs_and_can_veto_them() -> None:
    runner = Runner()
    asked: list[str] = []

    def only_order_questions(run: Any) -> bool:
        asked.append(run.run_id)
        return "order" in str(run.input[0].content)

    unsampled, _ = make_agent(judge_endpoint(), runner, sampling=0.0, filter=only_order_questions)
    await unsampled.generate("Where is order 42?")
    assert asked == []

    sampled, _ = make_agent(judge_endpoint(), runner, filter=only_order_questions)
    await sampled.generate("Where is order 42?")
    await sampled.generate("Where is my parcel?")
    assert len(asked) == 2
    assert await sampled.aflush(timeout=10)
    assert runner.stats().submitted == 1


@pytest.mark.anyio
async def test_a_broken_filter_or_sink_never_reaches_the_agent() -> None:
    runner = Runner()

    def bad_sink(result: Any) -> None:
        raise RuntimeError("sink exploded")

    runner.add_sink(bad_sink)
    agent, _ = make_agent(judge_endpoint(), runner)
    assert (await agent.generate("Where is order 42?")).text == ORDER_ANSWER
    assert await agent.aflush(timeout=10)
    assert runner.stats().scored == 1

    def bad_filter(run: Any) -> bool:
        raise ValueError("filter exploded")

    agent2, _ = make_agent(judge_endpoint(), runner, filter=bad_filter)
    assert (await agent2.generate("Where is order 42?")).text == ORDER_ANSWER
    assert runner.stats().submitted == 1


@pytest.mark.anyio
async def test_an_unexpected_scoring_bug_never_costs_the_caller_its_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: Any) -> float:
        raise ZeroDivisionError("bug in sampling")

    monkeypatch.setattr("agentscore.pipeline.choose.sample_point", broken)
    agent, _ = make_agent(judge_endpoint(), Runner())
    assert (await agent.generate("Where is order 42?")).text == ORDER_ANSWER
