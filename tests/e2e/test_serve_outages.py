"""`agentscore serve` through outages that pass: the judge, the backend, the disk. Work is
delayed, never lost and never judged twice.

The judge is a real OpenAI-compatible HTTP server in the test process
(tests/support/http_server.py) that the service's `OpenAIJudge`, configured by URL, calls
through its own HTTP client; every request it gets is counted. Evaluations go to a real
OTLP/HTTP receiver whose status the test sets.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

from agentscore.testing import chat_completion
from tests.support.http_server import HttpServer, Reply, Request, http_server, json_reply
from tests.support.serve import (
    ANSWER,
    SERVE_SCORERS,
    attribute,
    evaluation_spans,
    free_port,
    received_spans,
    send_generations,
    serving,
)

pytestmark = pytest.mark.e2e


class Judge:
    """Answers 503 while `down`, else the one-call reply: the answer is one supported claim."""

    def __init__(self) -> None:
        self.down = False

    def __call__(self, request: Request) -> Reply:
        if self.down:
            return json_reply({"error": {"message": "judge overloaded"}}, 503)
        claim = {"claim": ANSWER, "verdict": "yes", "reason": "stated in the order record"}
        return json_reply(chat_completion({"claims": [claim]}).body)


@contextmanager
def http_judge() -> Iterator[tuple[Judge, HttpServer]]:
    judge = Judge()
    with http_server(judge) as server:
        yield judge, server


def judge_env(base_url: str, retries: int = 0) -> dict[str, str]:
    return {
        "SERVE_TEST_JUDGE": "http",
        "SERVE_TEST_JUDGE_URL": base_url,
        "SERVE_TEST_JUDGE_RETRIES": str(retries),
    }


def scoring_requests(server: HttpServer) -> int:
    """Judge requests made to score, leaving out the judge check the service runs at start
    (`agentscore check`'s request: one per judge, outside the scoring budget)."""
    return sum(
        1 for request in server.requests if "health check" not in str(request.json()["messages"])
    )


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_a_judge_outage_delays_the_scores_and_loses_none(tmp_path: Path) -> None:
    with http_judge() as (judge, server), http_server() as receiver:
        judge.down = True
        with serving(tmp_path, receiver.url, env=judge_env(server.base_url, retries=1)) as serve:
            outage = time.monotonic()
            send_generations(serve.url, [ANSWER] * 10)
            wait_until(lambda: serve.health()["delayed"] >= 10, 15, "every job delayed")
            during = serve.health()
            time.sleep(max(0.0, 15 - (time.monotonic() - outage)))
            assert serve.health()["failed"] == 0
            judge.down = False
            recovered = time.monotonic()
            wait_until(lambda: serve.health()["scored"] == 10, 60, "all 10 scored")
            took = time.monotonic() - recovered
            after = serve.health()
    assert during["status"] == "degraded"
    assert during["problems"]["judge_unavailable"]["detail"] == "JudgeServerError"
    assert after["failed"] == 0 and after["status"] == "ok" and after["pending_jobs"] == 0
    assert took < 60
    scored = [span for span in evaluation_spans(receiver) if _status(span) == "scored"]
    assert len(scored) == 10  # the delayed attempts' spans say "delayed", not failed
    assert {_status(span) for span in evaluation_spans(receiver)} == {"scored", "delayed"}


def test_a_backend_outage_re_exports_and_never_re_judges(tmp_path: Path) -> None:
    with http_judge() as (_, server), http_server() as receiver:
        receiver.reply_with(Reply(503))
        with serving(tmp_path, receiver.url, env=judge_env(server.base_url)) as serve:
            send_generations(serve.url, [ANSWER] * 10)
            wait_until(lambda: serve.health()["export_failures"] >= 1, 30, "a refused export")
            during = serve.health()
            time.sleep(30)
            judged_during_outage = scoring_requests(server)
            receiver.reply_with(Reply(200))
            wait_until(lambda: serve.health()["scored"] == 10, 60, "all 10 exported")
            after = serve.health()
    assert during["status"] == "degraded" and "export_failing" in during["problems"]
    assert judged_during_outage == 10
    assert scoring_requests(server) == 10  # each job judged once
    assert after["judge_requests"] == 10 and after["pending_jobs"] == 0
    assert len({span.span_id for span in evaluation_spans(receiver)}) == 10


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs the test can fill."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    # Unbuffered: with a buffer, what the last write left in it was flushed again on close,
    # and that ENOSPC came out of the `with` (a flaky failure of this test's own set-up).
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 65536)
        except OSError:
            pass
    return filler


