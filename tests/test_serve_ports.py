"""Where `agentscore serve` listens: default ports beside Phoenix's and a Collector's, the
start-up log naming every listening address, and a taken port naming the option that moves
it. The service is a real subprocess; the ports are held by real sockets of the test."""

from __future__ import annotations

import os
import re
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import trustme

from tests.support.serve import (
    ROOT,
    SERVE_SCORERS,
    free_port,
    listening,
    listening_ports,
    wait_for,
)

COMMAND = [
    sys.executable,
    "-m",
    "agentscore.cli",
    "serve",
    "--scorers",
    SERVE_SCORERS,
]
OTLP_RECEIVERS = {4317, 4318, 6006}  # a Collector's gRPC and HTTP ports, Phoenix's UI


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {**env, "PYTHONPATH": str(ROOT)}  # evaluations go to the JSONL file


@contextmanager
def serving_until_listening(
    folder: Path, *args: str, addresses: int
) -> Iterator[tuple[subprocess.Popen[bytes], list[dict[str, str]]]]:
    """The service started in `folder`, once it has logged `addresses` listening lines."""
    log = folder / "serve.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [*COMMAND, "--queue", str(folder / "q.db"), *args],
            env=environment(),
            cwd=folder,
            stdout=out,
            stderr=out,
        )
    try:

        def logged() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"serve exited: {log.read_text()}")
            return len(listening(log)) >= addresses

        wait_for(logged, what="the listening lines")
        yield process, listening(log)
    finally:
        process.kill()
        process.wait(10)


def port_of(url: str, scheme: str, path: str = "") -> int:
    found = re.fullmatch(rf"{scheme}://127\.0\.0\.1:(\d+){re.escape(path)}", url)
    assert found is not None, url
    return int(found.group(1))


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_the_start_up_log_names_every_address_it_listens_on(tmp_path: Path, tls: bool) -> None:
    verify: ssl.SSLContext | bool = True
    args = ["--port", "0", "--grpc-port", "0"]  # the system picks: the log says which
    if tls:
        issued = trustme.CA()
        pair = issued.issue_cert("127.0.0.1")
        cert, key, ca = tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt"
        pair.cert_chain_pems[0].write_to_path(str(cert))
        pair.private_key_pem.write_to_path(str(key))
        issued.cert_pem.write_to_path(str(ca))
        args += ["--ssl-certfile", str(cert), "--ssl-keyfile", str(key)]
        verify = ssl.create_default_context(cafile=str(ca))
    scheme = "https" if tls else "http"
    with serving_until_listening(tmp_path, *args, addresses=2) as (process, lines):
        [grpc] = [line for line in lines if line["protocol"] == "OTLP/gRPC"]
        [http] = [line for line in lines if line["protocol"] == "OTLP/HTTP"]
        http_port = port_of(http["endpoint"], scheme, "/v1/traces")
        grpc_port = port_of(grpc["endpoint"], scheme)
        assert 0 not in (http_port, grpc_port)
        assert http["health"] == f"{scheme}://127.0.0.1:{http_port}/healthz"
        assert "health" not in grpc
        # What the lines name is what the process listens on, and the health URL answers.
        assert listening_ports(process.pid) == {http_port, grpc_port}
        reply = httpx.get(http["health"], verify=verify, timeout=10)
        assert reply.status_code == 200 and reply.json()["status"] == "ok"


def test_without_grpc_the_log_names_the_http_address_alone(tmp_path: Path) -> None:
    port = free_port()
    args = ["--port", str(port), "--grpc-port", "off"]
    with serving_until_listening(tmp_path, *args, addresses=1) as (process, lines):
        assert lines == [
            {
                "endpoint": f"http://127.0.0.1:{port}/v1/traces",
                "health": f"http://127.0.0.1:{port}/healthz",
                "protocol": "OTLP/HTTP",
            }
        ]
        assert listening_ports(process.pid) == {port}


def test_the_default_grpc_port_is_free_beside_phoenix_and_a_collector(tmp_path: Path) -> None:
    # Phoenix (or a Collector) on the same host holds 4317; the service must still start.
    with socket.socket() as phoenix:
        try:
            phoenix.bind(("127.0.0.1", 4317))
            phoenix.listen()
        except OSError:
            pass  # something on this machine holds it already: the same situation
        port = free_port()
        with serving_until_listening(tmp_path, "--port", str(port), addresses=2) as (_, lines):
            [grpc] = [line for line in lines if line["protocol"] == "OTLP/gRPC"]
    assert port_of(grpc["endpoint"], "http") not in OTLP_RECEIVERS


@pytest.mark.parametrize("option", ["--port", "--grpc-port"])
def test_a_taken_port_names_the_option_that_moves_it(tmp_path: Path, option: str) -> None:
    other = "--grpc-port" if option == "--port" else "--port"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ports = [option, str(port), other, str(free_port())]
        done = subprocess.run(
            [*COMMAND, "--queue", str(tmp_path / "q.db"), *ports],
            env=environment(),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done.stderr
    assert f"agentscore serve: port {port} is in use: choose another with {option}\n" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr + done.stdout
    assert "serve_listening" not in done.stdout
