"""The cascade judge: the local judge decides what it is sure of, the LLM judge the rest,
in one request per run, through the real openai client and a scripted endpoint."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from agentscore.errors import ConfigurationError
from agentscore.judges import CascadeJudge, LocalJudge, OpenAIJudge
from agentscore.judges.base import JudgeReply, JudgeRequest
from agentscore.scorers import (
    JudgePrompt,
    ScoreStatus,
    create_faithfulness_scorer,
    create_hallucination_scorer,
    create_scorer,
)
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion, http_error
from tests.support.cascade import (
    CONTEXT,
    INVENTED,
    SURE_ANSWER,
    answering,
    cascade,
    claims_in,
    run,
    verdict_rows,
)
from tests.support.otel import Otel, number_point

pytestmark = pytest.mark.anyio


def cascade_points(otel: Otel, name: str) -> dict[tuple[tuple[str, Any], ...], int]:
    data = otel.metrics.get_metrics_data()
    points: dict[tuple[tuple[str, Any], ...], int] = {}
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        attributes = (point.attributes or {}).items()
                        points[tuple(sorted(attributes))] = int(number_point(point).value)
    return points


async def test_only_the_unsure_claims_go_to_the_llm_in_one_request() -> None:
    endpoint = ScriptedEndpoint(answering("yes"))
    scorer = create_hallucination_scorer(cascade(endpoint), context=CONTEXT)
    result = await scorer.run(run())
    assert result.status is ScoreStatus.SCORED
    assert len(endpoint.requests) == 1
    assert claims_in(endpoint.requests[0]) == [INVENTED]
    assert verdict_rows(result) == [
        ("Order 1042 shipped on 18 November 2026 with UPS.", "yes", "local"),
        ("Returns are accepted within 60 days of delivery.", "no", "local"),
        (INVENTED, "yes", "judge-llm"),
    ]
    # The LLM's "yes" replaced the local "unsure": only the contradiction is hallucinated.
    assert result.score == 0.33
    assert result.judge_model == "local+judge-llm"


async def test_cost_is_the_one_llm_request_the_local_judge_sends_none() -> None:
    endpoint = ScriptedEndpoint(answering("unsure"))
    result = await create_hallucination_scorer(cascade(endpoint), context=CONTEXT).run(run())
    assert result.judge_usage.calls == 1 == len(endpoint.requests)
    assert result.judge_usage.input_tokens == 300
    assert result.judge_usage.output_tokens == 40
    assert result.score == 0.67


async def test_a_run_the_local_judge_is_sure_of_sends_no_request(otel: Otel) -> None:
    before = cascade_points(otel, "agentscore.cascade.runs")
    endpoint = ScriptedEndpoint(answering("no"))
    scorer = create_faithfulness_scorer(cascade(endpoint), context=CONTEXT)
    result = await scorer.run(run(SURE_ANSWER))
    assert endpoint.requests == []
    assert result.score == 1.0
    assert result.judge_usage.calls == 0
    assert result.judge_usage.input_tokens == 0
    after = cascade_points(otel, "agentscore.cascade.runs")
    key = (("agentscore.cascade.route", "local"),)
    assert after[key] == before.get(key, 0) + 1


async def test_metrics_count_local_decisions_and_escalations(otel: Otel) -> None:
    before = cascade_points(otel, "agentscore.cascade.claims")
    endpoint = ScriptedEndpoint(answering("yes"))
    await create_hallucination_scorer(cascade(endpoint), context=CONTEXT).run(run())
    after = cascade_points(otel, "agentscore.cascade.claims")
    local = (("agentscore.cascade.decision", "local"),)
    escalated = (("agentscore.cascade.decision", "escalated"),)
    assert after[local] - before.get(local, 0) == 2
    assert after[escalated] - before.get(escalated, 0) == 1


async def test_calibration_sends_every_claim_and_counts_agreement(otel: Otel) -> None:
    before = cascade_points(otel, "agentscore.cascade.claims")
    # The LLM agrees that the first claim holds and disagrees on the contradiction.
    endpoint = ScriptedEndpoint(answering("yes"))
    judge = cascade(endpoint, calibration=1.0)
    result = await create_hallucination_scorer(judge, context=CONTEXT).run(run())
    assert len(endpoint.requests) == 1
    assert len(claims_in(endpoint.requests[0])) == 3
    # On a calibration run the LLM decides every claim.
    assert {row[2] for row in verdict_rows(result)} == {"judge-llm"}
    assert result.score == 0.0
    after = cascade_points(otel, "agentscore.cascade.claims")
    agree = (
        ("agentscore.cascade.agreement", "agree"),
        ("agentscore.cascade.decision", "calibration"),
    )
    disagree = (
        ("agentscore.cascade.agreement", "disagree"),
        ("agentscore.cascade.decision", "calibration"),
    )
    assert after[agree] - before.get(agree, 0) == 1
    assert after[disagree] - before.get(disagree, 0) == 1


async def test_a_figure_the_context_negates_goes_to_the_llm() -> None:
    # "20" is in the context, as a number never to take: the digits match, the claim does not.
    endpoint = ScriptedEndpoint(answering("no"))
    context = ["Take 2 pills daily, never 20."]
    scorer = create_faithfulness_scorer(cascade(endpoint), context=context)
    result = await scorer.run(run("Take 2 pills daily. Take 20 pills daily."))
    assert [claims_in(body) for body in endpoint.requests] == [["Take 20 pills daily."]]
    assert verdict_rows(result) == [
        ("Take 2 pills daily.", "yes", "local"),
        ("Take 20 pills daily.", "no", "judge-llm"),
    ]


async def test_the_same_run_sent_again_is_drawn_again_for_calibration() -> None:
    # In `agentscore serve` the run id comes from trace and span ids the sender picks: a
    # share chosen by any function of the request (its id, its content) could be avoided.
    endpoint = ScriptedEndpoint(answering("yes"))
    scorer = create_faithfulness_scorer(cascade(endpoint, calibration=0.5), context=CONTEXT)
    for _ in range(40):
        await scorer.run(run(SURE_ANSWER, run_id="the-same-run"))
    assert 0 < len(endpoint.requests) < 40


async def test_by_default_about_one_run_in_fifty_goes_to_both_stages() -> None:
    endpoint = ScriptedEndpoint(answering("yes"))
    llm = OpenAIJudge("judge-llm", client=endpoint.client(max_retries=0), use_cache=False)
    judge = CascadeJudge(then=llm, seed=7)  # seeded: the share drawn is the same every time
    assert judge.calibration == 0.02
    scorer = create_faithfulness_scorer(judge, context=CONTEXT)
    for _ in range(1000):
        await scorer.run(run(SURE_ANSWER))
    # Every claim of SURE_ANSWER is decided locally: only calibration runs send a request.
    assert 10 <= len(endpoint.requests) <= 30
    assert judge.agreement()["yes"].compared == len(endpoint.requests)


class CrashingLocalJudge(LocalJudge):
    """The local judge with a fault injected: it dies on every request."""

    async def complete(self, request: JudgeRequest[Any]) -> JudgeReply[Any]:
        raise MemoryError("injected fault in the local judge")


async def test_a_local_crash_sends_the_whole_run_to_the_llm() -> None:
    reply = {
        "claims": [
            {"claim": "Order 1042 shipped with UPS.", "verdict": "yes", "reason": "r"},
            {"claim": "Returns take 60 days.", "verdict": "no", "reason": "r"},
        ]
    }
    endpoint = ScriptedEndpoint([chat_completion(reply)])
    llm = OpenAIJudge("judge-llm", client=endpoint.client(max_retries=0))
    judge = CascadeJudge(first=CrashingLocalJudge(), then=llm)
    result = await create_faithfulness_scorer(judge, context=CONTEXT).run(run())
    assert result.status is ScoreStatus.SCORED
    assert len(endpoint.requests) == 1
    assert "Split the ANSWER into claims" in endpoint.requests[0]["messages"][-1]["content"]
    assert [row[2] for row in verdict_rows(result)] == ["judge-llm", "judge-llm"]
    assert result.score == 0.5
    assert result.judge_usage.calls == 2  # the crashed local attempt and the LLM request


async def test_an_llm_failure_fails_the_run_with_the_llm_error_type() -> None:
    endpoint = ScriptedEndpoint([http_error(429, "slow down")])
    result = await create_hallucination_scorer(cascade(endpoint), context=CONTEXT).run(run())
    assert result.status is ScoreStatus.FAILED
    assert result.score is None
    assert result.error is not None
    assert result.error.type == "JudgeRateLimitError"
    assert result.judge_usage.calls == 1  # the refused request (the local judge sends none)
    assert "sk-test" not in result.error.message


async def test_an_llm_failure_can_keep_the_local_verdicts() -> None:
    endpoint = ScriptedEndpoint([http_error(503, "down")])
    judge = cascade(endpoint, on_llm_error="local")
    result = await create_hallucination_scorer(judge, context=CONTEXT).run(run())
    assert result.status is ScoreStatus.SCORED
    assert [row[1:] for row in verdict_rows(result)] == [
        ("yes", "local"),
        ("no", "local"),
        ("unsure", "local"),
    ]
    assert result.score == 0.67
    assert result.judge_usage.calls == 1


async def test_stepwise_scoring_escalates_once_and_splits_and_reasons_locally() -> None:
    endpoint = ScriptedEndpoint(answering("yes"))
    scorer = create_hallucination_scorer(cascade(endpoint), context=CONTEXT, stepwise=True)
    result = await scorer.run(run())
    assert len(endpoint.requests) == 1
    assert claims_in(endpoint.requests[0]) == [INVENTED]
    assert result.score == 0.33
    assert result.reason is not None and result.reason.startswith("The score is 0.33")


class Tone(BaseModel):
    polite: bool


async def test_a_custom_prompt_goes_straight_to_the_llm() -> None:
    endpoint = ScriptedEndpoint([chat_completion({"polite": True})])
    scorer = create_scorer(
        id="tone",
        judge=cascade(endpoint),
        analyze=JudgePrompt("tone", lambda p: f"Is this polite? {p.run.output_text}", Tone),
        generate_score=lambda p: 1.0 if p.results["analyze_step_result"]["polite"] else 0.0,
    )
    result = await scorer.run(run("Thank you for waiting."))
    assert result.score == 1.0
    assert len(endpoint.requests) == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"then": None}, "needs an LLM judge"),
        ({"then": "local"}, "needs an LLM judge"),
        ({"then": "gpt-4o-mini", "calibration": 1.5}, "calibration"),
        ({"then": "gpt-4o-mini", "confident_at": -0.1}, "confident_at"),
        ({"then": "gpt-4o-mini", "on_llm_error": "ignore"}, "on_llm_error"),
        ({"then": "gpt-4o-mini", "escalate": "all"}, "escalate"),
    ],
)
def test_bad_options_fail_at_construction(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        CascadeJudge(**options)


async def test_a_plain_llm_judge_is_recorded_as_the_decider_without_a_confidence() -> None:
    reply = {"claims": [{"claim": SURE_ANSWER, "verdict": "yes", "reason": "r"}]}
    endpoint = ScriptedEndpoint([chat_completion(reply)])
    llm = OpenAIJudge("judge-llm", client=endpoint.client(max_retries=0))
    result = await create_faithfulness_scorer(llm, context=CONTEXT).run(run(SURE_ANSWER))
    [verdict] = result.analyze_step_result["verdicts"]
    assert verdict["decided_by"] == "judge-llm"
    assert "confidence" not in verdict


def test_confidence_and_decider_are_never_asked_of_an_llm() -> None:
    from agentscore.judges._structured import strict_schema
    from agentscore.protocol.protocol import ClaimVerdicts, Verdicts

    for model in (ClaimVerdicts, Verdicts):
        text = json.dumps(strict_schema(model))
        assert "confidence" not in text
        assert "decided_by" not in text


def test_local_plus_a_model_name_is_a_cascade_wherever_a_name_is_accepted() -> None:
    scorer = create_hallucination_scorer("local+gpt-4o-mini", context=CONTEXT)
    assert isinstance(scorer.judge, CascadeJudge)
    assert scorer.judge.model_name == "local+gpt-4o-mini"
    assert scorer.judge.then.model_name == "gpt-4o-mini"
    # A run the local judge is sure of never reaches the (unconfigured) LLM, once the
    # calibration draws that would send 2% of such runs there are off.
    scorer.judge.calibration = 0.0
    result = scorer.run_sync(run(SURE_ANSWER))
    assert (result.score, result.judge_model) == (0.0, "local+gpt-4o-mini")
    with pytest.raises(ConfigurationError, match="must not be empty"):
        create_hallucination_scorer("local+")


def test_a_live_agent_scores_through_the_cascade_and_counts_on_its_own_meter() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from agentscore import Agent, tool
    from agentscore.context import run_context
    from agentscore.evals import Evals
    from agentscore.pipeline.runner import Runner
    from agentscore.telemetry import Telemetry

    @tool
    def lookup_order(order_id: int) -> dict[str, Any]:
        """Look up an order by its id."""
        return {"order_id": order_id, "status": "shipped", "shipped_on": "May 2"}

    answers = iter(["Order 42 shipped on May 2.", "Order 42 shipped on May 2 with DHL Express."])

    def model(body: dict[str, Any]) -> ScriptedReply:
        if body["messages"][-1]["role"] == "tool":
            return chat_completion(next(answers))
        return chat_completion(None, tool_calls=[("lookup_order", {"order_id": 42})])

    reader = InMemoryMetricReader()
    judge = ScriptedEndpoint(answering("no"))
    agent = Agent(
        name="support",
        model="agent-model",
        tools=[lookup_order],
        client=ScriptedEndpoint(model).client(max_retries=0),
        telemetry=Telemetry(meter_provider=MeterProvider(metric_readers=[reader])),
        evals=Evals(
            scorers=[create_hallucination_scorer(cascade(judge), get_context=run_context)],
            runner=Runner(),
        ),
    )
    agent.generate_sync("Where is order 42?")
    agent.generate_sync("Where is order 42, and who carries it?")
    assert agent.flush(timeout=30)
    by_answer = {result.output[-1].content: result for result in agent.scores}
    sure = by_answer["Order 42 shipped on May 2."]
    escalated = by_answer["Order 42 shipped on May 2 with DHL Express."]
    assert (sure.score, sure.judge_usage.calls) == (0.0, 0)
    assert (escalated.score, escalated.judge_usage.calls) == (1.0, 1)
    assert len(judge.requests) == 1
    data = reader.get_metrics_data()
    assert data is not None
    routes = {
        dict(point.attributes or {})["agentscore.cascade.route"]: number_point(point).value
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "agentscore.cascade.runs"
        for point in metric.data.data_points
    }
    assert routes == {"local": 1, "escalated": 1}


async def test_escalating_whole_runs_sends_every_claim_once_a_request_is_needed(
    otel: Otel,
) -> None:
    before = cascade_points(otel, "agentscore.cascade.claims")
    endpoint = ScriptedEndpoint(answering("yes"))
    judge = cascade(endpoint, escalate="run")
    scorer = create_hallucination_scorer(judge, context=CONTEXT)
    result = await scorer.run(run())
    assert len(endpoint.requests) == 1
    assert len(claims_in(endpoint.requests[0])) == 3
    assert {row[2] for row in verdict_rows(result)} == {"judge-llm"}
    assert result.score == 0.0
    # The local judge's confident verdicts were overruled, not decided alone: they count as
    # escalated, not as agreement (which measures only what the local stage decides).
    after = cascade_points(otel, "agentscore.cascade.claims")
    escalated = (("agentscore.cascade.decision", "escalated"),)
    assert after[escalated] - before.get(escalated, 0) == 3
    assert judge.agreement() == {}
    # A run the local judge is sure of still sends nothing.
    await scorer.run(run(SURE_ANSWER))
    assert len(endpoint.requests) == 1
