"""Options of the wrong type or out of range are ConfigurationErrors naming the option, raised
at construction, never TypeErrors or failures of every run later."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentscore import Evals
from agentscore.errors import ConfigurationError
from agentscore.evals import SampledScorer
from agentscore.judges import OpenAIJudge
from agentscore.pipeline.runner import Runner
from agentscore.scorers import create_faithfulness_scorer, create_hallucination_scorer

SCORER = create_faithfulness_scorer("local")

CASES: list[tuple[str, Callable[[], Any]]] = [
    ("sampling", lambda: Evals(sampling="0.5")),  # type: ignore[arg-type]
    ("sampling", lambda: Evals(sampling=float("nan"))),
    ("sampling", lambda: Evals(sampling=1.5)),
    ("sampling", lambda: SampledScorer(SCORER, "0.1")),  # type: ignore[arg-type]
    ("max_queue", lambda: Runner(max_queue="10")),  # type: ignore[arg-type]
    ("max_queue", lambda: Runner(max_queue=2.5)),  # type: ignore[arg-type]
    ("concurrency", lambda: Runner(concurrency=0)),
    ("run_timeout", lambda: Runner(run_timeout="30")),  # type: ignore[arg-type]
    ("sink_timeout", lambda: Runner(sink_timeout=-1)),
    ("drop_log_interval", lambda: Runner(drop_log_interval=None)),  # type: ignore[arg-type]
    ("threshold", lambda: create_faithfulness_scorer("local", threshold="0.5")),  # type: ignore[arg-type]
    ("threshold", lambda: create_hallucination_scorer("local", threshold=2)),
    ("scale", lambda: create_hallucination_scorer("local", scale="10")),  # type: ignore[arg-type]
    ("timeout", lambda: create_faithfulness_scorer("local", timeout="5")),  # type: ignore[arg-type]
    ("max_retries", lambda: OpenAIJudge("m", max_retries=-1)),
    ("max_retries", lambda: OpenAIJudge("m", max_retries=True)),
    ("timeout", lambda: OpenAIJudge("m", timeout=0)),
    ("temperature", lambda: OpenAIJudge("m", temperature=-0.5)),
    ("output_mode", lambda: OpenAIJudge("m", output_mode="xml")),  # type: ignore[arg-type]
    ("model", lambda: OpenAIJudge("")),
]


@pytest.mark.parametrize(
    ("option", "build"), CASES, ids=[f"{o}-{i}" for i, (o, _) in enumerate(CASES)]
)
def test_a_bad_option_is_a_configuration_error_naming_it(
    option: str, build: Callable[[], Any]
) -> None:
    with pytest.raises(ConfigurationError, match=option) as raised:
        build()
    assert not isinstance(raised.value, TypeError)


def test_good_options_are_kept() -> None:
    runner = Runner(max_queue=10, concurrency=2, run_timeout=None, sink_timeout=1)
    assert (runner.max_queue, runner.concurrency, runner.run_timeout) == (10, 2, None)
    assert Evals(sampling=1).sampling == 1
    scorer = create_faithfulness_scorer("local", scale=10, threshold=0.7, timeout=5)
    assert scorer.threshold == 7.0
    assert OpenAIJudge("m", max_retries=0, temperature=0.3).model_name == "m"


@pytest.mark.parametrize(
    ("option", "value"),
    [("scale", "1"), ("threshold", "0.5"), ("timeout", "3"), ("scale", 0), ("threshold", 2.0)],
)
def test_create_scorer_options_of_the_wrong_type_or_range_name_the_option(
    option: str, value: object
) -> None:
    from agentscore.scorers import create_scorer

    with pytest.raises(ConfigurationError, match=option):
        create_scorer(id="custom", generate_score=lambda params: 1.0, **{option: value})  # type: ignore[arg-type]


FLAG_CASES: list[tuple[str, Callable[[], Any]]] = [
    ("user_facts", lambda: create_faithfulness_scorer("local", user_facts="no")),  # type: ignore[arg-type]
    ("strict_mode", lambda: create_hallucination_scorer("local", strict_mode="yes")),  # type: ignore[arg-type]
    ("include_reason", lambda: create_faithfulness_scorer("local", include_reason=0)),  # type: ignore[arg-type]
    ("verbose", lambda: create_hallucination_scorer("local", verbose=None)),  # type: ignore[arg-type]
    (
        "unsure_counts_as_supported",
        lambda: create_faithfulness_scorer("local", unsure_counts_as_supported="true"),  # type: ignore[arg-type]
    ),
]


@pytest.mark.parametrize(("option", "build"), FLAG_CASES, ids=[o for o, _ in FLAG_CASES])
def test_a_flag_that_is_not_a_bool_is_a_configuration_error(
    option: str, build: Callable[[], Any]
) -> None:
    # "no" is truthy: read as a flag it would silently do the opposite of what was meant.
    with pytest.raises(ConfigurationError, match=f"{option} must be True or False"):
        build()


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("request_context", [1, 2, 3], "request_context must be a dict"),
        ("conversation_id", 42, "conversation_id must be a string"),
        ("agent_name", ["support"], "agent_name must be a string"),
    ],
)
def test_evals_submit_names_an_option_of_the_wrong_type(
    option: str, value: object, says: str
) -> None:
    evals = Evals(scorers=[SCORER])
    with pytest.raises(ConfigurationError, match=says) as raised:
        evals.submit("Where is my order?", "It shipped.", **{option: value})  # type: ignore[arg-type]
    assert not isinstance(raised.value, TypeError)


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("request_context", [1, 2, 3], "request_context must be a dict"),
        ("conversation_id", 7, "conversation_id must be a string"),
    ],
)
def test_agent_generate_names_an_option_of_the_wrong_type_before_any_model_call(
    option: str, value: object, says: str
) -> None:
    from agentscore import Agent
    from tests.support.chat import judge_reply
    from tests.support.http_server import http_server

    with http_server(judge_reply("It shipped.")) as server:
        agent = Agent("support", "agent-model", base_url=server.base_url, api_key="sk-x-unused")
        with pytest.raises(ConfigurationError, match=says):
            agent.generate_sync("Where is my order?", **{option: value})  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match=says):
            list(agent.stream_sync("Where is my order?", **{option: value}))  # type: ignore[arg-type]
        assert server.requests == []  # refused before the model was asked
        assert agent.generate_sync("Where is my order?", request_context={"a": 1}).text
