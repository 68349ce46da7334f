"""`kill -9` at any moment, then restart on the same queue file: nothing the service answered
200 for is lost, and no generation gets two evaluations."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.support.http_server import HttpServer, http_server
from tests.support.serve import (
    ANSWER,
    evaluation_spans,
    free_port,
    send_generations,
    serving,
    traced_generation,
    wait_for,
)

# Two service starts each (about 1.5 s apiece): the e2e group.
pytestmark = pytest.mark.e2e


def _evaluations_by_generation(receiver_spans: list[ProtoSpan]) -> dict[tuple[int, int], set[int]]:
    found: dict[tuple[int, int], set[int]] = {}
    for span in receiver_spans:
        key = (int.from_bytes(span.trace_id, "big"), int.from_bytes(span.parent_span_id, "big"))
        found.setdefault(key, set()).add(int.from_bytes(span.span_id, "big"))
    return found


def test_kill_9_while_scoring_loses_nothing_and_scores_nothing_twice(tmp_path: Path) -> None:
    with http_server() as receiver:
        with serving(tmp_path, receiver.url, "--concurrency", "4", judge_delay=0.1) as serve:
            sent = send_generations(serve.url, [ANSWER] * 30)  # each answered 200
            wait_for(lambda: len(evaluation_spans(receiver)) >= 4, what="scoring under way")
            serve.kill()
        before_restart = len(evaluation_spans(receiver))
        assert before_restart < 30  # killed mid-way: the rest is on disk
        with serving(tmp_path, receiver.url, "--concurrency", "4") as serve:
            wait_for(lambda: serve.health()["pending_jobs"] == 0, what="the queue to empty")
            health = serve.health_once_scored(30 - before_restart + _reexported(receiver))
        found = _evaluations_by_generation(evaluation_spans(receiver))
    assert set(found) == set(sent)  # no loss
    assert all(len(span_ids) == 1 for span_ids in found.values())  # one evaluation each
    assert health["scored"] == 30 - before_restart + _reexported(receiver)
    assert health["dropped"] == 0


def _reexported(receiver: HttpServer) -> int:
    """Evaluations exported again after the kill: the same span, sent twice (the window
    between the backend's 200 and the job's deletion)."""
    counts = Counter(bytes(s.span_id) for s in evaluation_spans(receiver))
    return sum(count - 1 for count in counts.values())


def test_an_open_traces_spans_survive_kill_9(tmp_path: Path) -> None:
    port = free_port()
    provider = TracerProvider()
    exporter = OTLPSpanExporter(f"http://127.0.0.1:{port}/v1/traces")
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    user = {"role": "user", "parts": [{"type": "text", "content": "Where is order 1042?"}]}
    tool = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": {}}]}
    answer = {"role": "assistant", "parts": [{"type": "text", "content": "It is on its way."}]}
    with http_server() as receiver:
        root = tracer.start_span("POST /chat")
        with serving(tmp_path, receiver.url, port=port) as serve:
            with trace.use_span(root):
                agent = traced_generation(provider, ANSWER)  # scored at once
                # A final model call outside any agent: a generation only once the root ends.
                with tracer.start_as_current_span(
                    "chat gpt-x",
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.input.messages": json.dumps([user, tool]),
                        "gen_ai.output.messages": json.dumps([answer]),
                    },
                ) as chat:
                    chat_id = chat.get_span_context().span_id
            wait_for(lambda: len(evaluation_spans(receiver)) == 1, what="the agent's evaluation")
            # Its job row is deleted just after the backend's 200: killing in between is the
            # known re-send window (tested below), not what this test is about.
            wait_for(lambda: serve.health()["pending_jobs"] == 0, what="the agent's job done")
            serve.kill()
        with serving(tmp_path, receiver.url, port=port) as serve:
            root.end()  # the trace closes in the restarted service, from spans on disk
            wait_for(lambda: serve.health()["scored"] >= 1, what="the model call's evaluation")
            wait_for(lambda: serve.health()["pending_jobs"] == 0, what="the queue to empty")
            health = serve.health()
        provider.shutdown()
        found = _evaluations_by_generation(evaluation_spans(receiver))
    trace_id = root.get_span_context().trace_id
    assert set(found) == {agent, (trace_id, chat_id)}
    assert health["scored"] == 1  # the agent's generation was not found again after restart


def test_sigterm_stops_taking_spans_and_drains_the_queue(tmp_path: Path) -> None:
    with http_server() as receiver:
        with serving(tmp_path, receiver.url, "--concurrency", "1", judge_delay=0.2) as serve:
            send_generations(serve.url, [ANSWER] * 4)
            stopped = serve.terminate()
        assert "left_on_disk=0" in stopped
        assert "scored=4" in stopped
        assert len(evaluation_spans(receiver)) == 4
