"""Phoenix annotation and Langfuse score sinks, against a recording HTTP server."""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio
import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from agentscore import Agent, Evals, Runner, Telemetry
from agentscore.result import ScoreError, ScoreResult, ScoreStatus
from agentscore.scorers import create_hallucination_scorer, create_scorer
from agentscore.sinks.backends import LangfuseScores, PhoenixAnnotations
from agentscore.sinks.roots import RootSpans
from agentscore.testing import ScriptedEndpoint, chat_completion
from tests.support.agent import agent_endpoint, lookup_order
from tests.support.http_server import HttpServer, Reply, http_server
from tests.support.otel import histogram_point, new_log_exporter, number_point
from tests.support.sinks import RESULT, posted

pytestmark = pytest.mark.anyio


def only(collector: HttpServer, endpoint: str) -> Any:
    [[item]] = posted(collector, endpoint)
    return item


async def delivered(sink: PhoenixAnnotations | LangfuseScores, *results: ScoreResult) -> None:
    """Hand `results` to `sink` as the runner does, then wait until it has posted them."""
    for result in results:
        await sink(result)
    assert await anyio.to_thread.run_sync(sink.flush, 30)


async def test_phoenix_annotation_on_the_agent_span_and_on_its_trace() -> None:
    with http_server() as collector:
        await delivered(PhoenixAnnotations(collector.url, api_key="px-secret-key"), RESULT)
    assert {request.path for request in collector.requests} == {
        "/v1/span_annotations",
        "/v1/trace_annotations",
    }
    for request in collector.requests:
        assert request.headers["authorization"] == "Bearer px-secret-key"
    annotation = only(collector, "/v1/span_annotations")
    assert annotation["span_id"] == RESULT.span_id
    assert annotation["name"] == "hallucination"
    assert annotation["annotator_kind"] == "LLM"
    assert annotation["result"] == {
        "score": 0.5,
        "label": "pass",
        "explanation": "2 claims: 1 supported, 0 contradicted, 1 unverifiable",
    }
    # The trace annotation: what Phoenix's trace list shows, whatever span is the root.
    on_trace = only(collector, "/v1/trace_annotations")
    assert on_trace["trace_id"] == RESULT.trace_id
    assert on_trace["name"] == "hallucination"
    assert on_trace["annotator_kind"] == "LLM"
    assert on_trace["identifier"] == "agentscore"
    assert on_trace["result"] == annotation["result"]
    assert on_trace["metadata"] == {
        "status": "scored",
        "judge_model": "local",
        "span_id": RESULT.span_id,
    }


async def test_langfuse_scores_on_the_observation_and_the_trace_with_basic_auth() -> None:
    with http_server() as collector:
        sink = LangfuseScores(
            collector.url,
            public_key="pk-lf",
            secret_key="sk-lf-secret",
            telemetry=Telemetry(capture_content=True),
        )
        await delivered(sink, RESULT)
    [request] = collector.requests
    assert request.path == "/api/public/ingestion"
    assert request.headers["authorization"] == "Basic " + base64.b64encode(
        b"pk-lf:sk-lf-secret"
    ).decode("ascii")
    on_observation, on_trace = request.json()["batch"]
    for event in (on_observation, on_trace):
        assert event["type"] == "score-create"
        assert len(event["id"]) == 32 and event["timestamp"]
        body = event["body"]
        assert body["traceId"] == RESULT.trace_id
        assert body["name"] == "hallucination"
        assert body["value"] == 0.5
        assert body["dataType"] == "NUMERIC"
        assert body["comment"] == RESULT.reason
    assert on_observation["id"] != on_trace["id"]
    assert on_observation["body"]["observationId"] == RESULT.span_id
    assert on_observation["body"]["id"] == "agentscore-run-1-hallucination"
    # A trace score has no observation; its id is the trace's, so a later post replaces it.
    assert "observationId" not in on_trace["body"]
    assert on_trace["body"]["id"] == f"agentscore-trace-{RESULT.trace_id}-hallucination"


async def test_failures_are_logged_never_raised(capsys: pytest.CaptureFixture[str]) -> None:
    with http_server() as collector:
        collector.reply_with(Reply(500))
        await delivered(
            LangfuseScores(
                collector.url, public_key="pk", secret_key="sk-lf-hidden", retry_window=0
            ),
            RESULT,
        )
    # No listener; not tried again (tests/test_sink_batching.py tries again).
    unreachable = PhoenixAnnotations("http://127.0.0.1:9", timeout=2, retry_window=0)
    await delivered(unreachable, RESULT)
    out = capsys.readouterr().out
    assert "score_backend_rejected" in out and "status=500" in out
    assert "score_backend_unreachable" in out
    assert "sk-lf-hidden" not in out


