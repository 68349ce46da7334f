"""The service's parts on their own: the judge budget, the SQLite queue, OTLP decoding."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from agentscore._wire.otlp_in import OtlpDecodeError, decode_traces
from agentscore._wire.otlp_out import Delivery, OtlpSender
from agentscore._wire.otlp_settings import OtlpSettings
from agentscore.errors import ConfigurationError
from agentscore.evals import Evals
from agentscore.judges import LocalJudge
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.run import ScorerRun
from agentscore.scorers import create_faithfulness_scorer
from agentscore.serve.budget import JudgeBudget
from agentscore.serve.export import _takes_logs, build_exporters
from agentscore.serve.forward import FORWARD_HEADERS_ENV, forward_headers
from agentscore.serve.ingest import Ingestor
from agentscore.serve.outbox import Outbox
from agentscore.serve.queue import Commit, SqliteQueue
from agentscore.serve.stats import ServiceStats
from agentscore.spans.records import SpanRecord
from tests.support.http_server import Reply, http_server
from tests.support.otel import span_context
from tests.support.serve import ANSWER, ROOT, SERVE_SCORERS, free_port, recorded_generations


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_budget_holds_jobs_back_until_requests_and_tokens_refill() -> None:
    clock = Clock()
    budget = JudgeBudget(requests_per_minute=2, tokens_per_minute=600, clock=clock)
    started = 0
    while budget.available():
        budget.charge(1, 0)
        started += 1
    assert started == 2  # a full minute's worth of requests at most
    assert budget.wait_time() == pytest.approx(30.0)
    clock.now = 30.0
    assert budget.available()
    budget.charge(1, 1200)  # a reply that used two minutes' worth of tokens
    clock.now = 60.0
    assert not budget.available()  # requests refilled, tokens still in debt (-300)
    assert budget.wait_time() == pytest.approx(30.1)  # until one token is back
    clock.now = 90.2
    assert budget.available()


def test_an_unlimited_budget_never_waits() -> None:
    budget = JudgeBudget()
    budget.charge(10_000, 10_000_000)
    assert not budget.limited
    assert budget.available()
    assert budget.wait_time() == 0.0


def test_protobuf_requests_decode_to_span_records() -> None:
    spans = recorded_generations([ANSWER])
    body = encode_spans(spans).SerializeToString()
    records = decode_traces(body, "application/x-protobuf", max_size=1 << 20, into=SpanRecord)
    assert [r.name for r in records] == [s.name for s in spans]
    agent = next(r for r in records if r.name.startswith("invoke_agent"))
    original = next(s for s in spans if s.name == agent.name)
    assert agent.span_id == span_context(original).span_id
    assert original.parent is not None
    assert agent.parent_span_id == original.parent.span_id
    assert agent.attributes == dict(original.attributes or {})
    assert not agent.parent_is_remote
    assert agent.scope == "app"


def test_undecodable_bodies_and_gzip_bombs_are_refused() -> None:
    with pytest.raises(OtlpDecodeError, match="content type"):
        decode_traces(b"x", "text/plain", max_size=100, into=SpanRecord)
    with pytest.raises(OtlpDecodeError, match="unreadable"):
        decode_traces(b"\xff\xff\xff", "application/x-protobuf", max_size=100, into=SpanRecord)
    import gzip

    bomb = gzip.compress(b"\0" * 1_000_000)
    with pytest.raises(OtlpDecodeError, match="larger than"):
        decode_traces(bomb, "application/x-protobuf", "gzip", max_size=10_000, into=SpanRecord)


def test_the_queue_keeps_open_traces_and_jobs_across_a_reopen(tmp_path: Path) -> None:
    span = SpanRecord(1, 2, 3, "chat x", {"gen_ai.operation.name": "chat", "k": (1, 2)}, 7)
    run = ScorerRun(run_id="r", output="Hi", trace_id=f"{1:032x}", span_id=f"{2:016x}")
    key = (run.trace_id or "", run.span_id or "", "faithfulness")
    queue = SqliteQueue(tmp_path / "q.db")
    assert queue.commit(Commit(spans=[span], emitted=[key[:2]], jobs=[(key, run)])) == 1
    assert queue.commit(Commit(jobs=[(key, run)])) == 0  # the same key: not queued twice
    queue.close()
    reopened = SqliteQueue(tmp_path / "q.db")
    assert reopened.depth == 2
    assert reopened.stored_spans() == [span]
    assert reopened.emitted() == {key[:2]}
    [job] = reopened.due_jobs(10, set())
    assert job.key == key
    assert job.run.output_text == "Hi"
    reopened.commit(Commit(closed_traces=[1]))
    reopened.delete_jobs([key])
    assert reopened.depth == 0
    assert reopened.stored_spans() == []
    assert reopened.emitted() == set()


# The jobs table as queue files had it until 2026-11-24, and before results were stored.
_JOBS_WITHOUT_ROWID = """
CREATE TABLE jobs (trace_id TEXT NOT NULL, span_id TEXT NOT NULL, scorer_id TEXT NOT NULL,
                   run TEXT NOT NULL, created REAL NOT NULL,
                   attempts INTEGER NOT NULL DEFAULT 0, not_before REAL NOT NULL DEFAULT 0,
                   {result}PRIMARY KEY (trace_id, span_id, scorer_id)) WITHOUT ROWID;
