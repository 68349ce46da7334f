"""A conversation's score is on its session in a real Phoenix: the agent's traces carry the
conversation id as `session.id` (Phoenix's session), and the conversation scorer's result is
a session annotation, scored in process and by `agentscore serve`."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agentscore import Agent, Evals, Runner, Telemetry
from agentscore.scorers import StepParams, create_scorer
from agentscore.sinks.backends import PhoenixAnnotations
from agentscore.testing import ScriptedEndpoint, chat_completion
from tests.e2e.phoenix import PROJECT_NAME_ATTRIBUTE, PhoenixServer, spans_named
from tests.support.serve import agent_turn, serving

pytestmark = pytest.mark.e2e


def remembers_the_name(params: StepParams) -> float:
    last = params.run.output[-1].content or ""
    return 1.0 if "Ada" in last else 0.0


def provider_for(project: str, endpoint: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({PROJECT_NAME_ATTRIBUTE: project}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, timeout=10)))
    return provider


def session_annotation(
    phoenix: PhoenixServer, project: str, session: str, name: str
) -> dict[str, Any]:
    found = phoenix.wait_for_annotations(
        project, "session", session, lambda found: any(a["name"] == name for a in found)
    )
    [annotation] = [a for a in found if a["name"] == name]
    return annotation


def test_an_in_process_conversation_score_is_a_session_annotation(phoenix: PhoenixServer) -> None:
    project = f"agentscore-session-{uuid.uuid4().hex[:8]}"
    session = f"chat-{uuid.uuid4().hex[:8]}"
    provider = provider_for(project, phoenix.otlp_traces_endpoint)
    runner = Runner()
    evals = Evals(
        scorers=[
            create_scorer(
                id="remembers_name", level="conversation", generate_score=remembers_the_name
            )
        ],
        runner=runner,
        on_score=PhoenixAnnotations(phoenix.base_url),
    )
    model = ScriptedEndpoint(
        [chat_completion("Nice to meet you, Ada."), chat_completion("I do not know your name.")]
    )
    agent = Agent(
        name="support",
        model="agent-model",
        client=model.client(max_retries=0),
        evals=evals,
        telemetry=Telemetry(tracer_provider=provider),
    )
    try:
        history: list[Any] = []
        for question in ["I am Ada.", "What is my name?"]:
            turn = agent.generate_sync(
                [*history, {"role": "user", "content": question}], conversation_id=session
            )
            history = turn.messages
        evals.end_conversation(session)
        assert agent.flush(timeout=60)  # the score, and the sink's batched posts
        assert provider.force_flush(timeout_millis=15_000)
    finally:
        provider.shutdown()
        runner.shutdown(10)

    # Phoenix files both traces under the session: the agent spans carry `session.id`.
    spans = phoenix.wait_for_spans(
        project, lambda s: len(spans_named(s, "invoke_agent support")) == 2, timeout=90
    )
    agent_spans = spans_named(spans, "invoke_agent support")
    assert {span["attributes"]["session.id"] for span in agent_spans} == {session}
    annotation = session_annotation(phoenix, project, session, "remembers_name")
    assert annotation["result"]["score"] == 0.0
    assert annotation["identifier"] == "agentscore"
    assert annotation["annotator_kind"] == "LLM"


def test_a_conversation_scored_by_serve_is_a_session_annotation(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    # The app traces its turns (the conversation id on each request's root, as GenAI and
    # OpenInference name it); the service scores the conversation once a turn ends it, and
    # posts through its scorers module's `PhoenixAnnotations` sink.
    project = f"agentscore-session-serve-{uuid.uuid4().hex[:8]}"
    session = f"chat-{uuid.uuid4().hex[:8]}"
    otel = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": phoenix.otlp_traces_endpoint,
        "OTEL_RESOURCE_ATTRIBUTES": f"{PROJECT_NAME_ATTRIBUTE}={project}",
    }
    env = {"SERVE_TEST_SINK": "phoenix", "PHOENIX_COLLECTOR_ENDPOINT": phoenix.base_url}
    options = (
        *("--scorers", "tests.support.serve_level_scorers:evals"),
        *("--forward", phoenix.otlp_traces_endpoint),
        *("--trace-grace", "0.1"),
    )
    with serving(tmp_path, phoenix.base_url, *options, otel=otel, env=env) as serve:
        provider = provider_for(project, f"{serve.url}/v1/traces")
        try:
            agent_turn(provider, "Where is order 1042?", "Shipped.", conversation_id=session)
            agent_turn(
                provider, "When does it arrive?", "Monday.", conversation_id=session, end=True
            )
            assert provider.force_flush(timeout_millis=15_000)
        finally:
            provider.shutdown()
        annotation = session_annotation(phoenix, project, session, "conversation_turns")
    assert annotation["result"]["score"] == 2.0  # the two turns, put together by the service