async def test_results_without_a_trace_or_a_score_are_skipped() -> None:
    failed = RESULT.model_copy(
        update={
            "score": None,
            "status": ScoreStatus.FAILED,
            "error": ScoreError(type="X", message="m"),
        }
    )
    untraced = RESULT.model_copy(update={"span_id": None, "trace_id": None})
    with http_server() as collector:
        await delivered(LangfuseScores(collector.url, public_key="p", secret_key="s"), failed)
        await delivered(PhoenixAnnotations(collector.url), untraced)
    assert collector.requests == []


NO_CLAIMS = RESULT.model_copy(
    update={
        "status": ScoreStatus.NO_CLAIMS,
        "score": 0.0,
        "passed": None,
        "label": None,
        "reason": "Not scored: the output makes no claims to check.",
        "analyze_step_result": {"verdicts": []},
    }
)


async def test_a_run_with_no_claims_posts_its_label_and_no_score() -> None:
    with http_server() as collector:
        await delivered(PhoenixAnnotations(collector.url), NO_CLAIMS)
        await delivered(LangfuseScores(collector.url, public_key="p", secret_key="s"), NO_CLAIMS)
    expected = {"label": "no_claims", "explanation": "no claims to check"}
    assert only(collector, "/v1/span_annotations")["result"] == expected
    assert only(collector, "/v1/trace_annotations")["result"] == expected
    [events] = posted(collector, "/api/public/ingestion")
    # A category, which Langfuse does not average with the numeric scores of the same name.
    for event in events:
        assert (event["body"]["dataType"], event["body"]["value"]) == ("CATEGORICAL", "no_claims")


async def test_content_switch_off_keeps_claims_out_of_the_annotation() -> None:
    with http_server() as collector:
        sink = PhoenixAnnotations(collector.url, telemetry=Telemetry(capture_content=False))
        await delivered(sink, RESULT)
    annotation = only(collector, "/v1/span_annotations")
    assert annotation["metadata"] == {"status": "scored", "judge_model": "local"}
    assert "Members" not in json.dumps([request.json() for request in collector.requests])


async def test_content_switch_on_sends_the_reason_and_every_claim() -> None:
    with http_server() as collector:
        sink = PhoenixAnnotations(collector.url, telemetry=Telemetry(capture_content=True))
        await delivered(sink, RESULT)
    for endpoint in ("/v1/span_annotations", "/v1/trace_annotations"):
        annotation = only(collector, endpoint)
        assert annotation["result"]["explanation"] == RESULT.reason
        assert annotation["metadata"]["claims"] == RESULT.analyze_step_result["verdicts"]


def traced_agent(
    answer_endpoint: ScriptedEndpoint, collector: HttpServer, *, capture_content: bool
) -> tuple[Agent, InMemorySpanExporter, InMemoryLogRecordExporter, InMemoryMetricReader, Any]:
    """An agent with its own providers, a local-judge hallucination scorer, and a Phoenix
    sink that was given no content flag of its own."""
    spans, logs, metrics = (
        InMemorySpanExporter(),
        new_log_exporter(),
        InMemoryMetricReader(),
    )
    roots = RootSpans()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(roots)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    telemetry = Telemetry(
        tracer_provider=tracer_provider,
        logger_provider=logger_provider,
        meter_provider=MeterProvider(metric_readers=[metrics]),
        capture_content=capture_content,
    )
    agent = Agent(
        name="support",
        model="agent-model",
        tools=[lookup_order],
        client=answer_endpoint.client(max_retries=0),
        evals=Evals(
            scorers=[create_hallucination_scorer("local")],
            runner=Runner(),
            on_score=PhoenixAnnotations(collector.url, root_spans=roots),
        ),
        telemetry=telemetry,
    )
    return agent, spans, logs, metrics, tracer_provider


def evaluation_span_attributes(spans: InMemorySpanExporter) -> dict[str, Any]:
    [evaluation] = [s for s in spans.get_finished_spans() if s.name.startswith("evaluation")]
    return dict(evaluation.attributes or {})


def histogram_points(reader: InMemoryMetricReader) -> int:
    data = reader.get_metrics_data()
    if data is None:
        return 0
    return sum(
        histogram_point(point).count
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "gen_ai.evaluation.score"
        for point in metric.data.data_points
    )


