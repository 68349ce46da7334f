"""Test helpers shipped with the package: score assertions and a scripted endpoint.

`assert_scores` scores a run (or an agent's result) inside a test and fails it with the
reason and the failing claims, like deepeval's `assert_test`; it works with the offline local
judge and with any OpenAI-compatible judge.

`ScriptedEndpoint` answers Chat Completions requests from a script, through the real
`openai` client and its HTTP stack (a mock transport, no sockets) or, with `serve()`, over
real sockets on 127.0.0.1 for anything configured by URL; it records every request it
received, so tests assert on real parsed replies and on how many requests were made.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
from openai import AsyncOpenAI, OpenAI

from agentscore._wire.http import http_module as sdk_http_module
from agentscore.agent import AgentResult
from agentscore.ci import describe_failure, failing_claims
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.run import ScorerRun
from agentscore.scorers.base import Scorer

__all__ = [
    "ScoreAssertionError",
    "ScriptedEndpoint",
    "ScriptedReply",
    "assert_scores",
    "chat_completion",
    "http_error",
    "network_failure",
    "server_sent_events",
]


class ScoreAssertionError(AssertionError):
    """A score below its pass line, or a scorer that could not score; `results` holds every
    scorer's result, the passing ones too."""

    def __init__(self, message: str, results: list[ScoreResult]) -> None:
        super().__init__(message)
        self.results = results


def assert_scores(
    run: ScorerRun | AgentResult | Mapping[str, Any], scorers: Scorer | Sequence[Scorer]
) -> list[ScoreResult]:
    """Score `run` with each scorer and fail unless every verdict passes.

    `run` is a `ScorerRun`, a mapping of its fields (`{"input": ..., "output": ...,
    "request_context": {"context": [...]}}`), or the `AgentResult` of `agent.generate(...)`,
    whose messages are the run. A scorer failing to score (judge unreachable, unreadable
    output) fails the assertion with its error; a run with nothing to judge (no claims)
    passes, as the results file counts it. Blocking: call it from sync or async tests alike.
    Returns the results, so a test can assert more on them. Its frames are hidden from
    pytest's traceback: a failure points at the test's line, with the scores below it.
    """
    __tracebackhide__ = True
    subject = _as_run(run)
    chosen = [scorers] if isinstance(scorers, Scorer) else list(scorers)
    results = [scorer.run_sync(subject) for scorer in chosen]
    failures = [
        describe_failure(
            result.scorer_id,
            result.score,
            result.reason,
            failing_claims(result),
            result.error.model_dump() if result.error is not None else None,
        )
        for result in results
        if result.status is ScoreStatus.FAILED or result.passed is False
    ]
    if failures:
        raise ScoreAssertionError("\n".join(failures), results)
    return results


def _as_run(run: ScorerRun | AgentResult | Mapping[str, Any]) -> ScorerRun:
    __tracebackhide__ = True  # a run that does not validate fails at the test's own line
    if isinstance(run, ScorerRun):
        return run
    if isinstance(run, AgentResult):
        asked = run.messages[: len(run.messages) - len(run.output)]
        return ScorerRun(
            run_id=run.run_id,
            input=[message for message in asked if message.role != "system"],
            output=run.output,
            trace_id=run.trace_id,
            span_id=run.span_id,
            response_id=run.response_id,
        )
    return ScorerRun.model_validate(run)


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """One scripted answer: an HTTP status with a JSON body, or a network failure."""

    status: int = 200
    body: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    failure: str | None = None  # "timeout" or "connect"
    delay: float = 0.0


_ids = itertools.count(1)


