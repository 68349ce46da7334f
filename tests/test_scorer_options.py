"""`ScorerOptions`: every built-in factory takes the same options, the `Scorer` applies them
the same way whichever factory was given them, and a bad one is one `ConfigurationError`
naming it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import pytest
from pydantic import BaseModel

import agentscore.scorers
from agentscore.errors import ConfigurationError
from agentscore.judges import OpenAIJudge
from agentscore.judges.base import JudgeReply, JudgeRequest
from agentscore.run import ScorerRun
from agentscore.scorers import (
    Scorer,
    ScorerOptions,
    ScoreStatus,
    create_answer_relevancy_scorer,
    create_completeness_scorer,
    create_contains_scorer,
    create_context_relevance_scorer,
    create_conversation_completeness_scorer,
    create_faithfulness_scorer,
    create_hallucination_scorer,
    create_json_schema_scorer,
    create_knowledge_retention_scorer,
    create_regex_scorer,
    create_rubric_scorer,
    create_scorer,
    create_task_completion_scorer,
    create_tool_call_accuracy_scorer,
    create_tool_efficiency_scorer,
    create_trajectory_scorer,
)
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion
from tests.support.new_scorers import llm_judge, lookup_order

pytestmark = pytest.mark.anyio

T = TypeVar("T", bound=BaseModel)

# "Where is order 1042?" -> a lookup_order call -> "Order 1042 shipped with UPS.": a run every
# built-in scores (tests.support.new_scorers.check lists the scores).
RUN = ScorerRun(
    input="Where is order 1042?",
    output=[
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup_order", "arguments": '{"order_id": "1042"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": json.dumps({"order": "1042", "status": "shipped", "carrier": "UPS"}),
        },
        {"role": "assistant", "content": "Order 1042 shipped with UPS."},
    ],
)

# The replies of the trace and conversation scorers' judge to RUN (one turn; its steps: the
# model's call, the lookup_order result, the answer): every goal, fact and request kept.
RUN_REPLIES: dict[str, dict[str, Any]] = {
    "goals": {"goals": [{"goal": "where 1042 is", "verdict": "yes", "steps": [2], "reason": "r"}]},
    "answers": {
        "facts": [{"turn": 1, "fact": "Order 1042 shipped with UPS."}],
        "answers": [{"turn": 1, "verdict": "keeps", "facts": [], "reason": "r"}],
    },
    "requests": {
        "requests": [
            {
                "request": "where 1042 is",
                "turn": 1,
                "verdict": "yes",
                "satisfied_in": 1,
                "reason": "r",
            }
        ]
    },
}


def _run_reply(body: dict[str, Any]) -> ScriptedReply:
    schema = body["response_format"]["json_schema"]["schema"]
    return chat_completion(next(v for k, v in RUN_REPLIES.items() if k in schema["properties"]))


def run_judge() -> OpenAIJudge:
    endpoint = ScriptedEndpoint(_run_reply)
    return OpenAIJudge("judge-model", client=endpoint.client(max_retries=0), use_cache=False)


# Each factory with the arguments that are its own; the shared options come as keywords.
FACTORIES: dict[str, Callable[..., Scorer]] = {
    "create_faithfulness_scorer": lambda **options: create_faithfulness_scorer("local", **options),
    "create_hallucination_scorer": lambda **options: create_hallucination_scorer(
        "local", **options
    ),
    "create_answer_relevancy_scorer": lambda **options: create_answer_relevancy_scorer(
        "local", **options
    ),
    "create_context_relevance_scorer": lambda **options: create_context_relevance_scorer(
        "local", **options
    ),
    "create_completeness_scorer": lambda **options: create_completeness_scorer(
        llm_judge(), **options
    ),
    "create_rubric_scorer": lambda **options: create_rubric_scorer(
        llm_judge(), criteria=["Names the carrier."], **options
    ),
    "create_tool_call_accuracy_scorer": lambda **options: create_tool_call_accuracy_scorer(
        tools=[lookup_order], expected_tools=["lookup_order"], **options
    ),
    "create_regex_scorer": lambda **options: create_regex_scorer(r"\bUPS\b", **options),
    "create_json_schema_scorer": lambda **options: create_json_schema_scorer(
        {"type": "object"}, **options
    ),
    "create_contains_scorer": lambda **options: create_contains_scorer(["1042", "UPS"], **options),
    "create_trajectory_scorer": lambda **options: create_trajectory_scorer(
        ["lookup_order"], **options
    ),
    "create_tool_efficiency_scorer": lambda **options: create_tool_efficiency_scorer(
        max_steps=1, **options
    ),
    "create_task_completion_scorer": lambda **options: create_task_completion_scorer(
        run_judge(), **options
    ),
    "create_knowledge_retention_scorer": lambda **options: create_knowledge_retention_scorer(
        run_judge(), **options
    ),
    "create_conversation_completeness_scorer": lambda **options: (
        create_conversation_completeness_scorer(run_judge(), **options)
    ),
}
# The factories whose run of RUN asks the judge.
ASKING = [
    "create_faithfulness_scorer",
    "create_hallucination_scorer",
    "create_answer_relevancy_scorer",
    "create_context_relevance_scorer",
    "create_completeness_scorer",
    "create_rubric_scorer",
    "create_task_completion_scorer",
    "create_knowledge_retention_scorer",
    "create_conversation_completeness_scorer",
]


class SilentJudge:
    """A judge that never answers."""

    model_name = "silent"
    provider_name = "test"

    async def complete(self, request: JudgeRequest[T]) -> JudgeReply[T]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


def test_every_built_in_factory_is_covered_here() -> None:
    exported = {
        name
        for name in agentscore.scorers.__all__
        if name.startswith("create_") and name.endswith("_scorer")
    }
    assert exported - {"create_scorer"} == set(FACTORIES)


@pytest.mark.parametrize("factory", sorted(FACTORIES))
async def test_every_option_is_applied_the_same_way_by_every_factory(
    factory: str, capsys: pytest.CaptureFixture[str]
) -> None:
    build = FACTORIES[factory]
    plain = await build().run(RUN)
    assert plain.status is ScoreStatus.SCORED, plain.error
    assert plain.score is not None and isinstance(plain.reason, str)
    assert capsys.readouterr().out == ""  # verbose is off by default

    scorer = build(scale=10, threshold=0.5, include_reason=False, verbose=True, timeout=30)
    result = await scorer.run(RUN)
    assert result.score is not None

    assert (scorer.scale, scorer.threshold, scorer.timeout) == (10, 5.0, 30)
    assert result.score == pytest.approx(plain.score * 10, abs=0.05)
    assert result.passed is (result.score >= 5 if scorer.higher_is_better else result.score <= 5)
    assert result.label == ("pass" if result.passed else "fail")
    assert result.reason is None  # include_reason=False
    printed = capsys.readouterr().out
    assert f"[agentscore:{scorer.id}] generate_score: {result.score!r}" in printed

    strict = build(strict_mode=True)
    strict_result = await strict.run(RUN)
    perfect = 1.0 if strict.higher_is_better else 0.0
    assert strict.threshold == perfect
    assert strict_result.score == (perfect if plain.score == perfect else 1.0 - perfect)
    assert strict_result.passed is (strict_result.score == perfect)

    named = await build(id="renamed").run(RUN)
    assert named.scorer_id == "renamed"


@pytest.mark.parametrize("factory", ASKING)
async def test_timeout_bounds_a_whole_run_of_every_factory_that_asks_a_judge(
    factory: str,
) -> None:
    result = await FACTORIES[factory](timeout=0.05).run(RUN, judge=SilentJudge())
    assert result.status is ScoreStatus.FAILED
    assert result.error is not None and result.error.type == "ScorerTimeoutError"


def test_one_set_of_options_serves_every_factory() -> None:
    shared: ScorerOptions = {"scale": 5, "strict_mode": False, "timeout": 10}
    scorers = [build(**shared) for build in FACTORIES.values()]
    assert {(s.scale, s.strict_mode, s.timeout) for s in scorers} == {(5, False, 10)}


BAD: list[tuple[dict[str, Any], str]] = [
    ({"scale": "10"}, "scale must be a number, not str"),
    ({"scale": 0}, "scale must be greater than 0, got 0"),
    ({"threshold": "0.5"}, "threshold must be a number, not str"),
    ({"threshold": 2}, "threshold must be at most 1, got 2"),
    ({"threshold": float("nan")}, "threshold must be finite, got nan"),
    ({"strict_mode": "yes"}, "strict_mode must be True or False, not str"),
    ({"include_reason": 0}, "include_reason must be True or False, not int"),
    ({"verbose": None}, "verbose must be True or False, not NoneType"),
    ({"timeout": "5"}, "timeout must be a number, not str"),
    ({"timeout": 0}, "timeout must be greater than 0, got 0"),
    ({"treshold": 0.5}, "unknown option 'treshold'; did you mean 'threshold'?"),
]


@pytest.mark.parametrize("factory", sorted(FACTORIES))
@pytest.mark.parametrize(("options", "message"), BAD, ids=[m for _, m in BAD])
def test_a_bad_option_is_one_configuration_error_naming_it_from_every_factory(
    factory: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        FACTORIES[factory](**options)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("factory", "options", "message"),
    [
        ("create_faithfulness_scorer", {"stepwise": "no"}, "stepwise must be True or False"),
        ("create_hallucination_scorer", {"user_facts": 1}, "user_facts must be True or False"),
        ("create_faithfulness_scorer", {"stepwize": True}, "did you mean 'stepwise'?"),
        ("create_context_relevance_scorer", {"context": "a fact"}, "context must be a list"),
        ("create_context_relevance_scorer", {"get_context": 3}, "get_context must be callable"),
        # Options of the claim scorers only: elsewhere they would be silently ignored.
        ("create_answer_relevancy_scorer", {"context": ["a fact"]}, "unknown option 'context'"),
        ("create_context_relevance_scorer", {"user_facts": True}, "unknown option 'user_facts'"),
    ],
)
def test_the_options_of_some_factories_are_checked_alike(
    factory: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        FACTORIES[factory](**options)


def test_create_scorer_takes_the_same_options_with_the_threshold_on_its_own_scale() -> None:
    scorer = create_scorer(
        id="custom",
        generate_score=lambda params: params.scale / 2,
        scale=10,
        threshold=5,
        include_reason=False,
        timeout=30,
    )
    assert (scorer.scale, scorer.threshold, scorer.include_reason, scorer.timeout) == (
        10,
        5,
        False,
        30,
    )
    result = scorer.run_sync(RUN)
    assert (result.score, result.passed) == (5.0, True)
    with pytest.raises(ConfigurationError, match="unknown option 'scael'; did you mean 'scale'"):
        create_scorer(id="custom", generate_score=lambda params: 1.0, scael=10)  # type: ignore[call-arg]
