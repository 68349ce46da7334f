"""Every Python block in README.md and docs/ runs, alone, as a reader would paste it.

Each block runs in its own process (forked from one that imported the heavy modules once),
in an empty directory, with OPENAI_BASE_URL and the OTLP endpoint pointing at a model server
on 127.0.0.1 (`DocsModelServer`): agent requests get a tool call, then an answer; judge
requests get a reply built from their JSON schema. A block that defines `test_` functions is
run by pytest; one that defines a FastAPI `app` is called with a JSON body.

Shown output is compared: a comment on a `print(...)` line, or the comment lines that end a
block, are the expected stdout; `#   ` continues the line above, and `...` stands for any
text. `<!-- docs-test: skip -->` before a block marks a fragment that is not a program.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agentscore.serve.forward import FORWARD_USER_AGENT
from agentscore.testing import server_sent_events
from tests.support.http_server import http_server
from tests.support.serve import (
    evaluation_spans,
    free_port,
    received_spans,
    serving,
    wait_for,
)

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DEPLOY = ROOT / "docs" / "deploy.md"
SIDECAR = "## Scoring beside the app: `agentscore serve` as a sidecar"
SKIP = "<!-- docs-test: skip -->"
# Every string a judge's schema asks for; the custom-scorer how-to shows it in its output.
JUDGE_TEXT = "Apologises and answers."
ANSWER = "Order 1042 shipped on 2026-11-18."
# The blocks run once, in the module fixture, whose time counts to the first test that asks
# for it: on a loaded two-core machine that is minutes, not the suite's per-test guard.
pytestmark = pytest.mark.timeout(900)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    code: str
    expected: list[str]
    skipped: bool

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def python_blocks(path: Path) -> Iterator[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```python":
            index += 1
            continue
        start = index + 1
        end = lines.index("```", start)
        before = next((line.strip() for line in reversed(lines[:index]) if line.strip()), "")
        code = "\n".join(lines[start:end]) + "\n"
        yield Block(path, start + 1, code, shown_output(code), before == SKIP)
        index = end + 1


def shown_output(code: str) -> list[str]:
    lines = code.rstrip().splitlines()
    trailing: list[str] = []
    while lines and lines[-1].lstrip().startswith("#"):
        trailing.insert(0, lines.pop().strip())
    if trailing and any("print(" in line for line in lines):
        shown = [line.removeprefix("#").removeprefix(" ") for line in trailing]
    else:
        shown = [
            line.split("#", 1)[1].strip()
            for line in code.splitlines()
            if line.lstrip().startswith("print(") and "#" in line
        ]
    joined: list[str] = []
    for line in shown:
        if line.startswith("  ") and joined:
            joined[-1] += " " + line.strip()
        else:
            joined.append(line)
    return joined


def matches(expected: str, actual: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual) is not None


BLOCKS = [block for path in DOCS for block in python_blocks(path)]


def shell_commands(path: Path, heading: str) -> list[str]:
    """The commands of the `sh` blocks in the section under `heading`: continued lines joined,
    comments dropped."""
    text = path.read_text(encoding="utf-8").split(f"\n{heading}\n", 1)[1]
    section = re.split(r"\n## ", text, maxsplit=1)[0]
    commands: list[str] = []
    for block in re.findall(r"```sh\n(.*?)\n```", section, flags=re.DOTALL):
        for command in block.replace("\\\n", " ").splitlines():
            words = shlex.split(command, comments=True)
            if words:
                commands.append(shlex.join(words))
    return commands


class DocsModelServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible model and an OTLP / Phoenix sink, enough for the docs. The OTLP
    trace requests it receives are kept (protobuf bytes) in `traces`."""

    traces: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["Content-Length"] or 0))
        if self.path.endswith("/v1/traces"):
            DocsModelServer.traces.append(raw)
            self._send({})
            return
        body = json.loads(raw or b"{}")
        if not self.path.endswith("/chat/completions"):
            self._send({})
            return
        if body.get("stream"):
            self._send_events(server_sent_events(_completion(body)))
            return
        self._send(_completion(body))

    def _send_events(self, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def _completion(body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": ANSWER}
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        schema = response_format["json_schema"]["schema"]
        message["content"] = json.dumps(_instance(schema, schema))
    elif body.get("tools") and body["messages"][-1]["role"] != "tool":
        function = body["tools"][0]["function"]
        args = _instance(function["parameters"], function["parameters"])
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": function["name"], "arguments": json.dumps(args)},
                }
            ],
        }
    return {
        "id": "chatcmpl-docs",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "m"),
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _instance(schema: dict[str, Any], root: dict[str, Any], key: str = "") -> Any:
    """A value `schema` admits. A number that points at a step or a turn (the trace and
    conversation scorers' replies) points at the first one; any other integer is 1042."""
    if "$ref" in schema:
        return _instance(root["$defs"][schema["$ref"].rsplit("/", 1)[1]], root, key)
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return _instance(schema["anyOf"][0], root, key)
    kind = schema.get("type")
    if kind == "object":
        return {name: _instance(value, root, name) for name, value in schema["properties"].items()}
    if kind == "array":
        return [_instance(schema["items"], root, key)]
    if kind == "integer" and ("step" in key or "turn" in key):
        return 1
    return {"string": JUDGE_TEXT, "boolean": True, "integer": 1042, "number": 1.0}.get(
        str(kind), JUDGE_TEXT
    )


