"""agentscore's OTLP/HTTP span, log and metric exporters against a real HTTP server: the SDK's
bytes, its variables, retries within the timeout (Retry-After honoured), no request after
shutdown, and a redirect that is never followed."""

from __future__ import annotations

import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs as sdk_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as sdk_spans
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentscore._wire.otlp_out import OtlpSender
from agentscore._wire.otlp_settings import OtlpSettings
from agentscore.telemetry import otlp
from agentscore.telemetry.otlp import OtlpLogExporter, OtlpSpanExporter
from tests.support.http_server import HttpServer, Reply, Request, http_server

RESOURCE = Resource({"service.name": "exporter-test"})


def finished_spans(count: int = 3) -> tuple[ReadableSpan, ...]:
    kept = InMemorySpanExporter()
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(SimpleSpanProcessor(kept))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("invoke_agent support"):
        for n in range(count - 1):
            with tracer.start_as_current_span(f"evaluation {n}") as span:
                span.set_attributes({"gen_ai.evaluation.score.value": n / 2, "tags": ("a", "b")})
    return kept.get_finished_spans()


def sender(collector: HttpServer, timeout: float = 5.0) -> OtlpSender:
    return OtlpSender(OtlpSettings(f"{collector.url}/v1/traces", timeout=timeout))


def test_a_batch_processor_sends_the_sdk_exporters_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    with http_server() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=agents")
        provider = TracerProvider(resource=RESOURCE)
        provider.add_span_processor(BatchSpanProcessor(otlp.spans()))
        tracer = provider.get_tracer("test")
        with tracer.start_as_current_span("invoke_agent support") as agent:
            agent.set_attribute("gen_ai.agent.name", "support")
        provider.shutdown()
    [request] = collector.requests
    assert request.path == "/v1/traces"
    assert request.headers["content-type"] == "application/x-protobuf"
    assert request.headers["x-team"] == "agents"
    decoded = ExportTraceServiceRequest.FromString(request.body)
    [span] = decoded.resource_spans[0].scope_spans[0].spans
    assert span.name == "invoke_agent support"
    assert span.attributes[0].key == "gen_ai.agent.name"
    assert span.attributes[0].value.string_value == "support"


def test_the_bytes_posted_are_the_sdks() -> None:
    spans = finished_spans()
    with http_server() as collector:
        assert OtlpSpanExporter(sender=sender(collector)).export(spans) is SpanExportResult.SUCCESS
    [request] = collector.requests
    assert request.body == sdk_spans(spans).SerializeToString()


def test_an_endpoint_argument_is_the_full_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    with http_server() as collector:
        exporter = OtlpSpanExporter(f"{collector.url}/custom/traces")
        assert exporter.export(finished_spans(1)) is SpanExportResult.SUCCESS
    assert [r.path for r in collector.requests] == ["/custom/traces"]


def test_a_passing_refusal_is_sent_again_after_a_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(otlp, "_FIRST_RETRY", 0.05)
    spans = finished_spans()
    with http_server() as collector:
        collector.reply_with(Reply(503))

        def recover() -> None:
            while not collector.requests:
                time.sleep(0.005)
            collector.reply_with(Reply(200))

        threading.Thread(target=recover, daemon=True).start()
        result = OtlpSpanExporter(sender=sender(collector)).export(spans)
    assert result is SpanExportResult.SUCCESS
    assert len(collector.requests) == 2
    assert collector.requests[0].body == collector.requests[1].body


def test_a_backend_that_keeps_refusing_fails_the_export_within_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(otlp, "_FIRST_RETRY", 1.0)
    with http_server() as collector:
        collector.reply_with(Reply(500))
        started = time.monotonic()
        result = OtlpSpanExporter(sender=sender(collector, timeout=5)).export(finished_spans())
        took = time.monotonic() - started
    assert result is SpanExportResult.FAILURE
    # Tries at 0, 1 and 3 s; a fourth (at 7 s) would pass the 5 s timeout, so the export
    # ends after the third instead of waiting for it (the 2 s to spare keep a busy machine's
    # slow second try from being the last).
    assert len(collector.requests) == 3
    assert took < 7


def test_shutdown_ends_a_backoff_and_later_exports_send_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(otlp, "_FIRST_RETRY", 3600.0)
    with http_server() as collector:
        collector.reply_with(Reply(503))
        exporter = OtlpSpanExporter(sender=sender(collector, timeout=60))
        results: list[SpanExportResult] = []
        spans = finished_spans()
        exporting = threading.Thread(target=lambda: results.append(exporter.export(spans)))
        exporting.start()
        while not collector.requests:
            time.sleep(0.005)
        started = time.monotonic()
        exporter.shutdown()
        exporting.join(60)
        assert time.monotonic() - started < 60  # the shutdown cut the hour-long backoff
        assert results == [SpanExportResult.FAILURE]
        assert exporter.export(spans) is SpanExportResult.FAILURE
    assert len(collector.requests) == 1


