"""Limits on what a judge takes in and keeps: inputs of any shape, replies of any size."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentscore.scorers import ScoreStatus, create_hallucination_scorer

pytestmark = pytest.mark.anyio


def tool_conversation(result: str, answer: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
        {"role": "assistant", "content": answer},
    ]


@pytest.mark.parametrize(
    "result",
    [
        json.dumps([0] * 100_000),
        "[" * 10_000 + "0" + "]" * 10_000,
        '{"a": ' * 10_000 + "0" + "}" * 10_000,
        '{"a": ' * 900 + "[" + ",".join(["0"] * 900) + "]" + "}" * 900,
    ],
    ids=["flat-100000", "deep-list-10000", "deep-object-10000", "deep-900-wide-900"],
)
async def test_large_and_deep_tool_results_are_scored_by_the_local_judge(result: str) -> None:
    scorer = create_hallucination_scorer("local")
    answer = "The result is 0. The result is 7."
    scored = await scorer.run({"output": tool_conversation(result, answer)})
    assert scored.status is ScoreStatus.SCORED, scored.error
    verdicts = [v["verdict"] for v in scored.analyze_step_result["verdicts"]]
    assert verdicts[0] == "yes" and verdicts[1] != "yes"
    assert scored.score == 0.5  # one of two claims not supported
    assert scored.judge_usage.calls == 1