# Imports the modules once, then forks a fresh process per block; a child runs its block as
# `__main__`, then the exit hooks a real program would run, and reports its output as JSON.
RUNNER = r"""
import atexit, contextlib, io, json, os, signal, sys, traceback
import agentscore, agentscore.ci.batch, agentscore.scorers, agentscore.telemetry.setup
import fastapi, fastapi.testclient, openai, pydantic, pytest

def run(block, workdir):
    os.chdir(workdir)
    signal.alarm(90)
    out, error = io.StringIO(), None
    try:
        with contextlib.redirect_stdout(out):
            namespace = {"__name__": "__main__"}
            if "def test_" in block["code"]:
                with open("test_block.py", "w") as file:
                    file.write(block["code"])
                if pytest.main(["-q", "-p", "no:cacheprovider", "test_block.py"]) != 0:
                    error = "pytest failed"
            else:
                exec(compile(block["code"], block["name"], "exec"), namespace)
                app = namespace.get("app")
                if isinstance(app, fastapi.FastAPI):
                    with fastapi.testclient.TestClient(app) as client:
                        reply = client.post("/chat", json={"message": "Where is order 1042?"})
                    if reply.status_code != 200:
                        error = f"POST /chat with a JSON body: {reply.status_code} {reply.text}"
            atexit._run_exitfuncs()
    except BaseException:
        error = traceback.format_exc()
    return {"stdout": out.getvalue(), "error": error}

blocks = json.loads(sys.stdin.read())
results = {}
for block in blocks:
    workdir = os.path.join(sys.argv[1], str(len(results)))
    os.makedirs(workdir)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        payload = json.dumps(run(block, workdir)).encode()
        with os.fdopen(write, "wb") as pipe:
            pipe.write(payload)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    results[block["name"]] = json.loads(data) if data else {
        "stdout": "", "error": f"the block's process ended with status {status}"}
print(json.dumps(results))
"""


