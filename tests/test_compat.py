"""The Mastra (older metric API) and deepeval shaped wrappers, against a scripted judge."""

from __future__ import annotations

from typing import Any

import pytest

from agentscore.compat import deepeval, mastra
from agentscore.errors import ConfigurationError
from agentscore.judges import OpenAIJudge
from agentscore.testing import ScriptedEndpoint, chat_completion
from tests.support.seeds import FOUNDED, GROWTH, MARS, PYTHON, TESLA, SeedExample, verify_reply


def judge_for(endpoint: ScriptedEndpoint) -> OpenAIJudge:
    return OpenAIJudge("judge-model", client=endpoint.client(max_retries=0))


def scripted(*examples: SeedExample) -> ScriptedEndpoint:
    return ScriptedEndpoint([chat_completion(verify_reply(example)) for example in examples])


def case_for(example: SeedExample) -> deepeval.LLMTestCase:
    return deepeval.LLMTestCase(
        input=example.query, actual_output=example.response, retrieval_context=example.context
    )


# A judge that finds one of the growth example's claims contradicted by the context.
GROWTH_ONE_CONTRADICTED = {
    "claims": [
        {"claim": "The company had 100 employees in 2020.", "verdict": "yes", "reason": "r"},
        {"claim": "The company has 500 employees now.", "verdict": "yes", "reason": "r"},
        {"claim": "The company will have 1000 employees.", "verdict": "no", "reason": "r"},
    ]
}


# --- Mastra ----------------------------------------------------------------------------------


def test_mastra_company_example_scores_one_with_its_reason() -> None:
    endpoint = scripted(FOUNDED)
    metric = mastra.FaithfulnessMetric(judge_for(endpoint), context=FOUNDED.context, scale=1)

    result = metric.measure(FOUNDED.query, FOUNDED.response)

    assert result.score == 1.0
    assert result.info["reason"] == (
        "The score is 1 because all 2 claims in the output are supported by the context."
    )
    assert result.result.passed is True
    assert len(endpoint.requests) == 1
    prompt = endpoint.requests[0]["messages"][1]["content"]
    assert "Currently employs around 450-550 people." in prompt
    assert FOUNDED.response in prompt


def test_mastra_growth_example_scores_two_thirds() -> None:
    endpoint = scripted(GROWTH)
    metric = mastra.FaithfulnessMetric(judge_for(endpoint), context=GROWTH.context, scale=1)

    result = metric.measure(GROWTH.query, GROWTH.response)

    assert result.score == 0.67
    reason = result.info["reason"]
    assert reason.startswith("The score is 0.67 because 2 of 3 claims are supported.")
    assert "might expand to 1000 employees" in reason
    assert len(endpoint.requests) == 1


def test_mastra_counts_unsure_as_unsupported_on_the_python_example() -> None:
    endpoint = scripted(PYTHON)
    metric = mastra.FaithfulnessMetric(judge_for(endpoint), context=PYTHON.context)
    assert metric.measure(PYTHON.query, PYTHON.response).score == 0.5


def test_mastra_scale_multiplies_the_score() -> None:
    endpoint = scripted(GROWTH)
    metric = mastra.FaithfulnessMetric(judge_for(endpoint), context=GROWTH.context, scale=10)
    result = metric.measure(GROWTH.query, GROWTH.response)
    assert result.score == pytest.approx(6.67)
    assert result.info["reason"].startswith("The score is 6.67 because")


def test_mastra_makes_one_judge_request_per_measure() -> None:
    endpoint = scripted(TESLA, MARS)
    metric = mastra.FaithfulnessMetric(judge_for(endpoint), context=TESLA.context)

    assert metric.measure(TESLA.query, TESLA.response).score == 1.0
    assert len(endpoint.requests) == 1
    assert metric.measure(MARS.query, MARS.response).score == 0.0
    assert len(endpoint.requests) == 2


def test_mastra_judge_failure_gives_no_score_and_keeps_the_error() -> None:
    endpoint = ScriptedEndpoint([])  # 500 for every request
    metric = mastra.FaithfulnessMetric(judge_for(endpoint), context=TESLA.context)
    result = metric.measure(TESLA.query, TESLA.response)
    assert result.score is None
    assert result.info == {"reason": None}
    assert result.result.error is not None
    assert result.result.error.type == "JudgeServerError"
    assert len(endpoint.requests) == 1


