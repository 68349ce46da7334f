"""run_evals: targets, per-item failures, averages."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentscore import Agent
from agentscore.ci.batch import EvalItemResult, run_evals, run_evals_sync
from agentscore.context import run_context
from agentscore.errors import ConfigurationError
from agentscore.scorers import create_faithfulness_scorer, create_hallucination_scorer
from tests.support.agent import agent_endpoint, lookup_order

CONTEXT = ["The first version of Python was released in 1991."]

pytestmark = pytest.mark.anyio


async def test_recorded_outputs_are_scored_and_averaged() -> None:
    data = [
        {"input": "When?", "output": "Python was first released in 1991.", "context": CONTEXT},
        {"input": "When?", "output": "Python was first released in 2005.", "context": CONTEXT},
    ]
    completed: list[EvalItemResult] = []
    report = await run_evals(
        data,
        [create_faithfulness_scorer("local", get_context=run_context)],
        on_item_complete=completed.append,
    )
    assert report.scores == {"faithfulness": 0.5}
    assert report.summaries["faithfulness"].pass_rate == 0.5
    assert sorted(item.index for item in completed) == [0, 1]


async def test_an_async_item_callback_is_awaited() -> None:
    data = [{"input": "When?", "output": "Python was first released in 1991.", "context": CONTEXT}]
    seen: list[int] = []

    async def completed(item: EvalItemResult) -> None:
        await anyio.sleep(0.001)
        seen.append(item.index)

    scorer = create_faithfulness_scorer("local", get_context=run_context)
    await run_evals(data, [scorer], on_item_complete=completed)
    assert seen == [0]


async def test_a_failing_item_is_recorded_and_the_run_goes_on() -> None:
    def target(question: str) -> str:
        if question == "boom":
            raise RuntimeError("target broke")
        return "Python was first released in 1991."

    data: list[dict[str, Any]] = [
        {"input": "boom"},
        {"input": "When?", "context": CONTEXT},
        {"no": "input"},
    ]
    report = await run_evals(
        data, [create_hallucination_scorer("local", get_context=run_context)], target=target
    )
    errors = {item.index: item.error for item in report.items}
    assert errors[0] == "RuntimeError: target broke"
    assert errors[1] is None
    assert errors[2] == "ValueError: an item needs an 'input' (or 'messages')"
    assert report.scores == {"hallucination": 0.0}
    # The two items that never reached the scorer count as failed, not as missing.
    summary = report.summaries["hallucination"]
    assert (summary.scored, summary.failed) == (1, 2)
    assert summary.pass_rate == pytest.approx(1 / 3)


async def test_when_every_item_errors_nothing_passes() -> None:
    def target(question: str) -> str:
        raise ConnectionError("agent endpoint down")

    data = [{"input": f"question {n}", "context": CONTEXT} for n in range(5)]
    scorers = [
        create_faithfulness_scorer("local", get_context=run_context),
        create_hallucination_scorer("local", get_context=run_context),
    ]
    report = await run_evals(data, scorers, target=target)
    for summary in report.summaries.values():
        assert (summary.scored, summary.failed, summary.pass_rate) == (0, 5, 0.0)
        assert summary.mean is None


async def test_items_in_the_messages_form_are_split_after_the_last_user_message() -> None:
    item = {
        "id": "conversation",
        "context": CONTEXT,
        "messages": [
            {"role": "system", "content": "Answer from the context."},
            {"role": "user", "content": "When was Python released?"},
            {"role": "assistant", "content": "Python was first released in 1991."},
        ],
    }
    report = await run_evals([item], [create_faithfulness_scorer("local", get_context=run_context)])
    [result] = report.items
    assert result.error is None and result.run is not None
    assert result.run.input_text == "When was Python released?"
    assert result.run.output_text == "Python was first released in 1991."
    assert result.run.run_id == "conversation"
    assert report.summaries["faithfulness"].pass_rate == 1.0


async def test_default_thresholds_fail_an_answer_with_half_its_claims_invented() -> None:
    half_invented = {
        "input": "When was Python released?",
        "output": "Python was first released in 1991. It was written at Google in Zurich.",
        "context": CONTEXT,
    }
    faithfulness = create_faithfulness_scorer("local", get_context=run_context)
    hallucination = create_hallucination_scorer("local", get_context=run_context)
    report = await run_evals([half_invented], [faithfulness, hallucination])
    [item] = report.items
    assert item.scorer_results["faithfulness"].score == 0.5
    assert item.scorer_results["hallucination"].score == 0.5
    assert item.scorer_results["faithfulness"].label == "fail"
    assert item.scorer_results["hallucination"].label == "fail"
    assert report.summaries["faithfulness"].pass_rate == 0.0
    assert report.summaries["hallucination"].pass_rate == 0.0


async def test_an_agent_target_and_an_async_callable() -> None:
    agent = Agent("support", "m", tools=[lookup_order], client=agent_endpoint().client())
    scorer = create_faithfulness_scorer("local")  # context: the agent's tool results
    report = await run_evals([{"input": "Where is order 42?"}], [scorer], target=agent)
    [item] = report.items
    assert item.run is not None and item.run.trace_id is not None
    result = item.scorer_results["faithfulness"]
    assert result.status.value == "scored"
    assert result.context is not None
    assert '"status": "shipped"' in result.context[0]

    async def async_target(question: str) -> Any:
        return [{"role": "assistant", "content": "Python was first released in 1991."}]

    report = await run_evals(
        [{"input": "When?", "context": CONTEXT}],
        [create_faithfulness_scorer("local", get_context=run_context)],
        target=async_target,
    )
    assert report.scores["faithfulness"] == 1.0


def test_sync_form_from_plain_code() -> None:
    report = run_evals_sync(
        [{"input": "When?", "output": "Python was first released in 1991.", "context": CONTEXT}],
        [create_faithfulness_scorer("local", get_context=run_context)],
        concurrency=1,
    )
    assert report.scores["faithfulness"] == 1.0


async def test_trace_scorers_judge_each_items_own_trajectory() -> None:
    from tests.support.level_scorers import ANSWERED_EVERY_TURN, NO_REPEATS

    def called(call_id: str) -> dict[str, Any]:
        function = {"name": "lookup_order", "arguments": "{}"}
        tool_call = {"id": call_id, "type": "function", "function": function}
        return {"role": "assistant", "content": None, "tool_calls": [tool_call]}

    output = [called("c1"), {"role": "tool", "tool_call_id": "c1", "content": "shipped"}]
    output += [called("c2"), {"role": "tool", "tool_call_id": "c2", "content": "shipped"}]
    data = [{"input": "Where is 42?", "output": [*output, "Shipped."]}]
    report = await run_evals(data, [NO_REPEATS])
    [item] = report.items
    result = item.scorer_results["no_repeats"]
    assert (result.score, result.reason) == (
        0.0,
        "lookup_order called 2 times with the same arguments",
    )
    with pytest.raises(ConfigurationError, match="answered_every_turn judge conversations"):
        await run_evals(data, [NO_REPEATS, ANSWERED_EVERY_TURN])