def chat_completion(
    content: str | Mapping[str, Any] | None = None,
    *,
    tool_calls: Iterable[tuple[str, Mapping[str, Any]]] = (),
    finish_reason: str | None = None,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    model: str = "scripted-model",
    delay: float = 0.0,
) -> ScriptedReply:
    """A successful reply. A mapping `content` is sent as its JSON text (a judge's reply);
    `tool_calls` are (name, arguments) pairs the assistant asks to run."""
    text = json.dumps(content) if isinstance(content, Mapping) else content
    number = next(_ids)
    calls = [
        {
            "id": f"call_{number}_{index}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for index, (name, arguments) in enumerate(tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    body = {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
                "message": message,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return ScriptedReply(body=body, delay=delay)


def http_error(
    status: int, message: str = "scripted error", headers: Mapping[str, str] | None = None
) -> ScriptedReply:
    body = {"error": {"message": message, "type": "scripted", "code": str(status)}}
    return ScriptedReply(status=status, body=body, headers=dict(headers or {}))


def network_failure(kind: str = "connect") -> ScriptedReply:
    if kind not in ("connect", "timeout"):
        raise ValueError("kind must be 'connect' or 'timeout'")
    return ScriptedReply(failure=kind)


Script = Iterable[ScriptedReply] | Callable[[dict[str, Any]], ScriptedReply]


class ScriptedEndpoint:
    """Answers requests in script order (or by calling the script with the request body).

    When a list script runs out, further requests get a 500 so a test never hangs; `requests`
    holds every parsed request body, in arrival order, and `request_count` counts them.
    `keep_requests=False` keeps no body (a benchmark or a long run: each would outlive its
    request, and every full garbage collection would walk them all).
    """

    def __init__(self, script: Script, *, keep_requests: bool = True) -> None:
        self._lock = threading.Lock()
        self._responder: Callable[[dict[str, Any]], ScriptedReply]
        if callable(script):
            self._responder = script
        else:
            queue = list(script)

            def next_reply(_: dict[str, Any]) -> ScriptedReply:
                return queue.pop(0) if queue else http_error(500, "script exhausted")

            self._responder = next_reply
        self.requests: list[dict[str, Any]] = []
        self.request_count = 0
        self._keep_requests = keep_requests

    def client(self, *, max_retries: int = 2, timeout: float = 30.0) -> AsyncOpenAI:
        httpx = sdk_http_module()
        transport = httpx.MockTransport(self._handle)
        return AsyncOpenAI(
            api_key="sk-test-not-a-real-key",
            base_url="http://scripted.test/v1",
            max_retries=max_retries,
            timeout=timeout,
            http_client=httpx.AsyncClient(transport=transport),
        )

    def sync_client(self, *, max_retries: int = 2, timeout: float = 30.0) -> OpenAI:
        """A blocking `OpenAI` client served by this script (for sync tool loops)."""
        httpx = sdk_http_module()

        def handle(request: Any) -> Any:
            return anyio.run(self._handle, request)

        return OpenAI(
            api_key="sk-test-not-a-real-key",
            base_url="http://scripted.test/v1",
            max_retries=max_retries,
            timeout=timeout,
            http_client=httpx.Client(transport=httpx.MockTransport(handle)),
        )

    @contextmanager
    def serve(self) -> Iterator[str]:
        """The script served over real sockets; yields the base URL (`http://127.0.0.1:<port>/v1`)
        for a judge or client configured by URL. A "timeout" failure leaves the request
        unanswered (until the client gives up or the server stops), a "connect" failure
        closes the connection without an answer."""
        stopping = threading.Event()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real endpoints

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                reply = endpoint._next_reply(body)
                if reply.delay:
                    stopping.wait(reply.delay)
                if reply.failure is not None:
                    if reply.failure == "timeout":
                        stopping.wait(60)
                    self.close_connection = True
                    return
                content, content_type = endpoint._content(body, reply)
                self.send_response(reply.status)
                for name, value in {"Content-Type": content_type, **reply.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/v1"
        finally:
            stopping.set()
            server.shutdown()
            server.server_close()

    def _next_reply(self, body: dict[str, Any]) -> ScriptedReply:
        with self._lock:
            self.request_count += 1
            if self._keep_requests:
                self.requests.append(body)
            return self._responder(body)

    @staticmethod
    def _content(body: dict[str, Any], reply: ScriptedReply) -> tuple[bytes, str]:
        if body.get("stream") and reply.status == 200 and "choices" in (reply.body or {}):
            return server_sent_events(dict(reply.body or {})), "text/event-stream"
        return json.dumps(dict(reply.body or {})).encode(), "application/json"

    async def _handle(self, request: Any) -> Any:
        httpx = sdk_http_module()
        body = json.loads(request.content or b"{}")
        reply = self._next_reply(body)
        if reply.delay:
            await anyio.sleep(reply.delay)
        if reply.failure == "timeout":
            raise httpx.ReadTimeout("scripted timeout", request=request)
        if reply.failure == "connect":
            raise httpx.ConnectError("scripted connection failure", request=request)
        content, content_type = self._content(body, reply)
        return httpx.Response(
            reply.status, content=content, headers={"content-type": content_type, **reply.headers}
        )


def server_sent_events(completion: dict[str, Any]) -> bytes:
    """A scripted completion as the chunks a streaming server sends: the text in three
    pieces, each tool call named first and its arguments in two halves, usage last."""
    base = {key: completion[key] for key in ("id", "model", "created")}
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return {**base, "object": "chat.completion.chunk", "choices": choices}

    chunks = [chunk({"role": "assistant", "content": ""})]
    text = message.get("content") or ""
    third = max(1, len(text) // 3)
    chunks += [chunk({"content": text[i : i + third]}) for i in range(0, len(text), third)]
    for index, call in enumerate(message.get("tool_calls") or ()):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        named = {"name": call["function"]["name"], "arguments": arguments[:half]}
        first = {"index": index, "id": call["id"], "type": "function", "function": named}
        rest = {"index": index, "function": {"arguments": arguments[half:]}}
        chunks += [chunk({"tool_calls": [first]}), chunk({"tool_calls": [rest]})]
    chunks.append(chunk({}, choice["finish_reason"]))
    chunks.append(
        {**base, "object": "chat.completion.chunk", "choices": [], "usage": completion.get("usage")}
    )
    lines = [f"data: {json.dumps(item)}\n\n" for item in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()