@pytest.mark.anyio
async def test_mastra_ameasure() -> None:
    endpoint = scripted(GROWTH)
    metric = mastra.FaithfulnessMetric(judge_for(endpoint), context=GROWTH.context)
    result = await metric.ameasure(GROWTH.query, GROWTH.response)
    assert result.score == 0.67
    assert len(endpoint.requests) == 1


def test_mastra_takes_the_scorer_options() -> None:
    endpoint = scripted(GROWTH)
    metric = mastra.FaithfulnessMetric(
        judge_for(endpoint), context=GROWTH.context, threshold=0.9, include_reason=False
    )
    result = metric.measure(GROWTH.query, GROWTH.response)
    assert (result.score, result.info["reason"], result.result.passed) == (0.67, None, False)


def test_mastra_bad_option_fails_at_construction_naming_it() -> None:
    with pytest.raises(ConfigurationError) as raised:
        mastra.FaithfulnessMetric(context=["a fact"], scale=0)
    assert str(raised.value) == "scale must be greater than 0, got 0"


# --- deepeval --------------------------------------------------------------------------------


def test_deepeval_measure_sets_score_reason_and_success() -> None:
    endpoint = scripted(TESLA)
    metric = deepeval.FaithfulnessMetric(threshold=0.5, model=judge_for(endpoint))

    returned = metric.measure(case_for(TESLA))

    assert returned == 1.0
    assert metric.score == 1.0
    assert metric.reason == (
        "The score is 1 because all 3 claims in the output are supported by the context."
    )
    assert metric.success is True
    assert metric.is_successful() is True
    assert metric.error is None
    assert len(endpoint.requests) == 1
    prompt = endpoint.requests[0]["messages"][1]["content"]
    assert "It has a range of up to 358 miles." in prompt


def test_deepeval_counts_unsure_as_truthful_where_mastra_does_not() -> None:
    endpoint = scripted(PYTHON, PYTHON)
    deepeval_metric = deepeval.FaithfulnessMetric(model=judge_for(endpoint))
    mastra_metric = mastra.FaithfulnessMetric(judge_for(endpoint), context=PYTHON.context)

    assert deepeval_metric.measure(case_for(PYTHON)) == 1.0
    assert mastra_metric.measure(PYTHON.query, PYTHON.response).score == 0.5
    assert len(endpoint.requests) == 2


def test_deepeval_can_use_mastras_rule() -> None:
    endpoint = scripted(PYTHON)
    metric = deepeval.FaithfulnessMetric(
        threshold=0.6, model=judge_for(endpoint), unsure_counts_as_supported=False
    )
    assert metric.measure(case_for(PYTHON)) == 0.5
    assert metric.is_successful() is False


def test_deepeval_contradictions_lower_the_score_below_threshold() -> None:
    endpoint = scripted(MARS)
    metric = deepeval.FaithfulnessMetric(threshold=0.5, model=judge_for(endpoint))
    assert metric.measure(case_for(MARS)) == 0.0
    assert metric.success is False
    assert metric.is_successful() is False
    assert metric.reason is not None
    assert "Contradicted by the context" in metric.reason


def test_deepeval_strict_mode_is_binary_with_threshold_one() -> None:
    endpoint = ScriptedEndpoint(
        [chat_completion(GROWTH_ONE_CONTRADICTED), chat_completion(verify_reply(PYTHON))]
    )
    metric = deepeval.FaithfulnessMetric(threshold=0.3, model=judge_for(endpoint), strict_mode=True)
    assert metric.threshold == 1.0

    # 2 of 3 truthful would be 0.67: strict mode makes it 0.
    assert metric.measure(case_for(GROWTH)) == 0.0
    assert metric.is_successful() is False

    # Every claim truthful (the unsure ones count): a perfect 1 passes.
    assert metric.measure(case_for(PYTHON)) == 1.0
    assert metric.is_successful() is True
    assert len(endpoint.requests) == 2


def test_deepeval_non_strict_keeps_the_fraction() -> None:
    endpoint = ScriptedEndpoint([chat_completion(GROWTH_ONE_CONTRADICTED)])
    metric = deepeval.FaithfulnessMetric(threshold=0.7, model=judge_for(endpoint))
    assert metric.measure(case_for(GROWTH)) == 0.67
    assert metric.is_successful() is False


