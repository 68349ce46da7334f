"""A web app's traces, rooted at `POST /chat`, carry their score on the trace itself in a
real Phoenix: a trace annotation (what the trace list shows on the row), scored in process and
by `agentscore serve`.

The app is a real FastAPI app traced by FastAPI's own OpenTelemetry support (FastAPI 0.16x,
`FastAPI(telemetry={"tracer_provider": ...})`; opentelemetry-instrumentation-fastapi makes the
same root): the server span `POST /chat` is the trace's root, with FastAPI's `fastapi.endpoint`
span under it and the agent's spans under that. Each request runs the agent twice, a right
answer then a wrong one: the trace shows one annotation per scorer, the worse of the two.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from pydantic import BaseModel

from agentscore import Agent, Evals, Runner, ScoringSpanProcessor, Telemetry
from agentscore.scorers import create_faithfulness_scorer, create_tool_efficiency_scorer
from agentscore.sinks.backends import PhoenixAnnotations
from agentscore.testing import ScriptedEndpoint, chat_completion
from tests.e2e.phoenix import PROJECT_NAME_ATTRIBUTE, PhoenixServer, Span, spans_named
from tests.support.agent import ORDER_ANSWER, lookup_order
from tests.support.serve import serving

pytestmark = pytest.mark.e2e

# Nothing in the order record supports it: the local judge finds the claim unsupported.
WRONG_ANSWER = "Order 42 was cancelled and refunded to your card."


class Chat(BaseModel):
    message: str


def chat_model() -> ScriptedEndpoint:
    """Looks the order up, then answers right, or wrong when asked to check again."""

    def respond(body: dict[str, Any]) -> Any:
        messages = body["messages"]
        if messages[-1]["role"] != "tool":
            return chat_completion(None, tool_calls=[("lookup_order", {"order_id": 42})])
        question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        return chat_completion(WRONG_ANSWER if "again" in question else ORDER_ANSWER)

    return ScriptedEndpoint(respond)


def chat_app(provider: TracerProvider, agent: Agent) -> FastAPI:
    # FastAPI traces each request itself: a SERVER span named after the route, the root.
    app = FastAPI(telemetry={"tracer_provider": provider, "metrics": False, "logs": False})

    @app.post("/chat")
    def chat(body: Chat) -> dict[str, Any]:
        right = agent.generate_sync(body.message)
        wrong = agent.generate_sync(body.message + " Please check again.")
        return {
            "trace_id": f"{trace.get_current_span().get_span_context().trace_id:032x}",
            "generations": [right.span_id, wrong.span_id],
        }

    return app


def app_provider(project: str, endpoint: str) -> TracerProvider:
    provider = TracerProvider(
        resource=Resource.create({PROJECT_NAME_ATTRIBUTE: project, "service.name": "support-app"})
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, timeout=10)))
    return provider


def ask(app: FastAPI) -> dict[str, Any]:
    with TestClient(app) as client:
        reply = client.post("/chat", json={"message": "Where is order 42?"})
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def test_in_process_scores_show_on_the_trace_of_a_web_request(phoenix: PhoenixServer) -> None:
    project = f"agentscore-trace-inproc-{uuid.uuid4().hex[:8]}"
    provider = app_provider(project, phoenix.otlp_traces_endpoint)
    runner = Runner()
    agent = Agent(
        name="support",
        model="agent-model",
        tools=[lookup_order],
        client=chat_model().client(max_retries=0),
        evals=Evals(
            scorers=[create_faithfulness_scorer("local")],
            runner=runner,
            on_score=PhoenixAnnotations(phoenix.base_url),
        ),
        telemetry=Telemetry(tracer_provider=provider),
    )
    try:
        sent = ask(chat_app(provider, agent))
        assert agent.flush(timeout=60)  # the scores, and the sink's batched posts
        assert provider.force_flush(timeout_millis=15_000)
    finally:
        provider.shutdown()
        runner.shutdown(10)
    by_generation = {score.span_id: score for score in agent.scores}
    right, wrong = (by_generation[span_id] for span_id in sent["generations"])
    assert (right.label, wrong.label) == ("pass", "fail")

    expect_one_trace_annotation_for_the_worse(phoenix, project, sent)


def test_scores_from_serve_show_on_the_trace_of_a_web_request(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    # The deployment of docs/deploy.md: the app traces with content on and scores nothing;
    # the service, inline before Phoenix, scores and posts through its scorers module's
    # `PhoenixAnnotations` sink (tests/support/serve_scorers.py, SERVE_TEST_SINK=phoenix).
    project = f"agentscore-trace-serve-{uuid.uuid4().hex[:8]}"
    otel = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": phoenix.otlp_traces_endpoint,
        "OTEL_RESOURCE_ATTRIBUTES": f"{PROJECT_NAME_ATTRIBUTE}={project}",
    }
    env = {"SERVE_TEST_SINK": "phoenix", "PHOENIX_COLLECTOR_ENDPOINT": phoenix.base_url}
    forward = ("--forward", phoenix.otlp_traces_endpoint)
    with serving(tmp_path, phoenix.base_url, *forward, otel=otel, env=env) as serve:
        provider = app_provider(project, f"{serve.url}/v1/traces")
        agent = Agent(
            name="support",
            model="agent-model",
            tools=[lookup_order],
            client=chat_model().client(max_retries=0),
            telemetry=Telemetry(tracer_provider=provider, capture_content=True),
        )
        try:
            sent = ask(chat_app(provider, agent))
            assert provider.force_flush(timeout_millis=15_000)
        finally:
            provider.shutdown()
        expect_one_trace_annotation_for_the_worse(phoenix, project, sent)


def test_a_trace_scorer_judges_the_whole_web_request_under_its_root(
    phoenix: PhoenixServer,
) -> None:
    # A trace-level scorer through the span processor: a web request whose handler runs a
    # real pydantic-ai agent twice is one target (both runs, their two tool calls), judged
    # once its root `POST /chat` has ended; its evaluation span sits under that root and its
    # score is a trace annotation.
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    project = f"agentscore-trace-level-{uuid.uuid4().hex[:8]}"
    provider = app_provider(project, phoenix.otlp_traces_endpoint)
    runner = Runner()
    evals = Evals(
        scorers=[create_tool_efficiency_scorer(max_repeats=0)],
        runner=runner,
        on_score=PhoenixAnnotations(phoenix.base_url),
        telemetry=Telemetry(tracer_provider=provider, capture_content=True),
    )
    scoring = ScoringSpanProcessor(evals, trace_grace=0.0)
    provider.add_span_processor(scoring)
    model = OpenAIChatModel(
        "agent-model", provider=OpenAIProvider(openai_client=chat_model().client(max_retries=0))
    )
    settings = InstrumentationSettings(tracer_provider=provider, include_content=True)
    agent = PydanticAgent(model, name="support", capabilities=[Instrumentation(settings)])
    agent.tool_plain(lookup_order.function)  # the same function, as a pydantic-ai tool
    app = FastAPI(telemetry={"tracer_provider": provider, "metrics": False, "logs": False})

    @app.post("/chat")
    def chat(body: Chat) -> dict[str, Any]:
        agent.run_sync(body.message)
        agent.run_sync(body.message + " Please check again.")
        return {"trace_id": f"{trace.get_current_span().get_span_context().trace_id:032x}"}

    try:
        sent = ask(app)
        assert scoring.force_flush()  # the trace is due: its root ended, no grace
        assert runner.flush(timeout=60)  # the score, and the sink's batched posts
        assert provider.force_flush(timeout_millis=15_000)
    finally:
        provider.shutdown()
        runner.shutdown(10)
    trace_id = sent["trace_id"]
    spans = phoenix.wait_for_spans(
        project, lambda s: bool(spans_named(s, "evaluation tool_efficiency")), timeout=90
    )
    [root] = [span for span in spans if span["parent_id"] is None]
    assert root["name"] == "POST /chat"
    [evaluation] = spans_named(spans, "evaluation tool_efficiency")
    assert evaluation["parent_id"] == root["context"]["span_id"]
    # lookup_order(42) twice in one trace, with max_repeats=0: a repeat, named.
    [annotation] = phoenix.wait_for_annotations(
        project, "trace", trace_id, lambda found: any(a["name"] == "tool_efficiency" for a in found)
    )
    assert annotation["result"]["label"] == "fail"
    assert annotation["result"]["score"] == 0.75
    explanation = annotation["result"]["explanation"]
    assert "lookup_order called 2 times with the same arguments" in explanation


def expect_one_trace_annotation_for_the_worse(
    phoenix: PhoenixServer, project: str, sent: dict[str, Any]
) -> None:
    trace_id = sent["trace_id"]
    right_id, wrong_id = sent["generations"]
    # The trace is rooted at the web request; the agent spans are below it.
    spans = phoenix.wait_for_spans(
        project,
        lambda s: (
            len(spans_named(s, "evaluation faithfulness")) == 2
            and bool(spans_named(s, "POST /chat"))
        ),
        timeout=90,
    )
    assert {span["context"]["trace_id"] for span in spans} == {trace_id}
    [root] = [span for span in spans if span["parent_id"] is None]
    assert root["name"] == "POST /chat"
    [endpoint] = spans_named(spans, "fastapi.endpoint")
    assert endpoint["parent_id"] == root["context"]["span_id"]
    agent_spans: list[Span] = spans_named(spans, "invoke_agent support")
    assert {span["context"]["span_id"] for span in agent_spans} == {right_id, wrong_id}
    assert {span["parent_id"] for span in agent_spans} == {endpoint["context"]["span_id"]}

    # One trace annotation per scorer, upserted: the wrong answer's, whichever came last.
    [annotation] = phoenix.wait_for_annotations(
        project, "trace", trace_id, lambda found: _labels(found) == ["fail"]
    )
    assert annotation["trace_id"] == trace_id
    assert annotation["name"] == "faithfulness"
    assert annotation["annotator_kind"] == "LLM"
    assert annotation["identifier"] == "agentscore"
    assert annotation["result"]["score"] == 0.0
    assert annotation["metadata"]["span_id"] == wrong_id
    # Each generation keeps its own span annotation, the right one passing.
    for span_id, label in ((right_id, "pass"), (wrong_id, "fail")):
        [on_span] = phoenix.wait_for_annotations(project, "span", span_id)
        assert on_span["result"]["label"] == label


def _labels(annotations: list[dict[str, Any]]) -> list[str]:
    return [a["result"]["label"] for a in annotations if a["name"] == "faithfulness"]
