"""The gRPC port under load and abuse: calls without the token, calls whose message never
ends, more calls than there are slots, idle connections. The service is a real subprocess;
clients are the OpenTelemetry gRPC exporter, grpcio channels, raw HTTP/2 and sockets."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import SimpleNamespace

import grpc
import httpx
import pytest
from google.rpc.error_details_pb2 import RetryInfo
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from agentscore.cli import main
from agentscore.serve.call_slots import CallSlots
from agentscore.serve.grpc_ingest import EXPORT_METHOD
from tests.support.grpc_export import export_raw
from tests.support.http_server import http_server
from tests.support.raw_h2 import H2Connection
from tests.support.serve import (
    ANSWER,
    protobuf_request,
    recorded_generations,
    rss_kib,
    serving,
    wait_for,
)

TOKEN = "grpc-limits-token-0123456789abcdef"
BEARER = (("authorization", f"Bearer {TOKEN}"),)
WITH_TOKEN = {"AGENTSCORE_INGEST_TOKEN": TOKEN}
PROTOBUF = {"Content-Type": "application/x-protobuf"}


def _port(target: str) -> int:
    return int(target.rsplit(":", 1)[1])


@contextmanager
def _unfinished_calls(
    target: str, connections: int, calls: int, metadata: tuple[tuple[str, str], ...] = ()
) -> Iterator[list[H2Connection]]:
    """`calls` Export calls on each of `connections` connections, each message declaring
    1,000 bytes and sending 10, never finished."""
    with ExitStack() as stack:
        opened = []
        for _ in range(connections):
            conn = H2Connection("127.0.0.1", _port(target))
            stack.callback(conn.close)
            for _ in range(calls):
                conn.open_call(EXPORT_METHOD, declared=1000, sent=b"\x0a" * 10, metadata=metadata)
            opened.append(conn)
        yield opened


def _retry_seconds(error: grpc.Call) -> tuple[float, float]:
    """The RetryInfo delay as the Collector reads it (status details) and as the Python
    exporter reads it (its own trailer), in seconds."""
    trailers = dict(error.trailing_metadata() or ())
    status = Status.FromString(trailers["grpc-status-details-bin"])
    [detail] = status.details
    info = RetryInfo()
    assert detail.Unpack(info)
    direct = RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
    return (
        info.retry_delay.seconds + info.retry_delay.nanos / 1e9,
        direct.retry_delay.seconds + direct.retry_delay.nanos / 1e9,
    )


def _exporter(
    target: str, *, timeout: float = 10.0, own_connection: bool = False
) -> OTLPSpanExporter:
    """The OTLP gRPC exporter with the token. Exporters in one process share a connection
    (and wait for each other's streams there) unless given `own_connection`, as exporters
    in separate processes have."""
    return OTLPSpanExporter(
        endpoint=f"http://{target}",
        insecure=True,
        timeout=timeout,
        headers={"authorization": f"Bearer {TOKEN}"},
        channel_options=(("grpc.use_local_subchannel_pool", 1),) if own_connection else None,  # type: ignore[arg-type]
    )


def test_calls_without_the_token_are_refused_from_their_metadata_and_hold_no_slot(
    tmp_path: Path,
) -> None:
    with (
        http_server() as receiver,
        serving(tmp_path, receiver.url, env=WITH_TOKEN) as serve,
        # More unfinished calls than the 64 call slots, none carrying the token.
        _unfinished_calls(serve.grpc_target, connections=7, calls=10) as attackers,
    ):
        for conn in attackers:
            conn.read_for(0.5)
        result = _exporter(serve.grpc_target).export(recorded_generations([ANSWER]))
        health = serve.health()
    assert result is SpanExportResult.SUCCESS
    # Each was answered (UNAUTHENTICATED) without waiting for its message.
    assert [len(conn.ended) for conn in attackers] == [10] * 7
    assert health["requests_unauthorized"] == 70
    assert health["spans_received"] == 2


def test_wrong_token_messages_are_not_read(tmp_path: Path) -> None:
    body = b"\x0a" * (15 * 2**20)

    def send_wrong(target: str) -> grpc.StatusCode:
        return export_raw(target, body, (("authorization", f"Bearer {TOKEN}x"),))[0]

    with http_server() as receiver, serving(tmp_path, receiver.url, env=WITH_TOKEN) as serve:
        before = rss_kib(serve.process.pid)
        with ThreadPoolExecutor(24) as pool:
            codes = list(pool.map(send_wrong, [serve.grpc_target] * 24))
        grown = rss_kib(serve.process.pid) - before
        health = serve.health()
    assert codes == [grpc.StatusCode.UNAUTHENTICATED] * 24
    assert health["requests_unauthorized"] == 24
    # 360 MiB were sent; reading them whole first grew the service by 190 MB (and taking
    # in what window probing let the clients push ahead, 26 to 35 MB).
    assert grown < 16 * 1024, f"RSS grew {grown} KiB"


def test_a_call_past_the_call_slots_is_refused_with_retry_info_and_slots_come_back(
    tmp_path: Path,
) -> None:
    body = protobuf_request(recorded_generations([ANSWER]))
    options = ("--grpc-max-calls", "2")
    with (
        http_server() as receiver,
        serving(tmp_path, receiver.url, *options, env=WITH_TOKEN) as serve,
    ):
        with _unfinished_calls(serve.grpc_target, 1, 2, BEARER) as holders:
            holders[0].read_for(0.5)
            code, refused = export_raw(serve.grpc_target, body, BEARER)
            during = serve.health()
        # The holders left: their slots are free again.
        wait_for(
            lambda: export_raw(serve.grpc_target, body, BEARER)[0] is grpc.StatusCode.OK,
            what="a free call slot",
        )
    assert code is grpc.StatusCode.RESOURCE_EXHAUSTED
    collector_delay, exporter_delay = _retry_seconds(refused)
    assert collector_delay == exporter_delay > 0
    assert during["requests_rejected"] == 1


def test_300_concurrent_exports_all_land(tmp_path: Path) -> None:
    spans = recorded_generations([ANSWER] * 300)
    batches = [spans[i : i + 2] for i in range(0, len(spans), 2)]
    options = ("--grpc-max-calls", "8", "--synchronous", "NORMAL")
    with (
        http_server() as receiver,
        serving(tmp_path, receiver.url, *options, env=WITH_TOKEN) as serve,
    ):
        start = threading.Barrier(len(batches))

        def export(batch: list) -> SpanExportResult:  # type: ignore[type-arg]
            exporter = _exporter(serve.grpc_target, timeout=30, own_connection=True)
            start.wait()
            try:
                return exporter.export(batch)
            finally:
                exporter.shutdown()

        with ThreadPoolExecutor(len(batches)) as pool:
            results = list(pool.map(export, batches))
        health = serve.health()
    assert results == [SpanExportResult.SUCCESS] * 300
    assert health["spans_received"] == 600
    assert health["requests_rejected"] > 0  # some waited for a slot, and came back


def _idle_sockets(port: int, count: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]


def test_idle_connections_to_the_grpc_port_do_not_take_the_descriptors(tmp_path: Path) -> None:
    body = protobuf_request(recorded_generations([ANSWER]))
    # 256 descriptors for the service: fewer than the idle connections.
    options = ("--header-timeout", "1")
    with (
        http_server() as receiver,
        serving(tmp_path, receiver.url, *options, env=WITH_TOKEN, nofile=256) as serve,
    ):
        idle = _idle_sockets(_port(serve.grpc_target), 300)
        try:
            time.sleep(0.5)
            health = httpx.get(f"{serve.url}/healthz", timeout=5)
            posted = httpx.post(
                f"{serve.url}/v1/traces",
                content=body,
                headers={**PROTOBUF, "Authorization": f"Bearer {TOKEN}"},
                timeout=5,
            )
            exported = _exporter(serve.grpc_target, timeout=20).export(
                recorded_generations([ANSWER])
            )
        finally:
            for sock in idle:
                sock.close()
        log = serve.log.read_text()
    assert health.status_code == 200
    assert posted.status_code == 200
    assert exported is SpanExportResult.SUCCESS
    assert "Too many open files" not in log


def _closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(30)
    try:
        while sock.recv(65536):
            pass
    except ConnectionError:
        pass
    return True


def test_idle_grpc_connections_are_closed(tmp_path: Path) -> None:
    options = ("--connection-idle-timeout", "1", "--header-timeout", "1")
    with http_server() as receiver, serving(tmp_path, receiver.url, *options) as serve:
        # Never a byte sent; and HTTP/2 opened, then no call.
        silent = _idle_sockets(_port(serve.grpc_target), 3)
        opened = [H2Connection("127.0.0.1", _port(serve.grpc_target)) for _ in range(3)]
        for conn in opened:
            conn.read_for(30)  # until the server closes it
        closed = [_closed_by_server(sock) for sock in silent]
        for sock in silent:
            sock.close()
    assert [conn.goaway for conn in opened] == [True] * 3
    assert closed == [True] * 3


def test_the_limits_are_options_listed_by_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    shown = capsys.readouterr().out
    for option in (
        "--max-connections",
        "--connection-idle-timeout",
        "--max-connection-age",
        "--grpc-max-calls",
        "--header-timeout",
        "--body-timeout",
        "--max-open-trace-bytes",
    ):
        assert option in shown


def test_refused_callers_are_given_turns_spread_at_the_pace_calls_finish(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Refused at one instant: a delay is a turn minus now, so a clock moving between the
    # calls (a busy machine pausing the test) would shift the delays, not the turns.
    monkeypatch.setattr("agentscore.serve.call_slots.time", SimpleNamespace(monotonic=lambda: 1e4))
    slots = CallSlots(2)
    assert slots.take() and slots.take() and not slots.take()
    for _ in range(20):  # calls have been holding their slot 0.2 s each
        slots.give_back(0.2)
        assert slots.take()
    delays = [slots.retry_delay() for _ in range(1000)]
    assert delays == sorted(delays)  # each later refusal is given a later turn
    assert delays[0] >= 0.5
    # A slot frees about every 0.1 s (2 slots, 0.2 s a call): turns are that far apart,
    # up to the one-minute ceiling.
    assert 0.05 < delays[1] - delays[0] < 0.11
    assert delays[-1] <= 60.0
