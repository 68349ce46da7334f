"""setup_telemetry: a JSONL file by default, OTLP/HTTP from the standard variables."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest
from opentelemetry import trace

from agentscore import Agent, Evals, Runner, setup_telemetry
from agentscore.judges import OpenAIJudge
from agentscore.scorers import create_faithfulness_scorer
from agentscore.telemetry import Telemetry, otlp
from tests.support.agent import agent_endpoint, judge_endpoint, lookup_order, tool_context
from tests.support.http_server import Reply, http_server


def scored_agent(telemetry: Telemetry) -> Agent:
    scorer = create_faithfulness_scorer(
        OpenAIJudge("judge", client=judge_endpoint().client()), get_context=tool_context
    )
    return Agent(
        "support",
        "agent-model",
        tools=[lookup_order],
        client=agent_endpoint().client(),
        evals=Evals(scorers=[scorer], runner=Runner()),
        telemetry=telemetry,
    )


def test_default_is_a_jsonl_file_with_spans_and_evaluation_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(variable, raising=False)
    path = tmp_path / "traces.jsonl"
    global_provider = trace.get_tracer_provider()
    setup = setup_telemetry("test-service", jsonl_path=path)
    assert trace.get_tracer_provider() is global_provider  # the application's own setup wins
    assert setup.installed_globally is False

    agent = scored_agent(setup.telemetry)
    result = agent.generate_sync("Where is order 42?")
    setup.shutdown()  # flushes the pending score, then the exporters

    records = [json.loads(line) for line in path.read_text().splitlines()]
    names = {r.get("name") for r in records}
    assert {"invoke_agent support", "chat agent-model", "evaluation faithfulness"} <= names
    [event] = [r for r in records if r.get("event_name") == "gen_ai.evaluation.result"]
    assert event["attributes"]["gen_ai.evaluation.score.value"] == 1.0
    assert event["trace_id"].removeprefix("0x") == result.trace_id
    assert agent.scores[0].score == 1.0


def test_otlp_http_from_the_standard_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    with http_server() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        setup = setup_telemetry("test-service")
        assert setup.destination == f"OTLP/HTTP {collector.url}"

        scored_agent(setup.telemetry).generate_sync("Where is order 42?")
        setup.shutdown()

    received = [request.path for request in collector.requests]
    assert "/v1/traces" in received
    assert "/v1/logs" in received
    assert "/v1/metrics" in received
    # Every signal through agentscore's exporters, on its one HTTP stack.
    senders = {r.path: r.headers["user-agent"] for r in collector.requests}
    assert senders == dict.fromkeys(("/v1/traces", "/v1/logs", "/v1/metrics"), "agentscore")


def test_a_backend_redirecting_elsewhere_gets_no_credential_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each signal's POST is answered 302 to a second server: the export fails (and is tried
    again within the exporter's timeout), and nothing, the token least of all, goes there."""
    token = "Bearer otlp-t0ken-for-the-backend-only"
    monkeypatch.setattr(otlp, "_FIRST_RETRY", 0.05)
    with http_server(Reply(body=b"taken")) as elsewhere:
        moved = Reply(302, b"", {"Location": f"{elsewhere.url}/v1/traces"})
        with http_server(moved) as backend:
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", backend.url)
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization={quote(token)}")
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "0.5")
            setup = setup_telemetry("test-service")
            scored_agent(setup.telemetry).generate_sync("Where is order 42?")
            setup.shutdown(timeout=10)
    assert elsewhere.requests == []
    for path in ("/v1/traces", "/v1/logs", "/v1/metrics"):
        tries = [r.headers for r in backend.requests if r.path == path]
        assert tries and all(h["authorization"] == token for h in tries)
    traces = [r.body for r in backend.requests if r.path == "/v1/traces"]
    assert len(traces) > 1 and len(set(traces)) == 1  # the failed batch, tried again


def test_a_traces_only_endpoint_exports_only_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    """As for Phoenix, which has no OTLP logs or metrics endpoint."""
    with http_server() as collector:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{collector.url}/v1/traces")
        setup = setup_telemetry("test-service")
        scored_agent(setup.telemetry).generate_sync("Where is order 42?")
        setup.shutdown()
    assert {request.path for request in collector.requests} == {"/v1/traces"}