def test_the_agents_content_switch_governs_the_span_and_the_annotation() -> None:
    for capture in (True, False):
        with http_server() as collector:
            agent, spans, _, _, _ = traced_agent(
                agent_endpoint(), collector, capture_content=capture
            )
            agent.generate_sync("Where is order 42?")
            assert agent.flush(timeout=30)
        [result] = agent.scores
        # agent.flush() waited for the sink's batched posts too.
        annotation = only(collector, "/v1/span_annotations")
        assert only(collector, "/v1/trace_annotations")["result"] == annotation["result"]
        attributes = evaluation_span_attributes(spans)
        if capture:
            claims = json.loads(attributes["agentscore.protocol"])
            shown = ("claim", "verdict", "reason")
            verdicts = result.analyze_step_result["verdicts"]
            assert claims == [{key: v[key] for key in shown} for v in verdicts]
            assert claims == [
                {
                    "claim": "Order 42 shipped on May 2 and arrives on May 5.",
                    "verdict": "yes",
                    "reason": claims[0]["reason"],
                }
            ]
            assert claims[0]["reason"]
            assert annotation["metadata"]["claims"] == claims
            assert annotation["result"]["explanation"] == result.reason
            assert attributes["gen_ai.evaluation.explanation"] == result.reason
        else:
            assert "agentscore.protocol" not in attributes
            assert "claims" not in annotation["metadata"]
            assert annotation["result"]["explanation"] == (
                "1 claim: 1 supported, 0 contradicted, 0 unverifiable"
            )


def runs_by_outcome(reader: InMemoryMetricReader) -> dict[str, int]:
    data = reader.get_metrics_data()
    counts: dict[str, int] = {}
    for resource in data.resource_metrics if data is not None else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != "agentscore.evaluation.runs":
                    continue
                for point in metric.data.data_points:
                    outcome = str((point.attributes or {})["agentscore.outcome"])
                    counts[outcome] = counts.get(outcome, 0) + int(number_point(point).value)
    return counts


# A greeting after a tool call has context and states nothing; an answer from no tool, with
# no context given, has nothing to be checked against.
@pytest.mark.parametrize(
    ("script", "status", "explanation"),
    [
        (
            [
                chat_completion(tool_calls=[("lookup_order", {"order_id": "42"})]),
                chat_completion("Hello! How can I help you today?"),
            ],
            ScoreStatus.NO_CLAIMS,
            "no claims to check",
        ),
        (
            [chat_completion("Order 42 shipped on May 2 and arrives on May 5.")],
            ScoreStatus.NO_CONTEXT,
            "no context to check the output against",
        ),
    ],
)
def test_a_run_not_judged_carries_no_score_on_span_log_record_annotation_or_metric(
    script: list[Any], status: ScoreStatus, explanation: str
) -> None:
    with http_server() as collector:
        agent, spans, logs, metrics, _ = traced_agent(
            ScriptedEndpoint(script), collector, capture_content=False
        )
        agent.generate_sync("hi")
        assert agent.flush(timeout=30)
    [result] = agent.scores
    assert result.status is status
    assert result.passed is None and result.label is None
    attributes = evaluation_span_attributes(spans)
    assert "gen_ai.evaluation.score.value" not in attributes
    assert attributes["gen_ai.evaluation.score.label"] == status.value
    assert attributes["agentscore.score.status"] == status.value
    [record] = logs.get_finished_logs()
    log_attributes = dict(record.log_record.attributes or {})
    assert "gen_ai.evaluation.score.value" not in log_attributes
    assert log_attributes["gen_ai.evaluation.score.label"] == status.value
    assert log_attributes["gen_ai.evaluation.explanation"] == explanation
    annotation = only(collector, "/v1/span_annotations")
    assert "score" not in annotation["result"]
    assert annotation["result"]["label"] == status.value
    assert histogram_points(metrics) == 0
    expected_outcome = "no_context" if status is ScoreStatus.NO_CONTEXT else "scored"
    assert runs_by_outcome(metrics) == {expected_outcome: 1}


