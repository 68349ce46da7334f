"""An agent with a live scorer exports to a real Phoenix; the score comes back on its trace."""

from __future__ import annotations

import contextlib
import json
import uuid
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind

from agentscore import Agent, Evals, Runner, Telemetry
from agentscore.judges import OpenAIJudge
from agentscore.scorers import create_faithfulness_scorer, create_hallucination_scorer
from agentscore.sinks.backends import PhoenixAnnotations
from agentscore.sinks.roots import RootSpans
from agentscore.testing import ScriptedEndpoint, chat_completion
from tests.e2e.phoenix import PROJECT_NAME_ATTRIBUTE, PhoenixServer, Span, spans_named
from tests.support.agent import agent_endpoint, judge_endpoint, lookup_order, tool_context

pytestmark = pytest.mark.e2e


def test_evaluation_span_lands_under_the_agent_trace_in_phoenix(phoenix: PhoenixServer) -> None:
    runner = Runner()
    project = f"agentscore-agent-{uuid.uuid4().hex[:8]}"
    provider = TracerProvider(resource=Resource.create({PROJECT_NAME_ATTRIBUTE: project}))
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=phoenix.otlp_traces_endpoint, timeout=10))
    )
    judge_script = judge_endpoint()
    # The judge by URL, as deployed: its requests go through agentscore's own HTTP client.
    stack = contextlib.ExitStack()
    judge_url = stack.enter_context(judge_script.serve())
    scorer = create_hallucination_scorer(
        OpenAIJudge("judge-model", base_url=judge_url, api_key="sk-e2e", max_retries=0),
        get_context=tool_context,
    )
    agent = Agent(
        name="support",
        model="agent-model",
        tools=[lookup_order],
        client=agent_endpoint().client(max_retries=0),
        evals=Evals(scorers=[scorer], runner=runner, on_score=PhoenixAnnotations(phoenix.base_url)),
        telemetry=Telemetry(tracer_provider=provider),
    )
    try:
        result = agent.generate_sync("Where is order 42?")
        assert agent.flush(timeout=30)
        assert provider.force_flush(timeout_millis=15_000)
        assert runner.shutdown(30)
    finally:
        provider.shutdown()
        stack.close()
    assert len(judge_script.requests) == 1

    def arrived(spans: list[Span]) -> bool:
        return bool(spans_named(spans, "evaluation hallucination")) and bool(
            spans_named(spans, "invoke_agent support")
        )

    spans = phoenix.wait_for_spans(project, arrived, timeout=60)
    [agent_row] = spans_named(spans, "invoke_agent support")
    [evaluation] = spans_named(spans, "evaluation hallucination")
    [judge_chat] = spans_named(spans, "chat judge-model")

    assert agent_row["context"]["trace_id"] == result.trace_id
    assert evaluation["context"]["trace_id"] == result.trace_id
    assert evaluation["parent_id"] == result.span_id
    assert evaluation["span_kind"] == "EVALUATOR"
    attributes = evaluation["attributes"]
    assert attributes["gen_ai.evaluation.name"] == "hallucination"
    assert attributes["gen_ai.evaluation.score.value"] == pytest.approx(agent.scores[0].score)
    assert attributes["gen_ai.evaluation.score.label"] == "pass"
    assert judge_chat["parent_id"] == evaluation["context"]["span_id"]
    assert judge_chat["attributes"]["gen_ai.usage.input_tokens"] == 100

    # The PhoenixAnnotations sink posted the score as an annotation on the agent span.
    annotations = phoenix.wait_for_annotations(project, "span", result.span_id or "")
    [annotation] = [a for a in annotations if a["name"] == "hallucination"]
    assert annotation["annotator_kind"] == "LLM"
    assert annotation["result"]["score"] == pytest.approx(agent.scores[0].score)
    assert annotation["result"]["label"] == "pass"