def test_log_records_are_sent_as_the_sdk_encodes_them() -> None:
    kept = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    provider = LoggerProvider(resource=RESOURCE)
    provider.add_log_record_processor(SimpleLogRecordProcessor(kept))
    provider.get_logger("test").emit(
        LogRecord(
            event_name="gen_ai.evaluation.result",
            body="faithfulness",
            attributes={"gen_ai.evaluation.score.value": 0.5},
        )
    )
    records = kept.get_finished_logs()
    with http_server() as collector:
        logs_sender = OtlpSender(OtlpSettings(f"{collector.url}/v1/logs"))
        assert OtlpLogExporter(sender=logs_sender).export(records) is LogRecordExportResult.SUCCESS
    [request] = collector.requests
    assert request.path == "/v1/logs"
    assert request.body == sdk_logs(records).SerializeToString()


def test_with_no_endpoint_configured_the_sdks_default_is_used() -> None:
    assert OtlpSettings.from_environment("TRACES", {}).url == "http://localhost:4318/v1/traces"


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_a_forked_child_does_not_write_on_the_parents_kept_alive_connection() -> None:
    """A pre-forking server's worker inherits the exporter after the parent exported once."""
    peers: list[tuple[str, int]] = []

    class KeepAlive(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            peers.append(self.client_address)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), KeepAlive)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
        exporter = OtlpSpanExporter(sender=OtlpSender(OtlpSettings(url, timeout=5)))
        spans = finished_spans()
        assert exporter.export(spans) is SpanExportResult.SUCCESS
        pid = os.fork()
        if pid == 0:
            os._exit(0 if exporter.export(spans) is SpanExportResult.SUCCESS else 1)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        server.shutdown()
    parent, child, parent_again = peers
    assert child != parent  # its own connection
    assert parent_again == parent  # the parent's connection still carries its exports


def test_a_busy_backends_retry_after_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(otlp, "_FIRST_RETRY", 0.01)
    answers = iter([Reply(503, b"", {"Retry-After": "0.3"})])
    times: list[float] = []

    def answer(request: Request) -> Reply:
        times.append(time.monotonic())
        return next(answers, Reply(body=b""))

    with http_server(answer) as backend:
        url = f"{backend.url}/v1/traces"
        exporter = OtlpSpanExporter(sender=OtlpSender(OtlpSettings(url)))
        assert exporter.export(finished_spans()) is SpanExportResult.SUCCESS
    first, second = times
    assert second - first >= 0.3  # the backend's wait, not the 0.01 s backoff


def test_a_retry_after_past_the_timeout_gives_up_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(otlp, "_FIRST_RETRY", 0.01)
    with http_server(Reply(429, b"", {"Retry-After": "30"})) as backend:
        settings = OtlpSettings(f"{backend.url}/v1/traces", timeout=5)
        exporter = OtlpSpanExporter(sender=OtlpSender(settings))
        assert exporter.export(finished_spans()) is SpanExportResult.FAILURE
    assert len(backend.requests) == 1


def test_metrics_are_sent_as_the_sdk_encodes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    with http_server() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=agents")
        reader = PeriodicExportingMetricReader(otlp.metrics(), export_interval_millis=60_000)
        provider = MeterProvider(resource=RESOURCE, metric_readers=[reader])
        provider.get_meter("test").create_counter("agentscore.scores").add(3)
        provider.shutdown()  # collects and exports once more
    [request] = collector.requests
    assert request.path == "/v1/metrics" and request.headers["x-team"] == "agents"
    decoded = ExportMetricsServiceRequest.FromString(request.body)
    [metric] = decoded.resource_metrics[0].scope_metrics[0].metrics
    assert metric.name == "agentscore.scores"
    assert metric.sum.data_points[0].as_int == 3


def test_a_redirect_is_a_failed_export_retried_and_never_followed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(otlp, "_FIRST_RETRY", 0.05)
    spans = finished_spans()
    with http_server() as elsewhere:
        moved = {"Location": f"{elsewhere.url}/v1/traces"}
        with http_server(Reply(302, b"", moved)) as backend:
            settings = OtlpSettings(
                f"{backend.url}/v1/traces",
                headers={"x-api-key": "k3y-for-the-backend"},
                timeout=0.5,
            )
            result = OtlpSpanExporter(sender=OtlpSender(settings)).export(spans)
    posts = [request.body for request in backend.requests]
    assert result is SpanExportResult.FAILURE
    assert len(posts) > 1 and len(set(posts)) == 1  # tried again, the same batch
    assert elsewhere.requests == []
