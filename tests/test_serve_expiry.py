"""`--max-age` across a restart: it expires jobs that were never judged, each named (its trace
and span ids) in the log and in an exported evaluation, and never a result already paid for.

Three service starts on one queue file, exporting to a real OTLP/HTTP receiver: the first
judges five generations while the backend refuses every export (their results wait, stored
with their jobs); the second queues a sixth that its judge budget never lets it judge; the
third starts after both are older than its `--max-age`."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from tests.support.http_server import Reply, http_server
from tests.support.serve import (
    ANSWER,
    WRONG,
    attribute,
    evaluation_spans,
    send_generations,
    serving,
    wait_for,
)

# Three service starts (about 1.5 s apiece): the e2e group.
pytestmark = pytest.mark.e2e

MAX_AGE = 1.0


def stored_results(queue: Path) -> int:
    """Jobs whose result is kept in their row (judged, not yet exported)."""
    with sqlite3.connect(f"file:{queue}?mode=ro", uri=True) as db:
        return int(db.execute("SELECT COUNT(*) FROM jobs WHERE result IS NOT NULL").fetchone()[0])


def test_stored_results_are_exported_whatever_their_age_and_expired_jobs_are_named(
    tmp_path: Path,
) -> None:
    queue = tmp_path / "queue.db"
    with http_server() as receiver:
        receiver.reply_with(Reply(503))  # the backend refuses: judged results wait on disk
        with serving(tmp_path, receiver.url) as serve:
            judged = send_generations(serve.url, [ANSWER] * 5)
            wait_for(lambda: stored_results(queue) == 5, what="five results stored")
            serve.kill()
        # A judge budget that never allows a request: this job is queued, never judged.
        with serving(tmp_path, receiver.url, "--requests-per-minute", "0.001") as serve:
            [unjudged] = send_generations(serve.url, [WRONG])
            queued = time.time()
            wait_for(lambda: serve.health()["pending_jobs"] == 6, what="the sixth job queued")
            serve.kill()
        time.sleep(max(0.0, queued + MAX_AGE + 0.5 - time.time()))
        receiver.reply_with(Reply(200))
        receiver.requests.clear()  # what the refused exports sent does not count
        with serving(tmp_path, receiver.url, "--max-age", str(MAX_AGE)) as serve:
            wait_for(lambda: serve.health()["pending_jobs"] == 0, what="the queue to empty")
            wait_for(lambda: len(evaluation_spans(receiver)) >= 6, what="six evaluations")
            health = serve.health_once_scored(5)
            log = serve.log.read_text()
        spans = evaluation_spans(receiver)

    assert {_generation(span) for span in spans} == {*judged, unjudged}
    for generation in judged:  # each stored result exported, once, as it was judged
        [span] = [s for s in spans if _generation(s) == generation]
        assert attribute(span, "gen_ai.evaluation.score.value") == 1.0
        assert attribute(span, "error.type") is None
    [expired] = [s for s in spans if _generation(s) == unjudged]
    assert attribute(expired, "error.type") == "ExpiredError"
    assert expired.status.code == Status.STATUS_CODE_ERROR
    assert attribute(expired, "gen_ai.evaluation.score.value") is None
    assert (health["scored"], health["dropped"], health["failed"]) == (5, 1, 0)
    # The expired job is named in the log: a team can find the generation it belongs to.
    trace_id, span_id = unjudged
    [line] = [line for line in log.splitlines() if "serve_job_expired" in line]
    assert f"{trace_id:032x}" in line and f"{span_id:016x}" in line
    assert "faithfulness" in line


def _generation(span: ProtoSpan) -> tuple[int, int]:
    """The (trace id, agent span id) an evaluation span is parented to."""
    return int.from_bytes(span.trace_id, "big"), int.from_bytes(span.parent_span_id, "big")
