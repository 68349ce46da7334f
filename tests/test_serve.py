"""`agentscore serve` end to end, with real clients: an app's OTLP/HTTP protobuf exporter sends
traces to the service (a subprocess), which scores them with the local judge and exports the
evaluations to an OTLP receiver run by the test."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import httpx
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from agentscore.serve.forward import FORWARD_USER_AGENT
from tests.support.http_server import Reply, Request, http_server
from tests.support.otel import span_context
from tests.support.serve import (
    ANSWER,
    PARAPHRASE,
    WRONG,
    attribute,
    evaluation_spans,
    metric_value,
    protobuf_request,
    recorded_generations,
    rss_kib,
    send_generations,
    serving,
    wait_for,
)


def test_evaluations_are_exported_under_the_apps_generation_spans(tmp_path: Path) -> None:
    with http_server() as receiver, serving(tmp_path, receiver.url) as serve:
        sent = send_generations(serve.url, [ANSWER, WRONG])
        wait_for(lambda: len(evaluation_spans(receiver)) == 2, what="two evaluations")
        health = serve.health_once_scored(2)
        assert "left_on_disk=0" in serve.terminate()
    by_parent = {
        (int.from_bytes(s.trace_id, "big"), int.from_bytes(s.parent_span_id, "big")): s
        for s in evaluation_spans(receiver)
    }
    assert set(by_parent) == set(sent)
    right, wrong = (by_parent[key] for key in sent)
    assert attribute(right, "gen_ai.evaluation.name") == "faithfulness"
    assert attribute(right, "gen_ai.evaluation.score.value") == 1.0
    assert attribute(right, "gen_ai.evaluation.score.label") == "pass"
    assert attribute(wrong, "gen_ai.evaluation.score.value") < 0.5
    assert attribute(wrong, "gen_ai.evaluation.score.label") == "fail"
    # The gen_ai.evaluation.result log records went to the receiver's logs endpoint too.
    assert any(item.path == "/v1/logs" for item in receiver.requests)
    assert health["spans_received"] == 4
    assert health["generations_found"] == 2
    assert health["scored"] == 2
    assert health["pending_jobs"] == 0


def test_a_full_queue_answers_503_with_retry_after_and_memory_stays_flat(tmp_path: Path) -> None:
    spans = recorded_generations([ANSWER] * 12)
    bodies = [protobuf_request(spans[i : i + 2]) for i in range(0, len(spans), 2)]
    headers = {"Content-Type": "application/x-protobuf"}
    # A judge budget that never allows a request: jobs stay queued, as in a judge outage.
    options = ("--max-queue", "10", "--requests-per-minute", "0.001")
    with http_server() as receiver, serving(tmp_path, receiver.url, *options) as serve:
        with httpx.Client(base_url=serve.url, headers=headers) as client:
            statuses = [client.post("/v1/traces", content=body) for body in bodies]
            assert [r.status_code for r in statuses] == [200] * 10 + [503, 503]
            assert statuses[-1].headers["Retry-After"] == "5"
            assert client.get("/readyz").status_code == 503
            rss_full = rss_kib(serve.process.pid)
            for _ in range(300):
                assert client.post("/v1/traces", content=bodies[-1]).status_code == 503
            rss_after = rss_kib(serve.process.pid)
        # The SDK's exporter treats the 503 as retryable and gives up only at its timeout.
        exporter = OTLPSpanExporter(f"{serve.url}/v1/traces", timeout=2)
        assert exporter.export(spans[-2:]) is SpanExportResult.FAILURE
        health = serve.health()
    assert health["pending_jobs"] == 10
    assert health["judge_requests"] == 0
    assert health["requests_rejected"] >= 303
    assert rss_after - rss_full < 2_048  # KiB: rejected requests are not read into memory


def test_otlp_json_with_gzip_is_read_like_protobuf(tmp_path: Path) -> None:
    spans = recorded_generations([ANSWER])
    request = json_format.MessageToDict(encode_spans(spans))
    # OTLP/JSON writes ids as hex, where the protobuf JSON mapping writes base64.
    for resource in request["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    body = gzip.compress(json.dumps(request).encode())
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    with http_server() as receiver, serving(tmp_path, receiver.url) as serve:
        reply = httpx.post(f"{serve.url}/v1/traces", content=body, headers=headers)
        assert reply.status_code == 200
        assert reply.headers["content-type"] == "application/json"
        bad = httpx.post(f"{serve.url}/v1/traces", content=b"{not json", headers=headers)
        assert bad.status_code == 400
        wait_for(lambda: len(evaluation_spans(receiver)) == 1, what="the evaluation")
    [evaluation] = evaluation_spans(receiver)
    agent = next(s for s in spans if s.name.startswith("invoke_agent"))
    assert int.from_bytes(evaluation.parent_span_id, "big") == span_context(agent).span_id
    assert attribute(evaluation, "gen_ai.evaluation.score.value") == 1.0


CASCADE = {"SERVE_TEST_JUDGE": "cascade"}


def test_work_over_the_judge_budget_waits_then_expires_past_max_age(tmp_path: Path) -> None:
    options = ("--requests-per-minute", "1", "--max-age", "1")
    with (
        http_server() as receiver,
        serving(tmp_path, receiver.url, *options, env=CASCADE) as serve,
    ):
        send_generations(serve.url, [PARAPHRASE] * 3)  # each needs one LLM request
        wait_for(lambda: serve.health()["dropped"] == 2, what="two jobs dropped")
        # An expired job's row goes once its evaluation is exported.
        wait_for(lambda: serve.health()["pending_jobs"] == 0, what="the rows deleted")
        health = serve.health()
        wait_for(lambda: metric_value(receiver, "agentscore.serve.dropped") == 2, what="metric")
    assert health["judge_requests"] == 1  # one request a minute: the first job only
    assert health["judge_tokens"] == 110
    assert (health["scored"], health["failed"]) == (1, 0)
    # Each expired job is exported as such, so a team sees which generation went unscored.
    errors = sorted(str(attribute(span, "error.type")) for span in evaluation_spans(receiver))
    assert errors == ["ExpiredError", "ExpiredError", "None"]
    assert metric_value(receiver, "agentscore.serve.spans_received") == 6
    assert metric_value(receiver, "agentscore.serve.judge_requests") == 1


def test_what_the_local_stage_of_a_cascade_decides_costs_no_judge_budget(tmp_path: Path) -> None:
    options = ("--requests-per-minute", "1", "--max-age", "5")
    with (
        http_server() as receiver,
        serving(tmp_path, receiver.url, *options, env=CASCADE) as serve,
    ):
        send_generations(serve.url, [ANSWER] * 3 + [PARAPHRASE])
        wait_for(lambda: serve.health()["scored"] == 4, what="all four scored")
        wait_for(lambda: len(evaluation_spans(receiver)) == 4, what="four evaluations")
        health = serve.health()
    assert health["judge_requests"] == 1  # only the paraphrase reached the LLM
    assert health["dropped"] == 0
    # The cascade's self-check on the health page: deciding, nothing compared yet.
    assert health["cascades"] == {"faithfulness": {"local_deciding": True, "agreement": {}}}
    scores = [
        attribute(span, "gen_ai.evaluation.score.value") for span in evaluation_spans(receiver)
    ]
    assert scores == [1.0, 1.0, 1.0, 1.0]


def test_a_backend_without_a_logs_endpoint_gets_spans_and_jobs_do_not_pile_up(
    tmp_path: Path,
) -> None:
    def trace_only(request: Request) -> Reply:  # as Phoenix is
        return Reply(404 if request.path == "/v1/logs" else 200)

    with http_server(trace_only) as receiver, serving(tmp_path, receiver.url) as serve:
        send_generations(serve.url, [ANSWER, WRONG])
        wait_for(lambda: len(evaluation_spans(receiver)) == 2, what="both evaluations")
        wait_for(lambda: serve.health()["pending_jobs"] == 0, what="the jobs done")
        health = serve.health_once_scored(2)
        log = serve.log.read_text()
    assert health["scored"] == 2
    assert "serve_logs_endpoint_missing" in log
    log_posts = [item for item in receiver.requests if item.path == "/v1/logs"]
    assert len(log_posts) == 1 and log_posts[0].body == b""  # the start-up probe only


def test_forward_passes_requests_on_unchanged_and_refusals_back(tmp_path: Path) -> None:
    spans = recorded_generations([ANSWER])
    body = protobuf_request(spans)
    headers = {"Content-Type": "application/x-protobuf"}
    with http_server() as backend:
        forward = ("--forward", f"{backend.url}/v1/traces")
        with serving(tmp_path, backend.url, *forward) as serve:
            # The backend refuses: so does the service, and keeps nothing.
            backend.reply_with(Reply(503))
            refused = httpx.post(f"{serve.url}/v1/traces", content=body, headers=headers)
            assert refused.status_code == 503
            assert refused.headers["Retry-After"] == "5"
            assert serve.health()["spans_received"] == 0
            backend.reply_with(Reply(200))
            accepted = httpx.post(f"{serve.url}/v1/traces", content=body, headers=headers)
            assert accepted.status_code == 200
            wait_for(lambda: len(evaluation_spans(backend)) == 1, what="the evaluation")
            health = serve.health_once_scored(1)
    app_requests = [
        item.body
        for item in backend.requests
        if item.path == "/v1/traces" and item.headers.get("user-agent") == FORWARD_USER_AGENT
    ]
    assert app_requests == [body, body]  # the refused try, then the accepted one, byte for byte
    assert health["forward_failures"] == 1
    assert health["scored"] == 1


def test_forward_sends_the_configured_credentials_and_never_logs_them(tmp_path: Path) -> None:
    token = "fwd-7Qm2xK9pL4vN8rT3"
    body = protobuf_request(recorded_generations([ANSWER]))
    headers = {"Content-Type": "application/x-protobuf"}
    secret = {"AGENTSCORE_FORWARD_HEADERS": f"Authorization=Bearer%20{token},X-Team=support"}
    with http_server() as backend:
        forward = ("--forward", f"{backend.url}/v1/traces")
        with serving(tmp_path, backend.url, *forward, env=secret) as serve:
            backend.reply_with(Reply(401))  # a refusal names the status, not what was sent
            assert (
                httpx.post(f"{serve.url}/v1/traces", content=body, headers=headers).status_code
                == 503
            )
            backend.reply_with(Reply(200))
            assert (
                httpx.post(f"{serve.url}/v1/traces", content=body, headers=headers).status_code
                == 200
            )
            wait_for(lambda: len(evaluation_spans(backend)) == 1, what="the evaluation")
            log = serve.log.read_text()
    forwarded = [item for item in backend.requests if item.body == body]
    assert len(forwarded) == 2
    assert all(item.headers["authorization"] == f"Bearer {token}" for item in forwarded)
    assert all(item.headers["x-team"] == "support" for item in forwarded)
    assert token not in log
