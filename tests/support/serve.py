"""`agentscore serve` as the tests run it: a subprocess on a free 127.0.0.1 port, fed by an app
instrumented with the OpenTelemetry SDK and its OTLP/HTTP protobuf exporter, exporting to an
OTLP receiver the test runs (tests/support/http_server.py, decoded with opentelemetry-proto)."""

from __future__ import annotations

import json
import os
import resource as rlimit
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.http_server import HttpServer

ROOT = Path(__file__).resolve().parents[2]
# What `--scorers` loads in every service a test starts (a dotted path from ROOT).
SERVE_SCORERS = "tests.support.serve_scorers:evals"
ORDER = {"order": "1042", "status": "shipped", "carrier": "UPS"}
ANSWER = "Order 1042 shipped with UPS."
WRONG = "Order 1042 shipped with FedEx."
# No context sentence matches it: the local judge is unsure, so a cascade asks its LLM.
PARAPHRASE = "Your parcel is on its way and should be with you soon."


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ServeProcess:
    process: subprocess.Popen[bytes]
    url: str
    log: Path
    grpc_target: str  # host:port of OTLP/gRPC ingest ("" when turned off)
    verify: ssl.SSLContext | bool = True  # trusts the certificate of --ssl-certfile

    def health(self) -> dict[str, Any]:
        return dict(httpx.get(f"{self.url}/healthz", timeout=5, verify=self.verify).json())

    def health_once_scored(self, count: int) -> dict[str, Any]:
        """The health once `count` results are counted. A result is counted after its
        evaluation was exported and its job row deleted: the receiver sees it first."""
        wait_for(lambda: self.health()["scored"] >= count, what=f"{count} scored")
        return self.health()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def terminate(self) -> str:
        """SIGTERM, then the log line of a graceful stop. (uvicorn raises the signal again
        once it has shut down, so the exit status is -SIGTERM either way.)"""
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(60) == -signal.SIGTERM
        [stopped] = [line for line in self.log.read_text().splitlines() if "serve_stopped" in line]
        return stopped


def start_serve(
    tmp_path: Path,
    receiver: str,
    *args: str,
    judge_delay: float = 0.0,
    port: int = 0,
    otel: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    nofile: int | None = None,
    command: list[str] | None = None,
) -> ServeProcess:
    """`otel` replaces the default OTEL_* settings (every signal to `receiver`); `env` adds
    other variables; `nofile` sets the service's file descriptor limit (soft and hard);
    `command` replaces `python -m agentscore.cli serve --scorers SERVE_SCORERS`."""
    port = port or free_port()
    # Never the default gRPC port: tests (and other services on the machine) run side by side.
    grpc_port = "" if "--grpc-port" in args else str(free_port())
    grpc = ("--grpc-port", grpc_port) if grpc_port else ()
    extra = env or {}
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(otel or {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver})
    env.update(extra)
    env.update(
        OTEL_METRIC_EXPORT_INTERVAL="500",
        PYTHONPATH=str(ROOT),
        SERVE_TEST_JUDGE_DELAY=str(judge_delay),
    )
    log = tmp_path / f"serve-{port}.log"
    command = [
        *(command or [sys.executable, "-m", "agentscore.cli", "serve"]),
        *(() if command else ("--scorers", SERVE_SCORERS)),
        *("--port", str(port), "--queue", str(tmp_path / "queue.db"), *grpc, *args),
    ]
    limit = (
        None if nofile is None else lambda: rlimit.setrlimit(rlimit.RLIMIT_NOFILE, (nofile, nofile))
    )
    with log.open("ab") as out:
        process = subprocess.Popen(
            command, env=env, cwd=tmp_path, stdout=out, stderr=out, preexec_fn=limit
        )
    tls = "--ssl-certfile" in args
    serve = ServeProcess(
        process,
        f"{'https' if tls else 'http'}://127.0.0.1:{port}",
        log,
        f"127.0.0.1:{grpc_port}" if grpc_port else "",
        verify=ssl.create_default_context(cafile=args[args.index("--ssl-certfile") + 1])
        if tls
        else True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"serve exited: {log.read_text()}")
        try:
            serve.health()
            return serve
        except httpx.TransportError:
            time.sleep(0.05)
    serve.kill()
    raise RuntimeError(f"serve did not start: {log.read_text()}")


@contextmanager
def serving(tmp_path: Path, receiver: str, *args: str, **options: Any) -> Iterator[ServeProcess]:
    serve = start_serve(tmp_path, receiver, *args, **options)
    try:
        yield serve
    finally:
        if serve.process.poll() is None:
            serve.kill()


def _parts(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def traced_generation(
    provider: TracerProvider, answer: str, *, request: int = 0
) -> tuple[int, int]:
    """One agent run, as a GenAI-instrumented app traces it; returns the agent span's
    (trace id, span id)."""
    tracer = provider.get_tracer("app")
    user = _parts("user", {"type": "text", "content": f"Where is order 1042? ({request})"})
    call = _parts(
        "assistant", {"type": "tool_call", "id": "c1", "name": "lookup_order", "arguments": "{}"}
    )
    result = _parts("tool", {"type": "tool_call_response", "id": "c1", "response": ORDER})
    reply = _parts("assistant", {"type": "text", "content": answer})
    with (
        tracer.start_as_current_span("POST /chat"),
        tracer.start_as_current_span(
            "invoke_agent support",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "support",
                "gen_ai.input.messages": json.dumps([user]),
                "gen_ai.output.messages": json.dumps([call, result, reply]),
            },
        ) as span,
    ):
        context = span.get_span_context()
        return context.trace_id, context.span_id


