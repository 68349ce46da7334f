"""Limits on what a judge takes in and keeps: inputs of any shape, replies of any size."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentscore.errors import ConfigurationError
from agentscore.judges import OpenAIJudge, ResponseCache
from agentscore.judges.openai import DEFAULT_MAX_REPLY_CHARS
from agentscore.protocol.protocol import Claims
from agentscore.run import ScorerRun
from agentscore.scorers import ScoreStatus, create_faithfulness_scorer, create_hallucination_scorer
from agentscore.testing import ScriptedEndpoint, chat_completion
from tests.support.seeds import PYTHON, verify_reply

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
    assert scored.judge_usage.calls == 0  # no request: the local judge sends none


# --- judge replies: bounded in size, and in what the cache keeps ------------------------------

RUN = ScorerRun(input=PYTHON.query, output=PYTHON.response)


def padded_reply(reason_chars: int) -> dict[str, object]:
    """The seed's valid verdicts, with one reason padded to make the reply as long as asked."""
    reply = verify_reply(PYTHON)
    claims = reply["claims"]
    assert isinstance(claims, list)
    claims[0]["reason"] = "r" * reason_chars
    return reply


async def test_a_reply_over_the_default_limit_fails_typed_and_is_not_kept() -> None:
    endpoint = ScriptedEndpoint([chat_completion(padded_reply(2_000_000))] * 3)
    cache = ResponseCache()
    judge = OpenAIJudge("judge-model", client=endpoint.client(), cache=cache)
    result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
    assert result.status is ScoreStatus.FAILED
    assert result.error is not None and result.error.type == "JudgeReplyTooLargeError"
    assert f"more than max_reply_chars ({DEFAULT_MAX_REPLY_CHARS})" in result.error.message
    assert len(endpoint.requests) == 1  # no repair request for a runaway reply
    assert result.judge_usage.calls == 1 and result.judge_usage.output_tokens == 20
    assert len(cache) == 0 and cache.nbytes == 0
    assert result.analyze_step_result is None
    assert len(result.model_dump_json()) < 10_000


async def test_max_reply_chars_is_configurable() -> None:
    good = chat_completion(padded_reply(500))
    assert good.body is not None
    reply_chars = len(good.body["choices"][0]["message"]["content"])
    endpoint = ScriptedEndpoint([good, good])
    tight = OpenAIJudge("judge-model", client=endpoint.client(), max_reply_chars=reply_chars - 1)
    roomy = OpenAIJudge("judge-model", client=endpoint.client(), max_reply_chars=reply_chars)
    failed = await create_faithfulness_scorer(tight, context=PYTHON.context).run(RUN)
    scored = await create_faithfulness_scorer(roomy, context=PYTHON.context).run(RUN)
    assert failed.error is not None and failed.error.type == "JudgeReplyTooLargeError"
    assert scored.status is ScoreStatus.SCORED and scored.score == 0.5


async def test_the_response_cache_is_bounded_by_bytes() -> None:
    outputs = [f"{PYTHON.response} Note {n}." for n in range(4)]
    endpoint = ScriptedEndpoint([chat_completion(padded_reply(3_000))] * 4)
    cache = ResponseCache(max_bytes=8_000)  # room for two of these replies, not three
    judge = OpenAIJudge("judge-model", client=endpoint.client(), cache=cache)
    scorer = create_faithfulness_scorer(judge, context=PYTHON.context)
    for output in outputs:
        assert (await scorer.run({"input": PYTHON.query, "output": output})).score == 0.5
    assert len(cache) == 2
    assert 6_000 < cache.nbytes <= 8_000
    # The two latest are kept: scoring them again sends nothing; the oldest is gone.
    again = [await scorer.run({"input": PYTHON.query, "output": o}) for o in outputs[2:]]
    assert [r.judge_usage.cache_hits for r in again] == [1, 1]
    assert len(endpoint.requests) == 4


def test_a_reply_larger_than_the_whole_cache_is_not_kept() -> None:
    cache = ResponseCache(max_bytes=100)
    cache.put("small", Claims(claims=["short"]))
    cache.put("big", Claims(claims=["x" * 200]))
    assert cache.get("big") is None
    assert cache.get("small") == Claims(claims=["short"])
    assert cache.nbytes == len(b'{"claims":["short"]}')


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"max_reply_chars": 0}, "max_reply_chars"),
        ({"max_reply_chars": "64k"}, "max_reply_chars"),
    ],
)
def test_bad_reply_limits_are_configuration_errors(options: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        OpenAIJudge("judge-model", **options)
    with pytest.raises(ConfigurationError, match="max_bytes"):
        ResponseCache(max_bytes=0)