async def test_a_run_with_no_context_posts_its_label_and_no_score_to_langfuse() -> None:
    no_context = RESULT.model_copy(
        update={
            "status": ScoreStatus.NO_CONTEXT,
            "score": None,
            "passed": None,
            "label": None,
            "analyze_step_result": None,
        }
    )
    with http_server() as collector:
        await delivered(LangfuseScores(collector.url, public_key="p", secret_key="s"), no_context)
    [events] = posted(collector, "/api/public/ingestion")
    for event in events:
        body = event["body"]
        assert (body["dataType"], body["value"]) == ("CATEGORICAL", "no_context")
        assert body["comment"] == "no context to check the output against"


def test_a_scored_run_reaches_the_score_histogram() -> None:
    with http_server() as collector:
        agent, _, _, metrics, _ = traced_agent(agent_endpoint(), collector, capture_content=False)
        agent.generate_sync("Where is order 42?")
        assert agent.flush(timeout=30)
    assert histogram_points(metrics) == 1


def test_the_trace_root_is_annotated_as_well() -> None:
    with http_server() as collector:
        agent, _, _, _, tracer_provider = traced_agent(
            agent_endpoint(), collector, capture_content=False
        )
        tracer = tracer_provider.get_tracer("web")
        # What FastAPI's instrumentation does: a server span around the handler.
        with tracer.start_as_current_span("POST /chat", kind=SpanKind.SERVER) as root:
            result = agent.generate_sync("Where is order 42?")
        assert agent.flush(timeout=30)
    root_id = f"{root.get_span_context().span_id:016x}"
    [annotations] = posted(collector, "/v1/span_annotations")
    assert [a["span_id"] for a in annotations] == [result.span_id, root_id]
    assert annotations[0]["result"] == annotations[1]["result"]
    assert annotations[0]["result"]["label"] == "pass"


def test_an_agent_span_that_is_its_own_root_is_annotated_once() -> None:
    with http_server() as collector:
        agent, _, _, _, _ = traced_agent(agent_endpoint(), collector, capture_content=False)
        result = agent.generate_sync("Where is order 42?")
        assert agent.flush(timeout=30)
    [annotations] = posted(collector, "/v1/span_annotations")
    assert [a["span_id"] for a in annotations] == [result.span_id]


def remembers_the_name(params: Any) -> float:
    last = params.run.turns[-1].output[-1].content or ""
    return 1.0 if "Ada" in last else 0.0


def test_a_conversation_score_is_posted_on_its_session_and_a_generation_score_is_not() -> None:
    # A real conversation through the agent: each generation scored as it comes, the
    # conversation once ended; only the latter is a session's score.
    model = ScriptedEndpoint(
        [chat_completion("Nice to meet you, Ada."), chat_completion("I do not know your name.")]
    )
    with http_server() as collector:
        phoenix = PhoenixAnnotations(collector.url)
        langfuse = LangfuseScores(collector.url, public_key="p", secret_key="s")
        runner = Runner()
        runner.add_sink(phoenix)
        runner.add_sink(langfuse)
        evals = Evals(
            scorers=[
                create_scorer(
                    id="remembers_name",
                    level="conversation",
                    generate_score=remembers_the_name,
                ),
                create_scorer(id="answered", generate_score=lambda params: 1.0),
            ],
            runner=runner,
        )
        agent = Agent(name="support", model="m", client=model.client(max_retries=0), evals=evals)
        history: list[Any] = []
        for question in ["I am Ada.", "What is my name?"]:
            turn = agent.generate_sync(
                [*history, {"role": "user", "content": question}], conversation_id="chat-7"
            )
            history = turn.messages
        evals.end_conversation("chat-7")
        assert runner.flush(timeout=30)
        runner.shutdown(10)

    by_scorer: dict[str, list[ScoreResult]] = {}
    for score in agent.scores:
        by_scorer.setdefault(score.scorer_id, []).append(score)
    [conversation] = by_scorer["remembers_name"]
    assert conversation.conversation_id == "chat-7" and conversation.score == 0.0
    assert all(score.conversation_id is None for score in by_scorer["answered"])
    [[session]] = posted(collector, "/v1/session_annotations")
    assert session["session_id"] == "chat-7"
    assert session["name"] == "remembers_name"
    assert session["identifier"] == "agentscore"
    assert session["result"]["score"] == 0.0
    events = [event for batch in posted(collector, "/api/public/ingestion") for event in batch]
    on_session = [event["body"] for event in events if "sessionId" in event["body"]]
    assert on_session == [
        {
            "id": "agentscore-session-chat-7-remembers_name",
            "sessionId": "chat-7",
            "name": "remembers_name",
            "value": 0.0,
            "dataType": "NUMERIC",
            "comment": on_session[0]["comment"],
        }
    ]