def send_generations(
    url: str, answers: list[str], resource: Resource | None = None
) -> list[tuple[int, int]]:
    """Trace one generation per answer and export them to `url` with the OTLP/HTTP protobuf
    exporter, one request per trace; returns (trace id, agent span id) of each."""
    provider = TracerProvider(resource=resource or Resource.create())
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{url}/v1/traces")))
    sent = [traced_generation(provider, answer, request=i) for i, answer in enumerate(answers)]
    provider.shutdown()
    return sent


def recorded_generations(answers: list[str]) -> list[ReadableSpan]:
    """The spans of one generation per answer, kept in memory (for hand-made requests)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for index, answer in enumerate(answers):
        traced_generation(provider, answer, request=index)
    return list(exporter.get_finished_spans())


def open_trace_spans(count: int, size: int) -> list[ReadableSpan]:
    """A model call of about `size` bytes per trace, each under a root still running."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    for index in range(count):
        root = tracer.start_span(f"request {index}")  # never ended: the trace stays open
        with (
            trace.use_span(root),
            tracer.start_as_current_span(
                "chat gpt-x",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": json.dumps([{"role": "user", "content": "Hi"}]),
                    "gen_ai.output.messages": json.dumps(
                        [{"role": "assistant", "content": "x" * size}]
                    ),
                },
            ),
        ):
            pass
    return list(exporter.get_finished_spans())


def received_spans(collector: HttpServer) -> list[ProtoSpan]:
    spans: list[ProtoSpan] = []
    for item in list(collector.requests):
        if item.path != "/v1/traces":
            continue
        request = ExportTraceServiceRequest.FromString(item.body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                spans.extend(scope.spans)
    return spans


def evaluation_spans(collector: HttpServer) -> list[ProtoSpan]:
    return [span for span in received_spans(collector) if span.name.startswith("evaluation ")]


def attribute(span: ProtoSpan, key: str) -> Any:
    for item in span.attributes:
        if item.key == key:
            kind = item.value.WhichOneof("value")
            return getattr(item.value, kind) if kind else None
    return None


def wait_for(predicate: Any, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def protobuf_request(spans: list[ReadableSpan]) -> bytes:
    """The body the OTLP/HTTP exporter would send for `spans`."""
    return bytes(encode_spans(spans).SerializeToString())


def listening_ports(pid: int) -> set[int]:
    """TCP ports the process listens on, from /proc (no client needed to find them)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().name
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def listening(log: Path) -> list[dict[str, str]]:
    """The `serve_listening` lines the service has logged (whole lines only), as their
    key=value fields: one a listening address."""
    text = log.read_text(errors="replace")
    whole = text[: text.rfind("\n") + 1]
    return [
        dict(field.split("=", 1) for field in line.split() if "=" in field)
        for line in whole.splitlines()
        if " serve_listening " in line
    ]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def metric_value(collector: HttpServer, name: str) -> float | None:
    """The latest value of a sum or gauge metric the service exported, if any."""
    value: float | None = None
    for item in list(collector.requests):
        if item.path != "/v1/metrics":
            continue
        request = ExportMetricsServiceRequest.FromString(item.body)
        for resource in request.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name != name:
                        continue
                    points = metric.sum.data_points or metric.gauge.data_points
                    for point in points:
                        value = point.as_double if point.HasField("as_double") else point.as_int
    return value


def agent_turn(
    provider: TracerProvider,
    question: str,
    answer: str,
    *,
    lookups: int = 1,
    conversation_id: str | None = None,
    end: bool = False,
) -> tuple[int, int]:
    """One request of an agent app as a GenAI-instrumented app traces it: an HTTP root span,
    the agent's span and a `lookup_order` tool span per lookup (same arguments each time);
    the conversation id on the root, as an app sets it per request. Returns the trace id and
    the root span id."""
    tracer = provider.get_tracer("app")
    root_attributes: dict[str, Any] = {}
    if conversation_id:  # as GenAI and OpenInference (Phoenix's sessions) name it
        root_attributes["gen_ai.conversation.id"] = conversation_id
        root_attributes["session.id"] = conversation_id
    if end:
        root_attributes["agentscore.conversation.end"] = True
    user = _parts("user", {"type": "text", "content": question})
    output = []
    for n in range(lookups):
        call = {"type": "tool_call", "id": f"c{n}", "name": "lookup_order", "arguments": "{}"}
        output += [
            _parts("assistant", call),
            _parts("tool", {"type": "tool_call_response", "id": f"c{n}", "response": ORDER}),
        ]
    output.append(_parts("assistant", {"type": "text", "content": answer}))
    with tracer.start_as_current_span("POST /chat", attributes=root_attributes) as root:
        with tracer.start_as_current_span(
            "invoke_agent support",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "support",
                "gen_ai.input.messages": json.dumps([user]),
                "gen_ai.output.messages": json.dumps(output),
            },
        ):
            for n in range(lookups):
                with tracer.start_as_current_span(
                    "execute_tool lookup_order",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "lookup_order",
                        "gen_ai.tool.call.id": f"c{n}",
                        "gen_ai.tool.call.arguments": "{}",
                        "gen_ai.tool.call.result": json.dumps(ORDER),
                    },
                ):
                    pass
        context = root.get_span_context()
    return context.trace_id, context.span_id