CREATE INDEX jobs_by_age ON jobs (created);
"""


@pytest.mark.parametrize("result_column", [True, False], ids=["with results", "older"])
def test_a_queue_file_with_the_old_jobs_table_keeps_every_job(
    tmp_path: Path, result_column: bool
) -> None:
    path = tmp_path / "q.db"
    runs = [ScorerRun(run_id=f"r{n}", output=f"answer {n}") for n in range(3)]
    keys = [(f"{n + 1:032x}", f"{n + 1:016x}", "faithfulness") for n in range(3)]
    old = sqlite3.connect(path)
    old.executescript(_JOBS_WITHOUT_ROWID.format(result="result TEXT, " if result_column else ""))
    old.executemany(
        "INSERT INTO jobs (trace_id, span_id, scorer_id, run, created, attempts) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [
            (*key, run.model_dump_json(), 100.0 + n, n)
            for n, (key, run) in enumerate(zip(keys, runs, strict=True))
        ],
    )
    old.commit()
    old.close()
    queue = SqliteQueue(path)
    definition = queue._db.execute("SELECT sql FROM sqlite_master WHERE name = 'jobs'").fetchone()
    assert "WITHOUT ROWID" not in definition[0]
    indexes = {row[1] for row in queue._db.execute("PRAGMA index_list(jobs)")}
    assert "jobs_by_age" in indexes
    assert queue.depth == 3
    jobs = queue.due_jobs(10, set())
    assert [(job.key, job.run, job.created, job.attempts) for job in jobs] == [
        (key, run, 100.0 + n, n) for n, (key, run) in enumerate(zip(keys, runs, strict=True))
    ]
    assert queue.commit(Commit(jobs=[(keys[0], runs[0])])) == 0  # still unique by key
    result = ScoreResult(
        scorer_id="faithfulness", run_id="r0", status=ScoreStatus.SCORED, score=1.0
    )
    queue.store_results([(keys[0], result)])
    queue.delete_jobs([keys[1]])
    queue.close()
    reopened = SqliteQueue(path)  # moved once: the second open finds the new table
    assert [(job.key, job.result) for job in reopened.due_jobs(10, set())] == [
        (keys[0], result),
        (keys[2], None),
    ]


def test_a_move_that_fails_midway_leaves_the_old_table_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a full disk or a kill midway would: the copy fails after the old table was
    renamed and the new one made; the transaction takes both back."""
    path = tmp_path / "q.db"
    old = sqlite3.connect(path)
    old.executescript(_JOBS_WITHOUT_ROWID.format(result="result TEXT, "))
    run = ScorerRun(run_id="r", output="answer")
    key = (f"{1:032x}", f"{1:016x}", "faithfulness")
    old.execute(
        "INSERT INTO jobs (trace_id, span_id, scorer_id, run, created) VALUES (?, ?, ?, ?, ?)",
        (*key, run.model_dump_json(), 100.0),
    )
    old.commit()
    old.close()
    monkeypatch.setattr("agentscore.serve.queue._JOB_COLUMNS", "trace_id, no_such_column")
    with pytest.raises(sqlite3.OperationalError):
        SqliteQueue(path)
    check = sqlite3.connect(path)
    tables = dict(check.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
    assert "WITHOUT ROWID" in tables["jobs"] and "jobs_without_rowid" not in tables
    assert check.execute("SELECT COUNT(*) FROM jobs").fetchone() == (1,)
    check.close()
    monkeypatch.undo()
    queue = SqliteQueue(path)  # the next start moves it
    assert [(job.key, job.run) for job in queue.due_jobs(10, set())] == [(key, run)]
    queue.close()


def test_a_queued_run_is_handed_out_from_memory_as_its_row_would_give_it(
    tmp_path: Path,
) -> None:
    """Runs the ingest read from real GenAI spans, taken by the worker: the object kept in
    memory equals what the row parses to, and a reopened queue (a restart) reads the row."""
    body = encode_spans(recorded_generations([ANSWER, "Order 1042 is lost."]))
    records = decode_traces(
        body.SerializeToString(), "application/x-protobuf", max_size=1 << 20, into=SpanRecord
    )
    queue = SqliteQueue(tmp_path / "q.db")
    stats = ServiceStats(None, depth=lambda: 0, oldest_age=lambda: 0.0)
    Ingestor(queue, Evals(scorers=[create_faithfulness_scorer(LocalJudge())]), stats).ingest(
        records
    )

    def not_parsed(cls: type[ScorerRun], text: str) -> ScorerRun:
        raise AssertionError("a run just queued was parsed back from its row")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ScorerRun, "model_validate_json", classmethod(not_parsed))
        from_memory = queue.due_jobs(10, set())
    assert sorted(job.run.output_text for job in from_memory) == ["Order 1042 is lost.", ANSWER]
    rows = dict(queue._db.execute("SELECT span_id, run FROM jobs").fetchall())
    for job in from_memory:
        assert job.run == ScorerRun.model_validate_json(rows[job.key[1]])
        assert job.run.output[0].tool_calls  # the tool call and its result came through
    # Queued again under its key, with another run beside a new job: the row's run stands.
    again = (from_memory[0].key, ScorerRun(output="other"))
    new_key = ("f" * 32, "e" * 16, "faithfulness")
    assert queue.commit(Commit(jobs=[again, (new_key, ScorerRun(output="new"))])) == 1
    assert {job.key: job.run for job in queue.due_jobs(10, set())}[again[0]] == from_memory[0].run
    queue.delete_jobs([new_key])
    queue.close()
    reopened = SqliteQueue(tmp_path / "q.db")
    assert reopened.due_jobs(10, set()) == from_memory
    # A job queued again under the same key keeps the run its row holds, not the new one.
    job = from_memory[0]
    assert reopened.commit(Commit(jobs=[(job.key, ScorerRun(output="other"))])) == 0
    assert reopened.due_jobs(1, set())[0].run == job.run
    reopened.delete_jobs([j.key for j in from_memory])
    assert reopened.due_jobs(10, set()) == []


