"""Spans, evaluation log records and metrics of a full run, from in-memory exporters."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from agentscore import Agent, Evals, Runner, Telemetry
from agentscore.judges import OpenAIJudge
from agentscore.scorers import create_hallucination_scorer
from agentscore.testing import ScriptedEndpoint, http_error
from tests.support.agent import (
    ORDER_ANSWER,
    agent_endpoint,
    judge_endpoint,
    lookup_order,
    tool_context,
)
from tests.support.otel import Otel, histogram_point, number_point

SECRET = "sk-live-abcdefghijklmnop1234"


def run_agent(
    judge: ScriptedEndpoint, *, capture_content: bool = False, conversation_id: str | None = None
) -> tuple[Any, Agent]:
    runner = Runner()
    scorer = create_hallucination_scorer(
        OpenAIJudge("judge-model", client=judge.client(max_retries=0), api_key=SECRET),
        get_context=tool_context,
    )
    agent = Agent(
        name="support",
        model="agent-model",
        instructions="Answer from tools.",
        tools=[lookup_order],
        client=agent_endpoint().client(max_retries=0),
        api_key=SECRET,
        evals=Evals(scorers=[scorer], runner=runner),
        telemetry=Telemetry(capture_content=capture_content),
    )
    result = agent.generate_sync("Where is order 42?", conversation_id=conversation_id)
    assert agent.flush(timeout=10)
    return result, agent


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


def test_full_run_span_tree_and_attributes(otel: Otel) -> None:
    result, _ = run_agent(judge_endpoint(), conversation_id="conv-7")
    spans = by_name(otel.spans.get_finished_spans())

    [agent_span] = spans["invoke_agent support"]
    agent_chats = [s for s in spans["chat agent-model"]]
    [tool] = spans["execute_tool lookup_order"]
    [evaluation] = spans["evaluation hallucination"]
    [judge_chat] = spans["chat judge-model"]

    assert agent_span.kind is SpanKind.INTERNAL
    assert agent_span.attributes is not None
    assert agent_span.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent_span.attributes["gen_ai.agent.name"] == "support"
    assert agent_span.attributes["gen_ai.provider.name"] == "openai"
    assert agent_span.attributes["gen_ai.conversation.id"] == "conv-7"
    assert agent_span.attributes["gen_ai.usage.input_tokens"] == 200
    assert "gen_ai.system" not in agent_span.attributes
    assert f"{agent_span.context.trace_id:032x}" == result.trace_id
    assert f"{agent_span.context.span_id:016x}" == result.span_id

    assert len(agent_chats) == 2
    for chat in agent_chats:
        assert chat.kind is SpanKind.CLIENT
        assert chat.parent is not None and chat.parent.span_id == agent_span.context.span_id
        assert chat.attributes is not None
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"] == "agent-model"
        assert chat.attributes["gen_ai.usage.output_tokens"] == 20
    first, second = agent_chats[0].attributes, agent_chats[1].attributes
    assert first is not None and second is not None
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert second["gen_ai.response.id"] == result.response_id

    assert tool.parent is not None and tool.parent.span_id == agent_span.context.span_id
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.name"] == "lookup_order"
    assert tool.attributes["gen_ai.tool.call.id"] == result.output[0].tool_calls[0].id

    # The evaluation span hangs under the (already ended) agent span; the judge under it.
    assert evaluation.context.trace_id == agent_span.context.trace_id
    assert evaluation.parent is not None and evaluation.parent.span_id == agent_span.context.span_id
    assert evaluation.start_time is not None and agent_span.end_time is not None
    assert evaluation.start_time >= agent_span.end_time
    attributes = evaluation.attributes
    assert attributes is not None
    assert attributes["gen_ai.evaluation.name"] == "hallucination"
    assert attributes["gen_ai.evaluation.score.value"] == 0.0
    assert attributes["gen_ai.evaluation.score.label"] == "pass"
    assert attributes["gen_ai.response.id"] == result.response_id
    assert attributes["openinference.span.kind"] == "EVALUATOR"
    assert attributes["gen_ai.evaluation.explanation"] == (
        "2 claims: 2 supported, 0 contradicted, 0 unverifiable"
    )
    assert judge_chat.parent is not None
    assert judge_chat.parent.span_id == evaluation.context.span_id
    assert judge_chat.attributes is not None
    assert judge_chat.attributes["gen_ai.usage.input_tokens"] == 100


def test_evaluation_log_record_is_parented_to_the_agent_span(otel: Otel) -> None:
    result, _ = run_agent(judge_endpoint())
    [record] = [
        data.log_record
        for data in otel.logs.get_finished_logs()
        if data.log_record.event_name == "gen_ai.evaluation.result"
    ]
    assert f"{record.trace_id:032x}" == result.trace_id
    assert f"{record.span_id:016x}" == result.span_id
    assert record.attributes is not None
    assert record.attributes["gen_ai.evaluation.name"] == "hallucination"
    assert record.attributes["gen_ai.evaluation.score.value"] == 0.0
    assert record.attributes["gen_ai.evaluation.score.label"] == "pass"


def test_failed_evaluation_carries_error_type(otel: Otel) -> None:
    run_agent(ScriptedEndpoint([http_error(400)] * 3))
    [evaluation] = by_name(otel.spans.get_finished_spans())["evaluation hallucination"]
    assert evaluation.status.status_code is StatusCode.ERROR
    assert evaluation.attributes is not None
    assert evaluation.attributes["error.type"] == "JudgeRequestError"
    assert "gen_ai.evaluation.score.value" not in evaluation.attributes
    [record] = [
        d.log_record
        for d in otel.logs.get_finished_logs()
        if d.log_record.event_name == "gen_ai.evaluation.result"
    ]
    assert record.attributes is not None
    assert record.attributes["error.type"] == "JudgeRequestError"


def everything_exported(otel: Otel) -> str:
    chunks = [json.dumps(dict(span.attributes or {})) for span in otel.spans.get_finished_spans()]
    chunks += [
        json.dumps(dict(d.log_record.attributes or {})) for d in otel.logs.get_finished_logs()
    ]
    chunks += [span.name for span in otel.spans.get_finished_spans()]
    return "\n".join(chunks)


def test_no_content_and_no_key_unless_opted_in(otel: Otel) -> None:
    run_agent(judge_endpoint())
    exported = everything_exported(otel)
    assert SECRET not in exported
    assert "sk-test" not in exported
    for content in ("Where is order 42?", ORDER_ANSWER, "May 2", "Answer from tools."):
        assert content not in exported
    assert "gen_ai.input.messages" not in exported
    assert "gen_ai.tool.call.result" not in exported


def test_content_when_opted_in(otel: Otel) -> None:
    run_agent(judge_endpoint(), capture_content=True)
    spans = by_name(otel.spans.get_finished_spans())
    [agent_span] = spans["invoke_agent support"]
    assert agent_span.attributes is not None
    input_messages = json.loads(str(agent_span.attributes["gen_ai.input.messages"]))
    assert input_messages[1] == {
        "role": "user",
        "parts": [{"type": "text", "content": "Where is order 42?"}],
    }
    [tool] = spans["execute_tool lookup_order"]
    assert tool.attributes is not None
    assert "May 2" in str(tool.attributes["gen_ai.tool.call.result"])
    [evaluation] = spans["evaluation hallucination"]
    assert evaluation.attributes is not None
    assert str(evaluation.attributes["gen_ai.evaluation.explanation"]).startswith("The score is 0")
    assert SECRET not in everything_exported(otel)


def test_capture_content_follows_the_standard_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    assert Telemetry().capture_content is True
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false")
    assert Telemetry().capture_content is False


def test_score_histogram_and_outcome_counters(otel: Otel) -> None:
    run_agent(judge_endpoint())
    data = otel.metrics.get_metrics_data()
    assert data is not None
    metrics = {
        metric.name: metric
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    histogram_points = [
        p
        for p in metrics["gen_ai.evaluation.score"].data.data_points
        if (p.attributes or {}).get("gen_ai.evaluation.name") == "hallucination"
    ]
    assert histogram_points and histogram_point(histogram_points[0]).count >= 1
    outcomes = {
        (p.attributes or {}).get("agentscore.outcome")
        for p in metrics["agentscore.evaluation.runs"].data.data_points
    }
    assert "scored" in outcomes


def test_a_failing_model_call_marks_the_agent_and_chat_spans(otel: Otel) -> None:
    scorer = create_hallucination_scorer("local")
    agent = Agent(
        "support",
        "agent-model",
        client=ScriptedEndpoint([http_error(401)]).client(),
        evals=Evals(scorers=[scorer], runner=Runner()),
    )
    with pytest.raises(Exception, match="scripted error"):
        agent.generate_sync("hello")
    spans = by_name(otel.spans.get_finished_spans())
    for name in ("invoke_agent support", "chat agent-model"):
        [span] = spans[name]
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes is not None
        assert span.attributes["error.type"] == "AuthenticationError"
    assert agent.runner.stats().submitted == 0


def test_dropped_runs_are_counted_in_metrics(otel: Otel) -> None:
    runner = Runner(max_queue=1, concurrency=1)
    scorer = create_hallucination_scorer(
        OpenAIJudge("judge-model", client=judge_endpoint(delay=0.5).client(max_retries=0)),
        get_context=tool_context,
        id="hallucination-dropped",
    )
    agent = Agent(
        "support",
        "agent-model",
        tools=[lookup_order],
        client=agent_endpoint().client(max_retries=0),
        evals=Evals(scorers=[scorer], runner=runner),
    )
    for _ in range(5):
        agent.generate_sync("Where is order 42?")
    assert agent.flush(timeout=10)
    dropped = runner.stats().dropped
    assert dropped >= 2
    data = otel.metrics.get_metrics_data()
    assert data is not None
    counted = sum(
        number_point(point).value
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "agentscore.evaluation.runs"
        for point in metric.data.data_points
        if (point.attributes or {}).get("agentscore.outcome") == "dropped"
        and (point.attributes or {}).get("gen_ai.evaluation.name") == "hallucination-dropped"
    )
    assert counted == dropped


@pytest.mark.parametrize("capture", [False, True])
def test_the_evaluation_spans_input_and_output_are_the_answer_and_the_verdict(
    otel: Otel, capture: bool
) -> None:
    result, _ = run_agent(judge_endpoint(), capture_content=capture)
    [evaluation] = by_name(otel.spans.get_finished_spans())["evaluation hallucination"]
    attributes = dict(evaluation.attributes or {})
    output = json.loads(str(attributes["output.value"]))
    assert attributes["output.mime_type"] == "application/json"
    assert output["score"] == attributes["gen_ai.evaluation.score.value"]
    assert output["label"] == attributes["gen_ai.evaluation.score.label"]
    assert output["explanation"] == attributes["gen_ai.evaluation.explanation"]
    if capture:
        assert attributes["input.value"] == result.text == ORDER_ANSWER
        assert output["explanation"].startswith("The score is 0")
    else:  # the answer is content: only the verdict counts go out
        assert "input.value" not in attributes
        assert output["explanation"].endswith("0 contradicted, 0 unverifiable")
