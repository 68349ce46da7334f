"""`agentscore serve` exposed to a network: ingest credentials, TLS, slow and malformed
requests, connection floods, redirecting forward backends, the drain, and starting it from an
app's folder. The service is a real subprocess; clients are real sockets and exporters."""

from __future__ import annotations

import os
import resource
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.support.http_server import Reply, http_server
from tests.support.serve import (
    ANSWER,
    PARAPHRASE,
    SERVE_SCORERS,
    attribute,
    evaluation_spans,
    open_trace_spans,
    protobuf_request,
    recorded_generations,
    send_generations,
    serving,
    start_serve,
    wait_for,
)
from tests.support.tls import self_signed

TOKEN = "ingest-9fK2mQ7xR4tV8wZ1pL6n"
PROTOBUF = {"Content-Type": "application/x-protobuf"}
CASCADE = {"SERVE_TEST_JUDGE": "cascade"}  # the paraphrase costs one request to a scripted LLM


def test_with_a_token_only_requests_carrying_it_are_read_and_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = protobuf_request(recorded_generations([PARAPHRASE]))
    env = {**CASCADE, "AGENTSCORE_INGEST_TOKEN": TOKEN}
    with http_server() as receiver, serving(tmp_path, receiver.url, env=env) as serve:
        traces = f"{serve.url}/v1/traces"
        refused = [
            httpx.post(traces, content=body, headers=PROTOBUF),
            httpx.post(traces, content=body, headers={**PROTOBUF, "Authorization": "Bearer x"}),
            httpx.post(
                traces, content=body, headers={**PROTOBUF, "Authorization": f"Basic {TOKEN}"}
            ),
            httpx.post(
                traces, content=body, headers={**PROTOBUF, "Authorization": f"Bearer {TOKEN}0"}
            ),
        ]
        # The SDK's exporter gives up on a 401 at once (not retryable).
        assert OTLPSpanExporter(traces).export(recorded_generations([ANSWER])) == (
            SpanExportResult.FAILURE
        )
        shut_out = serve.health()  # health stays open
        assert httpx.get(f"{serve.url}/readyz").status_code == 200
        # The documented way: the exporter reads the header from the OTEL_* variable.
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", f"authorization=Bearer%20{TOKEN}")
        send_generations(serve.url, [PARAPHRASE])
        wait_for(lambda: len(evaluation_spans(receiver)) == 1, what="the evaluation")
        health = serve.health_once_scored(1)
        log = serve.log.read_text()
    assert [reply.status_code for reply in refused] == [401] * 4
    assert all(reply.headers["WWW-Authenticate"] == "Bearer" for reply in refused)
    assert all(TOKEN not in reply.text for reply in refused)
    assert shut_out["requests_unauthorized"] == 5
    assert shut_out["spans_received"] == 0  # never read
    assert shut_out["queue_depth"] == 0 and shut_out["jobs_queued"] == 0
    assert shut_out["judge_requests"] == 0
    assert health["scored"] == 1
    assert health["judge_requests"] == 1
    assert attribute(evaluation_spans(receiver)[0], "gen_ai.evaluation.score.value") == 1.0
    assert TOKEN not in log
    assert "serve_ingest_open" not in log


