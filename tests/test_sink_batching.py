"""The score sinks batch their posts: against a real HTTP server on 127.0.0.1, many results
make few requests, each with a list; a refused batch is logged and the next one goes; a batch
refused for a passing reason is sent again once the backend is back, past a longer outage
dropped and counted; a full buffer drops and counts; a trace shows its worst verdict; what
waits is sent at exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from agentscore.result import ScoreResult, ScoreStatus
from agentscore.sinks.backends import LangfuseScores, PhoenixAnnotations
from tests.support.http_server import Reply, Request, http_server, json_reply
from tests.support.raw_tcp import Conn, tcp_server
from tests.support.serve import wait_for
from tests.support.sinks import RESULT, posted

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
SPANS = "/v1/span_annotations"
TRACES = "/v1/trace_annotations"


def generation(index: int, *, trace: int | None = None, **update: object) -> ScoreResult:
    """RESULT for another generation: its own run and span, in trace `trace` (its own trace
    when None)."""
    trace_id = f"{trace if trace is not None else index:032x}"
    return RESULT.model_copy(
        update={
            "run_id": f"run-{index}",
            "span_id": f"{index + 1:016x}",
            "trace_id": trace_id,
            **update,
        }
    )


async def flushed(sink: PhoenixAnnotations | LangfuseScores) -> None:
    assert await anyio.to_thread.run_sync(sink.flush, 30)


async def test_many_results_make_few_posts_each_carrying_a_list() -> None:
    with http_server() as collector:
        sink = PhoenixAnnotations(collector.url, max_batch=10, flush_interval=3600)
        for index in range(25):
            await sink(generation(index))
        await flushed(sink)
    # Only full batches leave before the flush; the flush sends the rest.
    assert [len(batch) for batch in posted(collector, SPANS)] == [10, 10, 5]
    assert [len(batch) for batch in posted(collector, TRACES)] == [10, 10, 5]
    sent = [item["span_id"] for batch in posted(collector, SPANS) for item in batch]
    assert sent == [f"{index + 1:016x}" for index in range(25)]
    assert len(collector.requests) == 6


async def test_a_full_batch_goes_without_waiting_for_the_interval() -> None:
    with http_server() as collector:
        sink = PhoenixAnnotations(collector.url, max_batch=5, flush_interval=3600)
        for index in range(5):
            # No trace: span annotations only.
            await sink(generation(index).model_copy(update={"trace_id": None}))
        wait_for(lambda: len(collector.requests) == 1, what="the full batch")
    [batch] = posted(collector, SPANS)
    assert len(batch) == 5


async def test_what_waits_goes_once_the_interval_is_over() -> None:
    with http_server() as collector:
        sink = LangfuseScores(collector.url, public_key="p", secret_key="s", flush_interval=0.05)
        for index in range(3):
            await sink(generation(index))
        wait_for(lambda: len(collector.requests) == 1, what="the interval's batch")
    # An observation score and a trace score per result, in one request.
    [events] = posted(collector, "/api/public/ingestion")
    assert len(events) == 6


async def test_a_refused_batch_is_logged_never_raised_and_the_next_goes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with http_server() as collector:
        sink = PhoenixAnnotations(collector.url, api_key="px-hidden-key", flush_interval=3600)
        collector.reply_with(Reply(400))  # "not this": sending it again changes nothing
        for index in range(3):
            await sink(generation(index))
        await flushed(sink)
        refused = len(collector.requests)
        collector.reply_with(Reply(200))
        for index in range(3, 5):
            await sink(generation(index))
        await flushed(sink)
    out = capsys.readouterr().out
    assert out.count("score_backend_rejected") == 2  # one line per refused request
    assert "status=400" in out and "/v1/span_annotations" in out
    assert "px-hidden-key" not in out
    assert refused == 2
    # Not sent again (the backend said no), and the sink went on with the next batch.
    later = [item["span_id"] for batch in posted(collector, SPANS)[1:] for item in batch]
    assert later == [f"{index + 1:016x}" for index in range(3, 5)]


@pytest.mark.parametrize("status", [503, 429, 500])
async def test_a_batch_refused_for_a_passing_reason_lands_once_the_backend_is_back(
    status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    down = True
    accepted: list[Request] = []

    def backend(request: Request) -> Reply:
        if down:
            return Reply(status)
        accepted.append(request)
        return Reply(200)

    with http_server(backend) as collector:
        sink = PhoenixAnnotations(collector.url, flush_interval=3600)
        for index in range(3):
            await sink(generation(index))
        assert not await anyio.to_thread.run_sync(sink.flush, 0.5)  # held, not lost
        # The trace of generation 0 is scored again meanwhile: its newer annotation wins.
        await sink(generation(3, trace=0, score=0.0, passed=False, label="fail"))
        down = False
        await flushed(sink)
    assert any(request.path == SPANS for request in collector.requests[:1])  # tried first
    out = capsys.readouterr().out
    assert "later=True" in out and "score_sink_dropped" not in out
    assert sink.dropped == 0
    spans = [
        item for request in accepted if request.path == SPANS for item in request.json()["data"]
    ]
    # Each generation's span annotation landed once: none lost, none repeated.
    assert sorted(item["span_id"] for item in spans) == [f"{i + 1:016x}" for i in range(4)]
    traces = [
        item for request in accepted if request.path == TRACES for item in request.json()["data"]
    ]
    # Trace annotations are upserts: the last one of each trace is what it shows.
    shown = {item["trace_id"]: item["result"]["label"] for item in traces}
    assert shown == {f"{0:032x}": "fail", f"{1:032x}": "pass", f"{2:032x}": "pass"}


async def test_an_outage_longer_than_the_retry_window_drops_and_counts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with http_server() as collector:
        collector.reply_with(Reply(503))
        sink = LangfuseScores(collector.url, public_key="p", secret_key="s", retry_window=0)
        await sink(generation(0))
        await flushed(sink)  # tried once, then given up: nothing waits
    assert sink.dropped == 2  # the observation score and the trace score
    assert len(collector.requests) == 1
    out = capsys.readouterr().out
    assert "score_sink_dropped" in out and "reason=backend_unavailable" in out


async def test_events_langfuse_refuses_in_a_read_batch_are_logged_by_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Langfuse's ingestion answers 207 and lists each refused event with its own status.
    refused = {"id": "e1", "status": 400, "message": "Invalid request data"}
    with http_server() as collector:
        collector.reply_with(json_reply({"successes": [], "errors": [refused]}, 207))
        sink = LangfuseScores(collector.url, public_key="p", secret_key="sk-lf-hidden")
        await sink(generation(0))
        await flushed(sink)
    out = capsys.readouterr().out
    assert "score_backend_rejected" in out
    assert "refused=1" in out and "sent=2" in out and "status=207" in out
    assert "sk-lf-hidden" not in out


async def test_a_full_buffer_drops_and_counts_and_logs_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with http_server() as collector:
        sink = PhoenixAnnotations(collector.url, max_batch=100, flush_interval=3600, max_buffer=5)
        # Eight generations of one trace: eight span annotations, one trace annotation.
        for index in range(8):
            await sink(generation(index, trace=7))
        assert sink.dropped == 3
        await flushed(sink)
    [spans] = posted(collector, SPANS)
    assert [item["span_id"] for item in spans] == [f"{index + 1:016x}" for index in range(5)]
    # The trace's annotation waited once, replaced by each later generation in its place.
    [[on_trace]] = posted(collector, TRACES)
    assert on_trace["metadata"]["span_id"] == f"{8:016x}"
    out = capsys.readouterr().out
    # Logged at a limited rate: the first drop, not every one.
    assert out.count("score_sink_dropped") == 1
    assert "dropped=1" in out and "reason=buffer_full" in out


FAIL = {"score": 0.9, "passed": False, "label": "fail"}
NO_CLAIMS = {
    "status": ScoreStatus.NO_CLAIMS,
    "score": 0.0,
    "passed": None,
    "label": None,
    "analyze_step_result": {"verdicts": []},
}


async def test_a_trace_shows_its_worst_verdict_latest_among_equals() -> None:
    # One trace, five generations: pass, fail, pass, no claims, fail again.
    results = [
        generation(0, trace=1),
        generation(1, trace=1, **FAIL),
        generation(2, trace=1),
        generation(3, trace=1, **NO_CLAIMS),
        generation(4, trace=1, **FAIL),
    ]
    with http_server() as collector:
        sink = PhoenixAnnotations(collector.url, flush_interval=3600)
        for result in results:
            await sink(result)
            await flushed(sink)  # each in a request of its own
    # Phoenix replaces a trace annotation posted again under the same name and identifier:
    # the trace shows the last one posted. A pass after a fail, or a label after a score, is
    # not posted at all.
    shown = [item["metadata"]["span_id"] for [item] in posted(collector, TRACES)]
    assert shown == [results[0].span_id, results[1].span_id, results[4].span_id]
    assert len(posted(collector, SPANS)) == 5  # every generation keeps its span annotation


async def test_generations_of_a_trace_in_one_batch_post_one_trace_entry() -> None:
    with http_server() as collector:
        phoenix = PhoenixAnnotations(collector.url, flush_interval=3600)
        langfuse = LangfuseScores(
            collector.url, public_key="p", secret_key="s", flush_interval=3600
        )
        for result in (generation(0, trace=1, **FAIL), generation(1, trace=1)):
            await phoenix(result)
            await langfuse(result)
        await flushed(phoenix)
        await flushed(langfuse)
    [[on_trace]] = posted(collector, TRACES)
    assert on_trace["metadata"]["span_id"] == f"{1:016x}"
    assert on_trace["result"]["label"] == "fail"
    [events] = posted(collector, "/api/public/ingestion")
    trace_scores = [event["body"] for event in events if "observationId" not in event["body"]]
    assert [(score["id"], score["value"]) for score in trace_scores] == [
        (f"agentscore-trace-{1:032x}-hallucination", 0.9)
    ]
    assert len(events) == 3  # two observation scores, one trace score


async def test_a_backend_that_never_answers_holds_the_flush_not_the_caller(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def hang(conn: Conn) -> None:
        conn.read_request()
        conn.wait_for_the_client_to_close()

    with tcp_server(hang) as server:
        sink = PhoenixAnnotations(server.url.removesuffix("/v1"), timeout=30, retry_window=0)
        await sink(generation(0))  # returns at once: the post is the sinks' thread's
        assert not await anyio.to_thread.run_sync(sink.flush, 0.2)
    # The server went away: the request failed, was logged, and nothing waits any more.
    assert await anyio.to_thread.run_sync(sink.flush, 30)
    assert "score_backend_unreachable" in capsys.readouterr().out


def test_what_waits_is_posted_when_the_interpreter_exits(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys

        import anyio

        from agentscore.sinks.backends import PhoenixAnnotations
        from tests.support.sinks import RESULT

        sink = PhoenixAnnotations(sys.argv[1], flush_interval=3600)
        anyio.run(sink, RESULT)  # queued: no flush, and an hour to wait
        """
    )
    with http_server() as collector:
        done = subprocess.run(
            [sys.executable, "-c", script, collector.url],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert {request.path for request in collector.requests} == {SPANS, TRACES}