def test_deepeval_include_reason_false_gives_no_reason() -> None:
    endpoint = scripted(TESLA)
    metric = deepeval.FaithfulnessMetric(model=judge_for(endpoint), include_reason=False)
    assert metric.measure(case_for(TESLA)) == 1.0
    assert metric.reason is None
    assert metric.is_successful() is True


def test_deepeval_verbose_mode_prints_the_intermediate_steps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    endpoint = scripted(GROWTH)
    metric = deepeval.FaithfulnessMetric(model=judge_for(endpoint), verbose_mode=True)
    metric.measure(case_for(GROWTH))

    lines = capsys.readouterr().out.splitlines()
    prefix = "[agentscore:faithfulness] "
    assert all(line.startswith(prefix) for line in lines)
    steps = [line.removeprefix(prefix).split(":", 1)[0] for line in lines]
    assert steps == ["preprocess", "analyze", "generate_score", "generate_reason"]
    assert "The company might expand to 1000 employees by next year." in lines[0]
    assert "'unsure'" in lines[1]
    assert lines[2] == "[agentscore:faithfulness] generate_score: 1.0"


def test_deepeval_not_verbose_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    endpoint = scripted(GROWTH)
    deepeval.FaithfulnessMetric(model=judge_for(endpoint)).measure(case_for(GROWTH))
    assert capsys.readouterr().out == ""


@pytest.mark.anyio
async def test_deepeval_a_measure() -> None:
    endpoint = scripted(PYTHON)
    metric = deepeval.FaithfulnessMetric(threshold=0.5, model=judge_for(endpoint))

    assert await metric.a_measure(case_for(PYTHON)) == 1.0
    assert metric.score == 1.0
    assert metric.is_successful() is True
    assert metric.reason is not None
    assert len(endpoint.requests) == 1


def test_deepeval_makes_one_judge_request_per_measure() -> None:
    endpoint = scripted(TESLA, MARS, FOUNDED)
    metric = deepeval.FaithfulnessMetric(model=judge_for(endpoint))

    for count, example in enumerate([TESLA, MARS, FOUNDED], start=1):
        assert metric.measure(case_for(example)) == example.faithfulness
        assert len(endpoint.requests) == count


def test_deepeval_judge_failure_sets_error_and_is_not_successful() -> None:
    endpoint = ScriptedEndpoint([])  # 500 for every request
    metric = deepeval.FaithfulnessMetric(model=judge_for(endpoint))
    assert metric.measure(case_for(TESLA)) is None
    assert metric.score is None
    assert metric.success is None
    assert metric.is_successful() is False
    assert metric.error is not None and metric.error.startswith("JudgeServerError: ")
    assert len(endpoint.requests) == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"threshold": 1.5}, "threshold must be at most 1, got 1.5"),
        ({"threshold": "0.5"}, "threshold must be a number, not str"),
        ({"strict_mode": "yes"}, "strict_mode must be True or False, not str"),
        ({"include_reason": None}, "include_reason must be True or False, not NoneType"),
        ({"verbose_mode": 1}, "verbose_mode must be True or False, not int"),
        ({"unsure_counts_as_supported": "no"}, "unsure_counts_as_supported must be True or"),
    ],
)
def test_deepeval_bad_option_fails_at_construction_naming_it(
    options: dict[str, Any], message: str
) -> None:
    endpoint = ScriptedEndpoint([])
    with pytest.raises(ConfigurationError) as raised:
        deepeval.FaithfulnessMetric(model=judge_for(endpoint), **options)
    assert str(raised.value).startswith(message)
    assert endpoint.requests == []


def test_deepeval_result_keeps_the_case_for() -> None:
    endpoint = scripted(FOUNDED)
    metric = deepeval.FaithfulnessMetric(model=judge_for(endpoint))
    case = deepeval.LLMTestCase(
        input=FOUNDED.query,
        actual_output=FOUNDED.response,
        retrieval_context=FOUNDED.context,
        expected_output="Founded 1995, about 500 staff.",
    )
    metric.measure(case)
    assert metric.result is not None
    assert metric.result.ground_truth == "Founded 1995, about 500 staff."
    assert metric.result.input[0].content == FOUNDED.query
    assert metric.result.context == FOUNDED.context