def test_a_public_address_without_a_token_is_warned_about(tmp_path: Path) -> None:
    with (
        http_server() as receiver,
        serving(tmp_path, receiver.url, "--host", "0.0.0.0") as serve,
    ):
        log = serve.log.read_text()
    assert "serve_ingest_open" in log and "AGENTSCORE_INGEST_TOKEN" in log


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_and_a_token_file_with_the_sdk_exporter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # requests lets these override the exporter's own certificate_file (psf/requests#3829).
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    cert, key = self_signed(tmp_path)
    token_file = tmp_path / "ingest-token"
    token_file.write_text(TOKEN + "\n")
    options = (
        *("--ssl-certfile", str(cert), "--ssl-keyfile", str(key)),
        *("--ingest-token-file", str(token_file), "--host", "0.0.0.0"),
    )
    spans = recorded_generations([ANSWER])
    with http_server() as receiver, serving(tmp_path, receiver.url, *options) as serve:
        assert serve.url.startswith("https://")
        exporter = OTLPSpanExporter(
            f"{serve.url}/v1/traces",
            certificate_file=str(cert),
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert exporter.export(spans) is SpanExportResult.SUCCESS
        wait_for(lambda: len(evaluation_spans(receiver)) == 1, what="the evaluation")
        with pytest.raises(httpx.TransportError):  # plain HTTP is not served
            httpx.post(f"http://{serve.url.removeprefix('https://')}/v1/traces", content=b"")
        log = serve.log.read_text()
    assert "serve_ingest_open" not in log
    assert TOKEN not in log


def _raise_own_file_limit(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


def _half_sent(port: int, index: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    if index % 2:  # headers cut off mid-way
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Ty")
    else:  # headers whole, the body promised and never sent
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            b"Content-Length: 100000\r\n\r\n\x0a\x00"
        )
    return sock


def test_300_half_sent_requests_do_not_keep_a_fresh_client_out(tmp_path: Path) -> None:
    _raise_own_file_limit(1024)
    body = protobuf_request(recorded_generations([ANSWER]))
    # 256 descriptors for the service, as when the issue was found: fewer than the attackers.
    with http_server() as receiver, serving(tmp_path, receiver.url, nofile=256) as serve:
        port = int(serve.url.rsplit(":", 1)[1])
        attackers = [_half_sent(port, i) for i in range(300)]
        try:
            # Answered before the attackers' 10 s header timeout would have freed a slot.
            posted = httpx.post(f"{serve.url}/v1/traces", content=body, headers=PROTOBUF, timeout=8)
            health = httpx.get(f"{serve.url}/healthz", timeout=8)
            wait_for(lambda: len(evaluation_spans(receiver)) == 1, what="the evaluation")
        finally:
            for sock in attackers:
                sock.close()
        log = serve.log.read_text()
    assert posted.status_code == 200
    assert health.status_code == 200
    assert health.json()["spans_received"] == 2
    assert "serve_connections_capped" in log  # 256 descriptors: 144 connections at most
    assert "Too many open files" not in log


def _reply_to(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


def test_slow_headers_and_slow_bodies_are_answered_408_and_closed(tmp_path: Path) -> None:
    options = ("--header-timeout", "1", "--body-timeout", "1")
    with http_server() as receiver, serving(tmp_path, receiver.url, *options) as serve:
        port = int(serve.url.rsplit(":", 1)[1])
        slow_headers, slow_body = _half_sent(port, 1), _half_sent(port, 0)
        # The service's 1 s timeouts end them: without those, the reads would time out.
        headers_reply = _reply_to(slow_headers, 60)
        body_reply = _reply_to(slow_body, 60)
        health = serve.health()
    assert headers_reply.startswith(b"HTTP/1.1 408 ")
    assert body_reply.startswith(b"HTTP/1.1 408 ")
    assert health["requests_timed_out"] == 1  # the body's; a header timeout never reaches the app
    assert health["spans_received"] == 0


def test_a_non_ascii_header_value_is_400_not_500(tmp_path: Path) -> None:
    body = protobuf_request(recorded_generations([ANSWER]))
    request = (
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-proto\xffbuf\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    with http_server() as receiver, serving(tmp_path, receiver.url) as serve:
        port = int(serve.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(request)
            reply = _reply_to(sock, 5)
        health = serve.health()
        log = serve.log.read_text()
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert b"not ASCII" in reply
    assert "Traceback" not in log
    assert health["spans_received"] == 0


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirecting_forward_backend_is_a_failed_forward(tmp_path: Path, status: int) -> None:
    credential = "fwd-Zx81Lq5Wm3Rt9Yb2"
    body = protobuf_request(recorded_generations([ANSWER]))
    secret = {"AGENTSCORE_FORWARD_HEADERS": f"Authorization=Bearer%20{credential}"}
    with (
        http_server(Reply(body=b"stolen")) as elsewhere,
        http_server() as receiver,
    ):
        # The backend sends every POST to another origin, which would happily take it.
        moved = Reply(status, b"", {"Location": f"{elsewhere.url}/v1/traces"})
        with http_server(moved) as backend:
            forward = ("--forward", f"{backend.url}/v1/traces")
            with serving(tmp_path, receiver.url, *forward, env=secret) as serve:
                reply = httpx.post(f"{serve.url}/v1/traces", content=body, headers=PROTOBUF)
                health = serve.health()
                log = serve.log.read_text()
            assert [request.body for request in backend.requests] == [body]
    assert reply.status_code == 503
    assert reply.headers["Retry-After"] == "5"
    assert reply.json() == {"error": f"backend answered {status}"}
    assert elsewhere.requests == []  # and so the credential never went there
    assert health["forward_failures"] == 1
    assert health["spans_received"] == 0
    assert credential not in log


def test_an_export_answered_by_a_redirect_fails_is_retried_and_never_follows_it(
    tmp_path: Path,
) -> None:
    """The service's own export to a backend that answers every POST 302 to another server:
    the export failed (the job stays on disk, degraded), nothing went to the other server,
    and once the backend takes it the evaluation arrives and the job is done."""
    credential = "exp-Qm4Tz8Lw2Rv6Xc1N"
    with http_server() as elsewhere:
        moved = Reply(302, b"", {"Location": f"{elsewhere.url}/v1/traces"})
        with http_server(moved) as backend:
            otel = {
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{backend.url}/v1/traces",
                "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{credential}",
            }
            with serving(tmp_path, backend.url, otel=otel) as serve:
                send_generations(serve.url, [ANSWER])
                wait_for(lambda: serve.health()["export_failures"] >= 2, what="export retries")
                during = serve.health()
                backend.reply_with(Reply())  # the backend is fixed
                wait_for(lambda: serve.health()["pending_jobs"] == 0, what="the export")
                log = serve.log.read_text()
    assert "export_failing" in during["problems"] and during["pending_jobs"] == 1
    assert elsewhere.requests == []
    traces = [r.body for r in backend.requests if r.path.endswith("/traces")]
    assert len(traces) >= 3 and len(set(traces)) == 1  # the same evaluation, sent again
    assert all(r.headers["authorization"] == f"Bearer {credential}" for r in backend.requests)
    assert credential not in log


def test_requests_during_the_drain_are_answered_503(tmp_path: Path) -> None:
    # Each job's judge takes 3 s, so the drain lasts while the test knocks.
    options = ("--drain-timeout", "10")
    with (
        http_server() as receiver,
        serving(tmp_path, receiver.url, *options, judge_delay=3.0) as serve,
    ):
        send_generations(serve.url, [ANSWER])
        wait_for(lambda: serve.health()["jobs_queued"] == 1, what="the job queued")
        serve.process.send_signal(15)
        wait_for(lambda: serve.health()["status"] == "draining", what="the drain", timeout=5)
        during = httpx.post(f"{serve.url}/v1/traces", content=b"", headers=PROTOBUF)
        ready = httpx.get(f"{serve.url}/readyz")
        assert serve.process.wait(30) == -15
        stopped = serve.log.read_text()
    assert during.status_code == 503
    assert during.json() == {"error": "draining"}
    assert during.headers["Retry-After"] == "5"
    assert ready.status_code == 503
    assert "left_on_disk=0" in stopped  # the drain still scored the job
    assert len(evaluation_spans(receiver)) == 1


def test_scorers_are_imported_from_the_current_directory(tmp_path: Path) -> None:
    app = tmp_path / "myapp"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "scoring.py").write_text(
        "from agentscore import Evals\n"
        "from agentscore.scorers import create_faithfulness_scorer\n\n"
        "evals = Evals(scorers=[create_faithfulness_scorer('local')])\n"
    )
    console_script = str(Path(sys.executable).parent / "agentscore")
    command = [console_script, "serve", "--scorers", "myapp.scoring:evals"]
    with http_server() as receiver:
        serve = start_serve(tmp_path, receiver.url, command=command)
        try:
            send_generations(serve.url, [ANSWER])
            wait_for(lambda: len(evaluation_spans(receiver)) == 1, what="the evaluation")
        finally:
            serve.kill()
    assert attribute(evaluation_spans(receiver)[0], "gen_ai.evaluation.name") == "faithfulness"


def test_open_traces_past_the_byte_budget_get_503_and_nothing_of_them_is_kept(
    tmp_path: Path,
) -> None:
    bodies = [protobuf_request([span]) for span in open_trace_spans(30, 100_000)]
    too_big_body = protobuf_request(open_trace_spans(3, 400_000))
    options = ("--max-open-trace-bytes", "1MiB", "--idle-timeout", "2")
    with (
        http_server() as receiver,
        serving(tmp_path, receiver.url, *options) as serve,
        httpx.Client(base_url=serve.url, headers=PROTOBUF) as client,
    ):
        replies = [client.post("/v1/traces", content=body) for body in bodies]
        full = serve.health()
        too_big = client.post("/v1/traces", content=too_big_body)
        # Idle traces close (their model calls become jobs) and make room again.
        wait_for(lambda: serve.health()["open_trace_bytes"] == 0, what="the idle timeout")
        again = client.post("/v1/traces", content=bodies[-1])
        health = serve.health()
    statuses = [reply.status_code for reply in replies]
    accepted = statuses.count(200)
    assert 5 <= accepted <= 10 and statuses == [200] * accepted + [503] * (30 - accepted)
    assert all(reply.headers["Retry-After"] == "5" for reply in replies[accepted:])
    assert full["open_trace_bytes"] <= 2**20
    assert full["spans_received"] == accepted  # the refused were not kept
    assert too_big.status_code == 413, too_big.text
    assert again.status_code == 200
    assert health["generations_found"] == accepted  # nothing accepted was lost


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--max-open-trace-bytes", "12XB"], {}, "then KiB, MiB or GiB"),
        (["--ssl-certfile", "cert.pem"], {}, "--ssl-certfile and --ssl-keyfile go together"),
        (["--header-timeout", "0"], {}, "must be positive"),
        (["--connection-idle-timeout", "0"], {}, "must be positive"),
        (["--grpc-max-calls", "0"], {}, "at least 1"),
        (["--port", "4400", "--grpc-port", "4400"], {}, "--port and --grpc-port are both 4400"),
        ([], {"AGENTSCORE_INGEST_TOKEN": "short-token"}, "at least 16 characters"),
    ],
)
def test_network_options_that_cannot_work_stop_the_start_with_exit_2(
    tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    command = [sys.executable, "-m", "agentscore.cli", "serve"]
    command += ["--scorers", SERVE_SCORERS, "--queue", str(tmp_path / "q.db")]
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent), **env}
    done = subprocess.run(
        [*command, *args], env=environment, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert message in done.stderr
    assert "short-token" not in done.stderr
