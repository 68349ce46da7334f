"""Run a real Arize Phoenix server for end-to-end tests.

Phoenix is installed into its own virtualenv (``<project>/.cache/phoenix-venv``, reused
between runs), started with ``phoenix serve`` on 127.0.0.1 with its SQLite database in a
temporary directory, and stopped by its pid. Spans are read back through Phoenix's REST
API (``GET /v1/projects/{project}/spans``).

Typical use is through the session fixture in ``tests/e2e/conftest.py``::

    def test_something(phoenix: PhoenixServer) -> None:
        exporter = OTLPSpanExporter(endpoint=phoenix.otlp_traces_endpoint)
        ...
        spans = phoenix.wait_for_spans("my-project", lambda s: len(s) >= 2)

Outside pytest, ``run_phoenix()`` is a context manager doing the same.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, cast
from urllib.parse import quote

import httpx
import pytest

#: The Phoenix release this harness is verified against. Bumping it rebuilds the venv.
PHOENIX_VERSION = "20.26.1"
PHOENIX_REQUIREMENT = f"arize-phoenix=={PHOENIX_VERSION}"

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_VENV_DIR = PROJECT_ROOT / ".cache" / "phoenix-venv"
#: Written into the venv after a successful install; holds PHOENIX_REQUIREMENT.
MARKER_FILE = ".agentscore-phoenix"

#: Set to 1 to turn a failed Phoenix *install* (e.g. no network) into a skip.
ALLOW_SKIP_ENV = "AGENTSCORE_E2E_ALLOW_SKIP"

#: Resource attribute Phoenix uses to route spans to a project (else "default").
PROJECT_NAME_ATTRIBUTE = "openinference.project.name"

INSTALL_TIMEOUT_S = 900.0
STARTUP_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 15.0
#: pytest-timeout budget for a test that uses the fixture (it may pay for the install).
FIXTURE_TEST_TIMEOUT_S = INSTALL_TIMEOUT_S + STARTUP_TIMEOUT_S + 120.0

Span = dict[str, Any]
SpanPredicate = Callable[[list[Span]], bool]


class PhoenixError(RuntimeError):
    """Phoenix could not be installed, started or queried."""


class PhoenixInstallError(PhoenixError):
    """``pip install arize-phoenix`` failed (typically: no network)."""


class PhoenixStartError(PhoenixError):
    """``phoenix serve`` exited or did not become healthy in time."""


# --------------------------------------------------------------------------- venv


def _venv_python(venv_dir: Path) -> Path:
    return venv_dir / "bin" / "python"


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _venv_is_ready(venv_dir: Path, requirement: str) -> bool:
    """True when the venv was fully installed with ``requirement`` and still works.

    Deliberately cheap: ``import phoenix`` takes ~10 s, so this checks the marker file
    and the installed distribution's metadata instead.
    """
    marker = venv_dir / MARKER_FILE
    python = _venv_python(venv_dir)
    if not python.exists() or not marker.exists():
        return False
    if marker.read_text().strip() != requirement:
        return False
    version = requirement.partition("==")[2]
    probe = (
        "import importlib.metadata as m, importlib.util as u, sys; "
        "ok = m.version('arize-phoenix') == sys.argv[1] and u.find_spec('phoenix') is not None; "
        "sys.exit(0 if ok else 1)"
    )
    result = subprocess.run(
        [str(python), "-c", probe, version], capture_output=True, timeout=60, check=False
    )
    return result.returncode == 0


def ensure_phoenix_venv(
    venv_dir: Path = DEFAULT_VENV_DIR,
    requirement: str = PHOENIX_REQUIREMENT,
    *,
    timeout: float = INSTALL_TIMEOUT_S,
) -> Path:
    """Return the python of a venv with ``requirement`` installed, creating it if needed.

    The venv is built from the interpreter running the tests (``python -m venv`` run from
    inside a venv uses its base interpreter, i.e. the ``python3`` the project venv was
    made from). A file lock next to the venv serialises concurrent test sessions.
    Raises :class:`PhoenixInstallError` with pip's output when the install fails.
    """
    venv_dir.parent.mkdir(parents=True, exist_ok=True)
    lock_path = venv_dir.with_name(venv_dir.name + ".lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if _venv_is_ready(venv_dir, requirement):
                return _venv_python(venv_dir)
            _install(venv_dir, requirement, timeout=timeout)
            return _venv_python(venv_dir)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _install(venv_dir: Path, requirement: str, *, timeout: float) -> None:
    if venv_dir.exists():
        shutil.rmtree(venv_dir)
    deadline = time.monotonic() + timeout
    steps = [
        [sys.executable, "-m", "venv", str(venv_dir)],
        [
            str(_venv_python(venv_dir)),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
            requirement,
        ],
    ]
    for cmd in steps:
        try:
            result = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=max(1.0, deadline - time.monotonic()),
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(venv_dir, ignore_errors=True)
            raise PhoenixInstallError(f"`{' '.join(cmd)}` timed out after {timeout:.0f}s") from exc
        if result.returncode != 0:
            shutil.rmtree(venv_dir, ignore_errors=True)
            output = _tail((result.stdout or "") + (result.stderr or ""))
            raise PhoenixInstallError(
                f"`{' '.join(cmd)}` failed with exit code {result.returncode}:\n{output}"
            )
    (venv_dir / MARKER_FILE).write_text(requirement + "\n")


# --------------------------------------------------------------------------- server


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def phoenix_env(working_dir: Path, *, host: str, http_port: int, grpc_port: int) -> dict[str, str]:
    """Environment for ``phoenix serve``: ours, minus any PHOENIX_* settings of the caller."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PHOENIX_")}
    env.update(
        {
            "PHOENIX_WORKING_DIR": str(working_dir),  # SQLite db: <working_dir>/phoenix.db
            "PHOENIX_HOST": host,
            "PHOENIX_PORT": str(http_port),
            "PHOENIX_GRPC_PORT": str(grpc_port),
            # No analytics pixels, and no requests to the internet of Phoenix's own accord.
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
            # Not needed here: the in-app LLM assistant (it can run server-side bash).
            "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


@dataclass
class PhoenixServer:
    """A running ``phoenix serve`` process and helpers to read its spans back."""

    host: str
    http_port: int
    grpc_port: int
    working_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes]
    _log_file: IO[bytes] | None = field(default=None, repr=False)
    _client: httpx.Client = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # trust_env=False: never route loopback requests through a configured proxy.
        self._client = httpx.Client(base_url=self.base_url, timeout=10.0, trust_env=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.http_port}"

    @property
    def otlp_traces_endpoint(self) -> str:
        """OTLP/HTTP (protobuf) traces endpoint, for ``OTLPSpanExporter(endpoint=...)``."""
        return f"{self.base_url}/v1/traces"

    @property
    def otlp_grpc_endpoint(self) -> str:
        return f"http://{self.host}:{self.grpc_port}"

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as exc:
            return f"<cannot read {self.log_path}: {exc}>"
        return _tail(text, lines)

    def is_healthy(self) -> bool:
        try:
            return self._client.get("/healthz").status_code == 200
        except httpx.HTTPError:
            return False

    def fetch_spans(
        self, project_name: str, *, page_size: int = 1000, **filters: str | list[str]
    ) -> list[Span]:
        """All spans of a project, newest first, via ``GET /v1/projects/{project}/spans``.

        Follows ``next_cursor`` pagination. Returns ``[]`` while the project does not exist
        yet (Phoenix creates it when the first span for it arrives; until then it is 404).
        ``filters`` are passed as query parameters, e.g. ``trace_id=...``, ``name=[...]``,
        ``parent_id="null"`` (root spans only).

        Each span is a dict like::

            {"id": "U3Bhbjox", "name": "...", "span_kind": "UNKNOWN",
             "context": {"trace_id": "<32 hex>", "span_id": "<16 hex>"},
             "parent_id": "<16 hex>" | None, "start_time": "...+00:00", "end_time": ...,
             "status_code": "UNSET" | "OK" | "ERROR", "status_message": "",
             "attributes": {"gen_ai.evaluation.score.value": 0.5, ...},  # flat dotted keys
             "events": [...]}
        """
        path = f"/v1/projects/{quote(project_name, safe='')}/spans"
        params: dict[str, str | int | list[str]] = {"limit": page_size, **filters}
        spans: list[Span] = []
        while True:
            response = self._client.get(path, params=params)
            if response.status_code == 404 and not spans:
                return []
            if response.status_code != 200:
                raise PhoenixError(f"GET {path} -> {response.status_code}: {response.text[:500]}")
            body = response.json()
            spans.extend(cast(list[Span], body["data"]))
            cursor = body.get("next_cursor")
            if not cursor:
                return spans
            params["cursor"] = cursor

    def wait_for_annotations(
        self,
        project_name: str,
        kind: Literal["span", "trace", "session"],
        target: str,
        done: Callable[[list[dict[str, Any]]], bool] = bool,
        timeout: float = 90.0,
    ) -> list[dict[str, Any]]:
        """The annotations of one span, trace or session
        (``GET /v1/projects/{project}/{kind}_annotations?{kind}_ids=...``), polled until
        ``done`` holds or ``timeout`` passes; then what was last read. Phoenix stores an
        annotation whose target it does not have yet on a later retry."""
        path = f"/v1/projects/{quote(project_name, safe='')}/{kind}_annotations"
        deadline = time.monotonic() + timeout
        while True:
            response = self._client.get(path, params={f"{kind}_ids": target})
            # 404: the project is not stored yet.
            found = response.json()["data"] if response.status_code == 200 else []
            if done(found) or time.monotonic() > deadline:
                return cast(list[dict[str, Any]], found)
            time.sleep(0.5)

    def wait_for_spans(
        self,
        project_name: str,
        predicate: SpanPredicate,
        timeout: float = 30.0,
        *,
        interval: float = 0.25,
    ) -> list[Span]:
        """Poll :meth:`fetch_spans` until ``predicate(spans)`` holds; return those spans.

        Raises ``TimeoutError`` listing the spans last seen (and the server log's tail).
        """
        deadline = time.monotonic() + timeout
        spans: list[Span] = []
        while True:
            spans = self.fetch_spans(project_name)
            if predicate(spans):
                return spans
            if time.monotonic() >= deadline:
                seen = [(s.get("name"), s.get("context")) for s in spans]
                raise TimeoutError(
                    f"Phoenix project {project_name!r}: condition not met within {timeout}s; "
                    f"{len(spans)} span(s) seen: {seen}\n--- phoenix log ---\n{self.log_tail()}"
                )
            time.sleep(interval)

    def close(self) -> None:
        self._client.close()


def start_phoenix(
    python: Path,
    working_dir: Path,
    *,
    host: str = "127.0.0.1",
    http_port: int | None = None,
    grpc_port: int | None = None,
    timeout: float = STARTUP_TIMEOUT_S,
) -> PhoenixServer:
    """Start ``phoenix serve`` and wait until ``GET /healthz`` answers 200.

    Runs ``<python> -m phoenix.server.main serve`` (what the ``phoenix`` console script
    does) with stdout/stderr in ``<working_dir>/phoenix.log``. On failure the process is
    stopped and :class:`PhoenixStartError` carries the log's tail.
    """
    python = python.absolute()  # the process runs with cwd=working_dir
    working_dir = working_dir.absolute()
    working_dir.mkdir(parents=True, exist_ok=True)
    http_port = http_port or free_port(host)
    grpc_port = grpc_port or free_port(host)
    while grpc_port == http_port:
        grpc_port = free_port(host)
    log_path = working_dir / "phoenix.log"
    log_file = open(log_path, "wb")  # noqa: SIM115 - owned by PhoenixServer, closed in stop
    try:
        process = subprocess.Popen(
            [str(python), "-m", "phoenix.server.main", "serve"],
            env=phoenix_env(working_dir, host=host, http_port=http_port, grpc_port=grpc_port),
            cwd=working_dir,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    except BaseException:
        log_file.close()
        raise
    server = PhoenixServer(
        host=host,
        http_port=http_port,
        grpc_port=grpc_port,
        working_dir=working_dir,
        log_path=log_path,
        process=process,
        _log_file=log_file,
    )
    try:
        _wait_healthy(server, timeout)
    except BaseException:
        stop_phoenix(server)
        raise
    return server


def _wait_healthy(server: PhoenixServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        code = server.process.poll()
        if code is not None:
            raise PhoenixStartError(
                f"phoenix serve (pid {server.pid}) exited with code {code} before becoming "
                f"healthy; log {server.log_path}:\n{server.log_tail()}"
            )
        if server.is_healthy():
            # Phoenix binds its HTTP port last; if that bind fails (a port taken since
            # free_port() chose it) it exits right away. Make sure the 200 was ours.
            time.sleep(0.5)
            if server.process.poll() is None:
                return
            continue
        if time.monotonic() >= deadline:
            raise PhoenixStartError(
                f"phoenix serve (pid {server.pid}) not healthy at {server.base_url}/healthz "
                f"after {timeout:.0f}s; log {server.log_path}:\n{server.log_tail()}"
            )
        time.sleep(0.25)


def stop_phoenix(server: PhoenixServer, *, timeout: float = STOP_TIMEOUT_S) -> None:
    """Stop the server by its pid: SIGTERM, wait, then SIGKILL. Safe to call twice."""
    process = server.process
    try:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=timeout)
    finally:
        server.close()
        if server._log_file is not None:
            server._log_file.close()
            server._log_file = None


@contextlib.contextmanager
def run_phoenix(
    working_dir: Path,
    *,
    venv_dir: Path = DEFAULT_VENV_DIR,
    requirement: str = PHOENIX_REQUIREMENT,
    startup_timeout: float = STARTUP_TIMEOUT_S,
) -> Iterator[PhoenixServer]:
    """Install (if needed), start, yield, and always stop a Phoenix server."""
    python = ensure_phoenix_venv(venv_dir, requirement)
    server = start_phoenix(python, working_dir, timeout=startup_timeout)
    try:
        yield server
    finally:
        stop_phoenix(server)


# --------------------------------------------------------------------------- pytest


def _install_or_skip(venv_dir: Path, requirement: str) -> Path:
    try:
        return ensure_phoenix_venv(venv_dir, requirement)
    except PhoenixInstallError as exc:
        if os.environ.get(ALLOW_SKIP_ENV) == "1":
            pytest.skip(f"Phoenix could not be installed ({ALLOW_SKIP_ENV}=1): {exc}")
        raise PhoenixInstallError(
            f"{exc}\n\nThe e2e tests need `pip install {requirement}` to work (network to the "
            f"package index). Set {ALLOW_SKIP_ENV}=1 to skip them instead of failing."
        ) from exc


def phoenix_fixture(
    *,
    name: str = "phoenix",
    scope: Literal["session", "package", "module", "class", "function"] = "session",
    venv_dir: Path = DEFAULT_VENV_DIR,
    requirement: str = PHOENIX_REQUIREMENT,
    startup_timeout: float = STARTUP_TIMEOUT_S,
) -> Any:
    """Build a pytest fixture named ``name`` that yields a running :class:`PhoenixServer`.

    Use in a conftest: ``phoenix = phoenix_fixture()``. The server's working dir (SQLite
    db and ``phoenix.log``) is a pytest temp dir, kept for the last few runs.
    """

    @pytest.fixture(scope=scope, name=name)
    def _phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PhoenixServer]:
        python = _install_or_skip(venv_dir, requirement)
        working_dir = tmp_path_factory.mktemp("phoenix")
        server = start_phoenix(python, working_dir, timeout=startup_timeout)
        try:
            yield server
        finally:
            stop_phoenix(server)

    return _phoenix


def spans_named(spans: list[Span], name: str) -> list[Span]:
    return [span for span in spans if span.get("name") == name]