def test_a_full_disk_delays_deletes_without_re_judging(tmp_path: Path, small_disk: Path) -> None:
    queue = small_disk / "queue.db"
    with http_judge() as (_, server), http_server() as receiver:
        receiver.reply_with(Reply(503))  # results wait, their rows on disk
        with serving(
            tmp_path, receiver.url, "--queue", str(queue), env=judge_env(server.base_url)
        ) as serve:
            send_generations(serve.url, [ANSWER] * 20)
            wait_until(lambda: serve.health()["export_failures"] >= 1, 30, "a refused export")
            wait_until(lambda: scoring_requests(server) == 20, 30, "every job judged")
            filler = fill(small_disk)
            receiver.reply_with(Reply(200))
            wait_until(lambda: serve.health()["delete_failures"] >= 1, 30, "a failed delete")
            time.sleep(10)
            during = serve.health()
            judged = scoring_requests(server)
            filler.unlink()
            wait_until(lambda: serve.health()["pending_jobs"] == 0, 60, "the rows deleted")
            after = serve.health()
    assert judged <= 2 * 20
    assert during["status"] == "degraded" and "disk_full" in during["problems"]
    assert after["scored"] == 20 and after["status"] == "ok"
    final = {span.span_id for span in evaluation_spans(receiver) if _status(span) != "delayed"}
    assert len(final) == 20


def test_the_request_budget_counts_every_http_request(tmp_path: Path) -> None:
    with http_judge() as (judge, server), http_server() as receiver:
        judge.down = True
        options = ("--requests-per-minute", "6")
        with serving(
            tmp_path, receiver.url, *options, env=judge_env(server.base_url, retries=3)
        ) as serve:
            started = time.monotonic()
            send_generations(serve.url, [ANSWER] * 10)
            time.sleep(max(0.0, 20 - (time.monotonic() - started)))
            requests = scoring_requests(server)
            health = serve.health()
    allowed = 6 + 6 * 20 / 60  # a full bucket, then 6 a minute
    assert requests <= 1.5 * allowed
    assert health["judge_requests"] <= requests


