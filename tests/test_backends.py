"""Phoenix annotation and Langfuse score sinks, against a recording HTTP server."""

from __future__ import annotations

import base64

import pytest

from agentscore.result import ScoreError, ScoreResult, ScoreStatus
from agentscore.telemetry.backends import LangfuseScores, PhoenixAnnotations
from tests.http_collector import http_collector

pytestmark = pytest.mark.anyio

RESULT = ScoreResult(
    scorer_id="hallucination",
    run_id="run-1",
    status=ScoreStatus.SCORED,
    score=0.5,
    passed=True,
    label="pass",
    reason='The score is 0.5 because "Members get free express shipping" is not supported.',
    analyze_step_result={"verdicts": [{"verdict": "yes"}, {"verdict": "unsure"}]},
    trace_id="0af7651916cd43dd8448eb211c80319c",
    span_id="b7ad6b7169203331",
    judge_model="local",
)


async def test_phoenix_annotation_on_the_agent_span() -> None:
    with http_collector() as collector:
        await PhoenixAnnotations(collector.url, api_key="px-secret-key")(RESULT)
    [request] = collector.received
    assert request.path == "/v1/span_annotations"
    assert request.headers["Authorization"] == "Bearer px-secret-key"
    [annotation] = request.json()["data"]
    assert annotation["span_id"] == RESULT.span_id
    assert annotation["name"] == "hallucination"
    assert annotation["annotator_kind"] == "LLM"
    assert annotation["result"] == {
        "score": 0.5,
        "label": "pass",
        "explanation": "2 claims: 1 supported, 0 contradicted, 1 unverifiable",
    }


async def test_langfuse_score_with_basic_auth_and_opt_in_content() -> None:
    with http_collector() as collector:
        sink = LangfuseScores(collector.url, public_key="pk-lf", secret_key="sk-lf-secret")
        sink.capture_content = True
        await sink(RESULT)
    [request] = collector.received
    assert request.path == "/api/public/scores"
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(
        b"pk-lf:sk-lf-secret"
    ).decode("ascii")
    body = request.json()
    assert body["traceId"] == RESULT.trace_id
    assert body["observationId"] == RESULT.span_id
    assert body["value"] == 0.5
    assert body["comment"] == RESULT.reason


async def test_failures_are_logged_never_raised(capsys: pytest.CaptureFixture[str]) -> None:
    with http_collector() as collector:
        collector.status = 500
        await LangfuseScores(collector.url, public_key="pk", secret_key="sk-lf-hidden")(RESULT)
    await PhoenixAnnotations("http://127.0.0.1:9", timeout=2)(RESULT)  # nothing listens there
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
    with http_collector() as collector:
        await LangfuseScores(collector.url, public_key="p", secret_key="s")(failed)
        await PhoenixAnnotations(collector.url)(untraced)
    assert collector.received == []
