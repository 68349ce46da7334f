"""OTLP/gRPC ingest in `agentscore serve`, with real clients: the OpenTelemetry gRPC exporter
(and a bare grpcio channel, to read the status details an exporter acts on) sends traces to
the service (a subprocess), which scores them with the local judge and exports evaluations to
an OTLP/HTTP receiver run by the test."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path

import grpc
import pytest
from google.rpc.error_details_pb2 import RetryInfo
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

from agentscore.cli import main
from tests.support.grpc_export import export_raw
from tests.support.http_server import http_server
from tests.support.serve import (
    ANSWER,
    WRONG,
    attribute,
    evaluation_spans,
    listening_ports,
    open_trace_spans,
    protobuf_request,
    recorded_generations,
    serving,
    start_serve,
    traced_generation,
    wait_for,
)
from tests.support.tls import self_signed

TOKEN = "grpc-test-token-0123456789abcdef"


def grpc_exporter(
    target: str, *, timeout: float | None = None, compression: grpc.Compression | None = None
) -> OTLPSpanExporter:
    return OTLPSpanExporter(
        endpoint=f"http://{target}", insecure=True, timeout=timeout, compression=compression
    )


def send_over_grpc(
    target: str, answers: list[str], *, compression: grpc.Compression | None = None
) -> list[tuple[int, int]]:
    """Trace one generation per answer, exported by the real OTLP gRPC exporter."""
    provider = TracerProvider(resource=Resource.create({"service.name": "grpc-app"}))
    provider.add_span_processor(SimpleSpanProcessor(grpc_exporter(target, compression=compression)))
    sent = [traced_generation(provider, answer, request=i) for i, answer in enumerate(answers)]
    provider.shutdown()
    return sent


def retry_delay(error: grpc.Call) -> tuple[float, float]:
    """The RetryInfo delay as the Collector reads it (status details) and as the Python
    exporter reads it (its own trailer)."""
    trailers = dict(error.trailing_metadata() or ())
    status = Status.FromString(trailers["grpc-status-details-bin"])
    [detail] = status.details
    info = RetryInfo()
    assert detail.Unpack(info)
    direct = RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
    return info.retry_delay.seconds, direct.retry_delay.seconds


def test_the_grpc_exporters_generations_are_scored_under_their_spans(tmp_path: Path) -> None:
    with http_server() as receiver, serving(tmp_path, receiver.url) as serve:
        sent = send_over_grpc(serve.grpc_target, [ANSWER])
        # The exporter's gzip: gRPC decompresses before the service reads the bytes.
        sent += send_over_grpc(serve.grpc_target, [WRONG], compression=grpc.Compression.Gzip)
        wait_for(lambda: len(evaluation_spans(receiver)) == 2, what="two evaluations")
        health = serve.health_once_scored(2)
        assert "left_on_disk=0" in serve.terminate()
    by_parent = {
        (int.from_bytes(s.trace_id, "big"), int.from_bytes(s.parent_span_id, "big")): s
        for s in evaluation_spans(receiver)
    }
    assert set(by_parent) == set(sent)
    right, wrong = (by_parent[key] for key in sent)
    assert attribute(right, "gen_ai.evaluation.score.value") == 1.0
    assert attribute(right, "gen_ai.evaluation.score.label") == "pass"
    assert attribute(wrong, "gen_ai.evaluation.score.label") == "fail"
    assert health["spans_received"] == 4
    assert health["scored"] == 2
    assert health["pending_jobs"] == 0


def test_an_accepted_export_is_on_disk_before_its_ok(tmp_path: Path) -> None:
    # A judge slower than the test: the job is still queued when the service is killed.
    with http_server() as receiver:
        serve = start_serve(tmp_path, receiver.url, judge_delay=60)
        try:
            [(trace_id, span_id)] = send_over_grpc(serve.grpc_target, [ANSWER])
            assert serve.health()["jobs_queued"] == 1
        finally:
            serve.kill()
        assert evaluation_spans(receiver) == []
        with serving(tmp_path, receiver.url) as again:  # the same queue file
            wait_for(lambda: len(evaluation_spans(receiver)) == 1, what="the evaluation")
            assert again.health_once_scored(1)["scored"] == 1
    [evaluation] = evaluation_spans(receiver)
    assert int.from_bytes(evaluation.trace_id, "big") == trace_id
    assert int.from_bytes(evaluation.parent_span_id, "big") == span_id


def test_a_full_queue_is_resource_exhausted_with_retry_info_the_exporter_honours(
    tmp_path: Path,
) -> None:
    spans = recorded_generations([ANSWER] * 3)
    bodies = [protobuf_request(spans[i : i + 2]) for i in range(0, len(spans), 2)]
    # A judge budget that never allows a request: jobs stay queued, as in a judge outage.
    options = ("--max-queue", "2", "--requests-per-minute", "0.001")
    with http_server() as receiver, serving(tmp_path, receiver.url, *options) as serve:
        codes = [export_raw(serve.grpc_target, body) for body in bodies]
        assert [code for code, _ in codes] == [grpc.StatusCode.OK] * 2 + [
            grpc.StatusCode.RESOURCE_EXHAUSTED
        ]
        assert retry_delay(codes[-1][1]) == (5, 5)
        before = serve.health()["requests_rejected"]
        exporter = grpc_exporter(serve.grpc_target, timeout=3)
        started = time.monotonic()
        assert exporter.export(spans[-2:]) is SpanExportResult.FAILURE
        waited = time.monotonic() - started
        health = serve.health()
    # Told to wait 5 s with 3 s left, the exporter gives up: it never tries again (its own
    # backoff would have, after about 1 s and 2 s), nor waits the 5 s out.
    assert health["requests_rejected"] - before == 1
    assert waited < 5
    assert health["pending_jobs"] == 2
    assert health["judge_requests"] == 0


def test_unreadable_or_oversized_requests_are_refused_and_nothing_is_queued(
    tmp_path: Path,
) -> None:
    with http_server() as receiver, serving(tmp_path, receiver.url) as serve:
        code, error = export_raw(serve.grpc_target, b"\xff\xff\xff\xff")
        # The same 16 MiB bound as OTLP/HTTP bodies, enforced by gRPC before any reading.
        oversized, _ = export_raw(serve.grpc_target, b"\x00" * (16 * 1024 * 1024 + 1))
        health = serve.health()
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert "unreadable OTLP" in str(error.details())
    assert oversized is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert health["spans_received"] == 0
    assert health["jobs_queued"] == 0


def test_with_an_ingest_token_only_the_right_bearer_metadata_gets_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"AGENTSCORE_INGEST_TOKEN": TOKEN}
    body = protobuf_request(recorded_generations([ANSWER]))
    with http_server() as receiver, serving(tmp_path, receiver.url, env=env) as serve:
        missing = export_raw(serve.grpc_target, body)
        wrong = export_raw(serve.grpc_target, body, (("authorization", f"Bearer {TOKEN}x"),))
        basic = export_raw(serve.grpc_target, body, (("authorization", f"Basic {TOKEN}"),))
        right = ("authorization", f"Bearer {TOKEN}")
        twice = export_raw(serve.grpc_target, body, (right, ("authorization", "Bearer x")))
        # UNAUTHENTICATED is final: the real exporter fails without retrying.
        assert grpc_exporter(serve.grpc_target).export([]) is SpanExportResult.FAILURE
        refused = serve.health()
        # As docs/deploy.md shows it: the token in the standard OTLP headers variable.
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer%20{TOKEN}")
        sent = send_over_grpc(serve.grpc_target, [ANSWER])
        wait_for(lambda: len(evaluation_spans(receiver)) == 1, what="the evaluation")
    for code, error in (missing, wrong, basic, twice):
        assert code is grpc.StatusCode.UNAUTHENTICATED
        assert TOKEN not in str(error.details())
    assert refused["requests_unauthorized"] == 5
    assert refused["spans_received"] == 0
    assert refused["jobs_queued"] == 0
    assert refused["judge_requests"] == 0
    [evaluation] = evaluation_spans(receiver)
    assert (int.from_bytes(evaluation.parent_span_id, "big"),) == (sent[0][1],)
    assert TOKEN not in serve.log.read_text()


def test_the_drain_answers_unavailable_with_retry_info(tmp_path: Path) -> None:
    body = protobuf_request(recorded_generations([ANSWER]))
    with http_server() as receiver:
        # A job in flight for 3 s keeps the drain going while the test asks.
        with serving(tmp_path, receiver.url, judge_delay=3) as serve:
            assert export_raw(serve.grpc_target, body)[0] is grpc.StatusCode.OK
            serve.process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 10
            while True:
                code, error = export_raw(serve.grpc_target, body)
                if code is not grpc.StatusCode.OK or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert serve.process.wait(60) == -signal.SIGTERM
        wait_for(lambda: len(evaluation_spans(receiver)) >= 1, what="the drained job")
    assert code is grpc.StatusCode.UNAVAILABLE
    assert error.details() == "draining"
    assert retry_delay(error) == (5, 5)


def test_grpc_listens_beside_http_unless_turned_off(tmp_path: Path) -> None:
    def port_of(address: str) -> int:
        return int(address.rsplit(":", 1)[1])

    with http_server() as receiver:
        with serving(tmp_path, receiver.url) as serve:
            assert listening_ports(serve.process.pid) == {
                port_of(serve.url),
                port_of(serve.grpc_target),
            }
        with serving(tmp_path, receiver.url, "--grpc-port", "off") as serve:
            assert listening_ports(serve.process.pid) == {port_of(serve.url)}


def test_a_grpc_port_that_is_not_a_port_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--scorers", "m:a", "--grpc-port", "nope"])
    assert exit_info.value.code == 2
    assert "a port number or 'off', not 'nope'" in capsys.readouterr().err


def test_capture_content_puts_the_answer_and_the_reason_on_evaluations(tmp_path: Path) -> None:
    outputs = {}
    for capture in (False, True):
        flag = ("--capture-content",) if capture else ()
        folder = tmp_path / str(capture)
        folder.mkdir()
        with http_server() as receiver, serving(folder, receiver.url, *flag) as serve:
            send_over_grpc(serve.grpc_target, [ANSWER])
            wait_for(lambda: len(evaluation_spans(receiver)) == 1, what="the evaluation")
        [evaluation] = evaluation_spans(receiver)
        outputs[capture] = (
            attribute(evaluation, "input.value"),
            json.loads(attribute(evaluation, "output.value")),
        )
    # Off (the default): what a backend shows is the verdict and its counts, no answer.
    assert outputs[False] == (
        None,
        {
            "label": "pass",
            "score": 1.0,
            "explanation": "1 claim: 1 supported, 0 contradicted, 0 unverifiable",
        },
    )
    answer, output = outputs[True]
    assert answer == ANSWER
    assert output["label"] == "pass"
    assert output["score"] == 1.0
    assert output["explanation"] != outputs[False][1]["explanation"]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_and_a_token_file_over_grpc_with_the_sdk_exporter(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    token_file = tmp_path / "ingest-token"
    token_file.write_text(TOKEN + "\n")
    options = (
        *("--ssl-certfile", str(cert), "--ssl-keyfile", str(key)),
        *("--ingest-token-file", str(token_file)),
    )
    with http_server() as receiver, serving(tmp_path, receiver.url, *options) as serve:
        trusted = grpc.ssl_channel_credentials(cert.read_bytes())
        exporter = OTLPSpanExporter(
            endpoint=f"https://{serve.grpc_target}",
            credentials=trusted,
            headers={"authorization": f"Bearer {TOKEN}"},
        )
        assert exporter.export(recorded_generations([ANSWER])) is SpanExportResult.SUCCESS
        wait_for(lambda: len(evaluation_spans(receiver)) == 1, what="the evaluation")
        # Plain gRPC is not served on the TLS port.
        plain, _ = export_raw(serve.grpc_target, b"", (("authorization", f"Bearer {TOKEN}"),))
        health = serve.health_once_scored(1)
    assert plain is grpc.StatusCode.UNAVAILABLE
    assert health["scored"] == 1
    assert TOKEN not in serve.log.read_text()


def test_open_traces_past_the_byte_budget_are_resource_exhausted_retry_or_final(
    tmp_path: Path,
) -> None:
    bodies = [protobuf_request([span]) for span in open_trace_spans(30, 100_000)]
    too_big_body = protobuf_request(open_trace_spans(3, 400_000))
    options = ("--max-open-trace-bytes", "1MiB")
    with http_server() as receiver, serving(tmp_path, receiver.url, *options) as serve:
        replies = [export_raw(serve.grpc_target, body) for body in bodies]
        full = serve.health()
        too_big, error = export_raw(serve.grpc_target, too_big_body)
    codes = [code for code, _ in replies]
    accepted = codes.count(grpc.StatusCode.OK)
    refused = [grpc.StatusCode.RESOURCE_EXHAUSTED] * (30 - accepted)
    assert 5 <= accepted <= 10 and codes == [grpc.StatusCode.OK] * accepted + refused
    # Past the budget now: retry after the delay the service asks for.
    assert all(retry_delay(reply) == (5, 5) for _, reply in replies[accepted:])
    assert full["spans_received"] == accepted  # the refused were not kept
    # Larger than the whole budget: final, so no retry information.
    assert too_big is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "larger than the open-trace budget" in str(error.details())
    assert "grpc-status-details-bin" not in dict(error.trailing_metadata() or ())