def test_two_services_on_one_queue_judge_each_generation_once(tmp_path: Path) -> None:
    with (
        http_judge() as (_, server),
        http_server() as receiver,
        serving(tmp_path, receiver.url, env=judge_env(server.base_url)) as first,
    ):
        second = subprocess.run(
            [
                sys.executable,
                *("-m", "agentscore.cli", "serve", "--scorers", SERVE_SCORERS),
                *("--port", "0", "--queue", str(tmp_path / "queue.db")),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=Path(__file__).resolve().parents[2],
        )
        send_generations(first.url, [ANSWER] * 20)
        wait_until(lambda: first.health()["scored"] == 20, 60, "all scored")
    assert second.returncode == 2
    assert "in use by another process" in second.stderr
    assert scoring_requests(server) == 20


def refused_judge_env() -> tuple[int, dict[str, str]]:
    """A judge URL on a port nothing listens on (connections refused) until the test serves
    the judge there (`http_server(Judge(), port=...)`)."""
    port = free_port()
    return port, judge_env(f"http://127.0.0.1:{port}/v1")


def says_failed(span: ProtoSpan) -> list[str]:
    """What on an exported span an alert or a person reads as failed: a name, a `fail` label,
    a value that says "failed", an evaluation span's ERROR status. (The judge's chat spans
    are client spans of single requests: a refused one has status ERROR, as any HTTP client
    span's would; the evaluation above it says whether the run failed.)"""
    found = [f"name {span.name!r}"] if "fail" in span.name.lower() else []
    if span.name.startswith("evaluation ") and span.status.code == span.status.STATUS_CODE_ERROR:
        found.append(f"status {span.status.message}")
    for item in span.attributes:
        value = item.value.string_value
        if item.key == "gen_ai.evaluation.score.label" and value == "fail":
            found.append("label fail")
        if "failed" in value.lower():
            found.append(f"{item.key}={value!r}")
    return found


def _by_generation(spans: list[ProtoSpan]) -> dict[tuple[bytes, bytes], list[ProtoSpan]]:
    found: dict[tuple[bytes, bytes], list[ProtoSpan]] = {}
    for span in spans:
        found.setdefault((span.trace_id, span.parent_span_id), []).append(span)
    return found


def test_a_judge_refusing_connections_delays_the_scores_and_nothing_says_failed(
    tmp_path: Path,
) -> None:
    port, env = refused_judge_env()
    with http_server() as receiver, serving(tmp_path, receiver.url, env=env) as serve:
        send_generations(serve.url, [ANSWER] * 3)
        wait_until(lambda: serve.health()["delayed"] >= 6, 30, "two delayed tries a job")
        during = serve.health()
        with http_server(Judge(), port=port):
            wait_until(lambda: serve.health()["scored"] == 3, 60, "all three scored")
            after = serve.health()
        log = serve.log.read_text()
    assert during["failed"] == 0 and during["problems"]["judge_unavailable"]
    assert (after["scored"], after["failed"]) == (3, 0)
    assert [
        (span.name, problem) for span in received_spans(receiver) for problem in says_failed(span)
    ] == []
    generations = _by_generation(evaluation_spans(receiver))
    assert len(generations) == 3
    for spans in generations.values():
        [final] = [span for span in spans if _status(span) == "scored"]
        delayed = [span for span in spans if span is not final]
        assert len(delayed) >= 2 and {_status(span) for span in delayed} == {"delayed"}
        attempts = sorted(attribute(span, "agentscore.attempt") for span in spans)
        assert attempts == list(range(1, len(spans) + 1))  # numbered, the final one last
        assert attribute(final, "agentscore.attempt") == len(spans)
        for span in delayed:
            assert span.status.code == span.status.STATUS_CODE_UNSET
            assert attribute(span, "gen_ai.evaluation.score.label") == "delayed"
            assert attribute(span, "agentscore.delay.cause") == "JudgeConnectionError"
    assert "scorer_failed" not in log and "scorer_attempt_delayed" in log


def test_a_job_that_fails_for_good_says_failed_once_after_its_delayed_tries(
    tmp_path: Path,
) -> None:
    _, env = refused_judge_env()  # never comes back
    with (
        http_server() as receiver,
        serving(tmp_path, receiver.url, "--max-age", "3", env=env) as serve,
    ):
        send_generations(serve.url, [ANSWER] * 2)
        ended = lambda: serve.health()["failed"] + serve.health()["dropped"] == 2  # noqa: E731
        wait_until(ended, 30, "both jobs ended")
        wait_until(lambda: serve.health()["pending_jobs"] == 0, 30, "their rows deleted")
    generations = _by_generation(evaluation_spans(receiver))
    assert len(generations) == 2
    for spans in generations.values():
        # Its last try (or its expiry, if that came first) says failed; every earlier one
        # said delayed, and nothing on it failed.
        [failed] = [span for span in spans if says_failed(span)]
        assert attribute(failed, "error.type") in ("JudgeConnectionError", "ExpiredError")
        assert {_status(span) for span in spans if span is not failed} == {"delayed"}


def _status(span: ProtoSpan) -> str:
    return str(attribute(span, "agentscore.score.status"))