def test_the_logged_destination_carries_no_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://scorer:s3cret@backend.test:4318")
    exporters = build_exporters(tmp_path / "unused.jsonl")
    try:
        assert exporters.destination == "OTLP/HTTP https://backend.test:4318/v1/traces"
    finally:
        exporters.shutdown()


def test_a_body_nested_past_the_parsers_depth_is_a_400_not_a_retry_forever() -> None:
    deep = b'{"resourceSpans": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    with pytest.raises(OtlpDecodeError, match="unreadable OTLP application/json body"):
        decode_traces(deep, "application/json", max_size=1 << 20, into=SpanRecord)
    with pytest.raises(OtlpDecodeError):
        decode_traces(
            b"\x0a\xff\xff\xff\xff\x0f" + b"\x00" * 10,
            "application/x-protobuf",
            max_size=100,
            into=SpanRecord,
        )


def test_forward_headers_parse_like_otlp_headers() -> None:
    env = {FORWARD_HEADERS_ENV: "authorization=Bearer%20abc123xyz, x-team=support"}
    assert forward_headers(env) == {"authorization": "Bearer abc123xyz", "x-team": "support"}
    assert forward_headers({}) == {}


@pytest.mark.parametrize(
    "value",
    ["Bearer s3cr3t-token-value", "authorization=Bearer%0D%0AX-Evil:%201", "=s3cr3t-token-value"],
)
def test_malformed_forward_headers_fail_at_start_without_echoing_the_value(
    value: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError, match="entry 1") as caught:
        forward_headers({FORWARD_HEADERS_ENV: value})
    assert "s3cr3t" not in str(caught.value) and "Evil" not in str(caught.value)
    # The command turns it into exit 2 and one line naming the variable.
    done = subprocess.run(
        [sys.executable, "-m", "agentscore.cli", "serve", "--scorers", SERVE_SCORERS,
         "--queue", str(tmp_path / "q.db"), "--forward", "http://127.0.0.1:9/v1/traces"],
        env={**os.environ, FORWARD_HEADERS_ENV: value, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert FORWARD_HEADERS_ENV in done.stderr and "s3cr3t" not in done.stderr + done.stdout


@pytest.mark.parametrize(
    ("status", "takes"), [(404, False), (405, False), (401, True), (200, True)]
)
def test_the_logs_probe_turns_logs_off_only_for_a_missing_endpoint(
    status: int, takes: bool
) -> None:
    with http_server(
        lambda request: Reply(status if request.path == "/v1/logs" else 200)
    ) as backend:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": backend.url,
            "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20probe-token-123",
        }
        assert _takes_logs(OtlpSender(OtlpSettings.from_environment("LOGS", env))) is takes
    [probe] = backend.requests
    assert probe.body == b"" and probe.headers["authorization"] == "Bearer probe-token-123"


def test_an_unreachable_logs_endpoint_keeps_logs_on() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    assert _takes_logs(OtlpSender(OtlpSettings.from_environment("LOGS", env))) is True


@pytest.mark.parametrize("url", ["not a url", "http://[::1/v1/logs"])
def test_a_logs_endpoint_that_does_not_parse_keeps_logs_on_and_does_not_stop_the_start(
    url: str,
) -> None:
    assert _takes_logs(logs_sender(url)) is True


def logs_sender(url: str) -> OtlpSender:
    return OtlpSender(
        OtlpSettings.from_environment("LOGS", {"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": url})
    )


def test_an_export_that_crashes_keeps_its_items_for_the_next_one() -> None:
    sent: list[list[int]] = []
    crash = [True]

    def send(items: list[int]) -> Delivery:
        if crash[0]:
            raise RuntimeError("an encoder bug")
        sent.append(items)
        return Delivery([])

    outbox = Outbox(send)
    outbox.add([1, 2])
    assert not outbox.export()  # failed: the worker keeps the jobs and tries again
    crash[0] = False
    outbox.add([3])
    assert outbox.export()
    assert sent == [[1, 2, 3]]