@contextmanager
def model_server() -> Iterator[str]:
    """`DocsModelServer` on a free 127.0.0.1 port; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), DocsModelServer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    with model_server() as url:
        return _run_blocks(url, tmp_path_factory.mktemp("docs"))


def _run_blocks(url: str, workdir: Path) -> dict[str, dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OTEL_"))}
    env.update(
        {
            "PYTHONPATH": str(ROOT),
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "sk-docs-test-not-a-key",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{url}/v1/traces",
            "PHOENIX_COLLECTOR_ENDPOINT": url,
            "LANGFUSE_HOST": url,
        }
    )
    runnable = [{"name": block.name, "code": block.code} for block in BLOCKS if not block.skipped]
    completed = subprocess.run(
        [sys.executable, "-c", RUNNER, str(workdir)],
        input=json.dumps(runnable),
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    results: dict[str, dict[str, Any]] = json.loads(completed.stdout.splitlines()[-1])
    return results


def test_every_doc_has_its_python_blocks_found() -> None:
    assert len(BLOCKS) >= 19
    # Fragments stay rare; docs/levels.md's two built-in trace and conversation scorer blocks
    # wait for those scorers.
    assert sum(block.skipped for block in BLOCKS) <= 2


def test_the_agents_sdk_recipe_puts_its_evaluation_on_the_trace_it_exports(
    outcomes: dict[str, dict[str, Any]],
) -> None:
    # Its provider is never made global: the evaluation span must leave through that
    # provider's own OTLP exporter, in a request naming the recipe's service.
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    [recipe] = [b for b in BLOCKS if "OpenAIAgentsInstrumentor" in b.code and not b.skipped]
    assert outcomes[recipe.name]["error"] is None
    names: list[str] = []
    for raw in DocsModelServer.traces:
        request = ExportTraceServiceRequest.FromString(raw)
        for resource_spans in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            if service.get("service.name") == "support-agents":
                names += [s.name for scope in resource_spans.scope_spans for s in scope.spans]
    assert "evaluation faithfulness" in names
    assert "support" in names  # the agent span it judges, on the same provider


@pytest.mark.parametrize("block", [b for b in BLOCKS if not b.skipped], ids=lambda b: b.name)
def test_block_runs_and_prints_what_the_docs_show(
    block: Block, outcomes: dict[str, dict[str, Any]]
) -> None:
    outcome = outcomes[block.name]
    assert outcome["error"] is None, outcome["error"]
    if not block.expected:
        return
    printed = [line for line in outcome["stdout"].splitlines() if line.strip()]
    printed = [line for line in printed if not line.startswith("20")]  # structlog lines
    assert len(printed) >= len(block.expected), outcome["stdout"]
    for shown, actual in zip(block.expected, printed[-len(block.expected) :], strict=True):
        assert matches(shown, actual), f"docs show {shown!r}, the block printed {actual!r}"


def test_the_sidecar_recipe_scores_the_apps_generation_and_forwards_its_spans(
    tmp_path: Path,
) -> None:
    # The recipe's commands as written, but for what a test cannot use: its port, queue file
    # and backend address are replaced (the last flag of a kind wins), and the scorers module
    # it names is written here with the local judge and every generation sampled.
    commands = shell_commands(DEPLOY, SIDECAR)
    exports = dict(
        command.removeprefix("export ").split("=", 1)
        for command in commands
        if command.startswith("export ")
    )
    [serve_command] = [shlex.split(c) for c in commands if " agentscore serve " in f" {c} "]
    at = serve_command.index("agentscore")
    launcher, recipe_args = serve_command[:at], serve_command[at + 2 :]
    recipe_port = recipe_args[recipe_args.index("--port") + 1]
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in exports  # where the sidecar's evaluations go
    # The app's traces go to the port the sidecar listens on.
    assert exports["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == (
        f"http://127.0.0.1:{recipe_port}/v1/traces"
    )
    [app] = [b for b in BLOCKS if b.path == DEPLOY and b.code.startswith("# myapp/app.py")]

    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (tmp_path / "myapp" / "scoring.py").write_text(
        "from agentscore import Evals\n"
        "from agentscore.scorers import create_faithfulness_scorer\n"
        'evals = Evals(scorers=[create_faithfulness_scorer("local")])\n'
    )
    with http_server() as backend, model_server() as model:
        port = free_port()  # after the servers took theirs: free_port's may be handed out again
        overrides = ["--port", str(port), "--queue", str(tmp_path / "sidecar.db")]
        overrides += ["--forward", f"{backend.url}/v1/traces"]
        command = [*launcher, sys.executable, "-m", "agentscore.cli", "serve"]
        with serving(
            tmp_path, backend.url, *recipe_args, *overrides, port=port, command=command
        ) as sidecar:
            app_dir = tmp_path / "app"
            app_dir.mkdir()
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OTEL_"))}
            env.update(
                PYTHONPATH=str(ROOT),
                OPENAI_BASE_URL=f"{model}/v1",
                OPENAI_API_KEY="sk-docs-test-not-a-key",
                OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{sidecar.url}/v1/traces",
            )
            ran = subprocess.run(
                [sys.executable, "-c", app.code],
                cwd=app_dir,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert ran.returncode == 0, ran.stderr[-3000:]
            assert ran.stdout.strip().splitlines()[-1] == ANSWER
            wait_for(lambda: len(evaluation_spans(backend)) == 1, what="the evaluation")
            health = sidecar.health_once_scored(1)
    assert health["scored"] == 1
    assert health["forward_failures"] == 0
    # The app sent its spans to the sidecar only: the backend has them through --forward.
    assert any(item.headers.get("user-agent") == FORWARD_USER_AGENT for item in backend.requests)
    [agent_span] = [s for s in received_spans(backend) if s.name == "invoke_agent support"]
    [evaluation] = evaluation_spans(backend)
    assert evaluation.name == "evaluation faithfulness"
    assert evaluation.trace_id == agent_span.trace_id
    assert evaluation.parent_span_id == agent_span.span_id