def _traced_agent(
    phoenix: PhoenixServer, project: str, model: ScriptedEndpoint, *, capture_content: bool
) -> tuple[Agent, TracerProvider, RootSpans]:
    roots = RootSpans()
    provider = TracerProvider(resource=Resource.create({PROJECT_NAME_ATTRIBUTE: project}))
    provider.add_span_processor(roots)
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=phoenix.otlp_traces_endpoint, timeout=10))
    )
    agent = Agent(
        name="support",
        model="agent-model",
        tools=[lookup_order],
        client=model.client(max_retries=0),
        evals=Evals(
            scorers=[create_faithfulness_scorer("local")],
            runner=Runner(),
            on_score=PhoenixAnnotations(phoenix.base_url, root_spans=roots),
        ),
        telemetry=Telemetry(tracer_provider=provider, capture_content=capture_content),
    )
    return agent, provider, roots


def test_each_claim_and_the_trace_root_annotation_reach_phoenix(phoenix: PhoenixServer) -> None:
    project = f"agentscore-claims-{uuid.uuid4().hex[:8]}"
    agent, provider, _ = _traced_agent(phoenix, project, agent_endpoint(), capture_content=True)
    try:
        tracer = provider.get_tracer("web")
        # FastAPI's instrumentation opens this server span around the handler.
        with tracer.start_as_current_span("POST /chat", kind=SpanKind.SERVER) as root:
            result = agent.generate_sync("Where is order 42?")
        assert agent.flush(timeout=30)
        assert provider.force_flush(timeout_millis=15_000)
    finally:
        provider.shutdown()
    [score] = agent.scores
    root_id = f"{root.get_span_context().span_id:016x}"

    spans = phoenix.wait_for_spans(
        project, lambda s: bool(spans_named(s, "evaluation faithfulness")), timeout=60
    )
    [evaluation] = spans_named(spans, "evaluation faithfulness")
    claims = json.loads(evaluation["attributes"]["agentscore.protocol"])
    # The span carries each claim's text, verdict and reason (not the judge's bookkeeping).
    assert claims == [
        {key: verdict[key] for key in ("claim", "verdict", "reason")}
        for verdict in score.analyze_step_result["verdicts"]
    ]
    assert claims[0]["verdict"] == "yes" and claims[0]["reason"]
    [root_row] = spans_named(spans, "POST /chat")
    assert root_row["parent_id"] is None

    # On the agent span: the reason as explanation, every claim in the metadata.
    [annotation] = phoenix.wait_for_annotations(project, "span", result.span_id or "")
    assert annotation["result"]["explanation"] == score.reason
    assert annotation["result"]["score"] == pytest.approx(score.score)
    assert annotation["metadata"]["claims"] == claims
    # And the same on the root span, which is what Phoenix's trace list shows.
    [on_root] = phoenix.wait_for_annotations(project, "span", root_id)
    assert on_root["name"] == "faithfulness"
    assert on_root["result"]["label"] == score.label == "pass"


# A greeting after a tool call has context and states nothing (no_claims); a claim with no
# tool called and no context given has nothing to be judged against (no_context).
@pytest.mark.parametrize(
    ("script", "status"),
    [
        (
            [
                chat_completion(tool_calls=[("lookup_order", {"order_id": "42"})]),
                chat_completion("Hello! How can I help you today?"),
            ],
            "no_claims",
        ),
        ([chat_completion("Order 42 shipped on May 2.")], "no_context"),
    ],
)
def test_a_run_not_judged_has_a_label_and_no_score_in_phoenix(
    phoenix: PhoenixServer, script: list[Any], status: str
) -> None:
    project = f"agentscore-{status.replace('_', '')}-{uuid.uuid4().hex[:8]}"
    model = ScriptedEndpoint(script)
    agent, provider, _ = _traced_agent(phoenix, project, model, capture_content=False)
    try:
        result = agent.generate_sync("hi")
        assert agent.flush(timeout=30)
        assert provider.force_flush(timeout_millis=15_000)
    finally:
        provider.shutdown()
    assert agent.scores[0].status.value == status

    spans = phoenix.wait_for_spans(
        project, lambda s: bool(spans_named(s, "evaluation faithfulness")), timeout=60
    )
    [evaluation] = spans_named(spans, "evaluation faithfulness")
    assert "gen_ai.evaluation.score.value" not in evaluation["attributes"]
    assert evaluation["attributes"]["gen_ai.evaluation.score.label"] == status
    [annotation] = phoenix.wait_for_annotations(project, "span", result.span_id or "")
    assert annotation["result"]["score"] is None
    assert annotation["result"]["label"] == status
