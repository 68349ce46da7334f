"""The service's durable queue: one SQLite file (WAL) holding open traces' spans, open
conversations and score jobs.

Tables: `spans` (the spans of traces still open, so a restart rebuilds the assembler and the
whole traces the trace scorers wait for), `emitted` (generations and traces of open traces
already turned into jobs, so that rebuild does not find them again), `conversations` and
`turns` (open conversations, `agentscore.serve.conversations`) and `jobs` (one row per target
and scorer, keyed on trace id, span id and scorer id, deleted once its evaluation was
exported; its `level` says which run its row holds). Every change that follows one OTLP
request (or one look for idle traces and conversations) is one transaction, committed before
the request is answered.

A job's finished result is stored in its row, so a failed export (or a restart before the row
is deleted) sends the same result again instead of asking the judge again. One process owns a
queue file: a second one fails to open it (`QueueInUseError`), so no job is judged twice.

The row is the record. A job is mostly taken soon after its ingest, though, so the runs just
queued are also kept in memory (within a bound) and handed out from there: parsing a run back
from its row was 30 µs of CPU per job for a short one, more for long ones, and made the same
object again. A run not kept (evicted, or queued before a restart) is read from its row.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentscore._memo import RecentValues
from agentscore.errors import ConfigurationError
from agentscore.result import ScoreResult
from agentscore.run import ConversationRun, Level, ScorerRun, TraceRun, level_of
from agentscore.spans.records import SpanRecord

__all__ = [
    "Commit",
    "ConversationWrite",
    "Job",
    "JobKey",
    "QueueInUseError",
    "SqliteQueue",
    "Synchronous",
]

Synchronous = Literal["NORMAL", "FULL"]
JobKey = tuple[str, str, str]  # trace id hex, span id hex, scorer id
# Runs kept after their jobs were queued: a few seconds of a busy service's intake.
_KEPT_RUNS = 4096
_KEPT_RUN_CHARACTERS = 8_000_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS spans (seq INTEGER PRIMARY KEY, trace_id TEXT NOT NULL,
                                  record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS spans_by_trace ON spans (trace_id);
CREATE TABLE IF NOT EXISTS emitted (trace_id TEXT NOT NULL, span_id TEXT NOT NULL,
                                    PRIMARY KEY (trace_id, span_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS jobs (trace_id TEXT NOT NULL, span_id TEXT NOT NULL,
                                 scorer_id TEXT NOT NULL, run TEXT NOT NULL,
                                 created REAL NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
                                 not_before REAL NOT NULL DEFAULT 0, result TEXT,
                                 level TEXT, UNIQUE (trace_id, span_id, scorer_id));
CREATE INDEX IF NOT EXISTS jobs_by_age ON jobs (created);
CREATE TABLE IF NOT EXISTS conversations (conversation_id TEXT PRIMARY KEY,
                                          header TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS turns (conversation_id TEXT NOT NULL, seq INTEGER NOT NULL,
                                  turn TEXT NOT NULL, PRIMARY KEY (conversation_id, seq));
"""
_JOB_COLUMNS = "trace_id, span_id, scorer_id, run, created, attempts, not_before, result, level"
# The run a job's row holds, by its level (NULL: a generation, as every row before levels).
_RUN_TYPES: dict[str | None, type[ScorerRun]] = {
    None: ScorerRun,
    "generation": ScorerRun,
    "trace": TraceRun,
    "conversation": ConversationRun,
}


class QueueInUseError(ConfigurationError):
    """Another process has the queue file open: two owners would judge every job twice."""


@dataclass(frozen=True, slots=True)
class Job:
    """`attempts`: how many times its judge failed for a passing reason; `result`: the
    finished result, when it was scored but not yet exported."""

    key: JobKey
    run: ScorerRun
    created: float
    attempts: int
    result: ScoreResult | None = None

    @property
    def scorer_id(self) -> str:
        return self.key[2]

    @property
    def target(self) -> tuple[Level, str]:
        """What its scorer judges: a generation, a trace or a conversation, by its run id (a
        trace's run id is that of its root span, which may be a generation's too)."""
        return level_of(self.run), self.run.run_id


@dataclass(frozen=True, slots=True)
class ConversationWrite:
    """One change to an open conversation's rows, applied in order with the others of a
    commit. `header` (JSON) replaces its header; `turns` (sequence number, Turn JSON) are
    added after deleting its turns when `clear_turns`; `delete` removes it whole."""

    conversation_id: str
    header: str | None = None
    turns: Sequence[tuple[int, str]] = ()
    clear_turns: bool = False
    delete: bool = False


@dataclass(slots=True)
class Commit:
    """What one ingest step writes, all in one transaction."""

    spans: Sequence[SpanRecord] = ()
    emitted: Sequence[tuple[str, str]] = ()
    jobs: Sequence[tuple[JobKey, ScorerRun]] = ()
    closed_traces: Iterable[int] = ()
    conversations: Sequence[ConversationWrite] = ()


class SqliteQueue:
    """Thread-safe: one connection behind a lock (SQLite serialises writers anyway)."""

    def __init__(self, path: str | Path, *, synchronous: Synchronous = "FULL") -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._owner = _own(self.path)
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        except BaseException:
            os.close(self._owner)
            raise
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            self._db.executescript(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(jobs)")}
            if "result" not in columns:  # a queue file from before results were stored
                self._db.execute("ALTER TABLE jobs ADD COLUMN result TEXT")
            if "level" not in columns:  # from before levels: every job is a generation's
                self._db.execute("ALTER TABLE jobs ADD COLUMN level TEXT")
            self._move_jobs_to_a_rowid_table()
            self._spans = self._count("spans")
            self._jobs = self._count("jobs")
        except BaseException:
            # A queue that could not be opened (a full disk, a damaged file) lets go of its
            # file and its lock: held, the next open in this process found it "in use".
            self._db.close()
            os.close(self._owner)
            raise
        self._queued_runs = RecentValues[ScorerRun](entries=_KEPT_RUNS, size=_KEPT_RUN_CHARACTERS)

    @property
    def depth(self) -> int:
        """Rows held: stored spans plus pending jobs (what the back-pressure bound counts)."""
        return self._spans + self._jobs

    @property
    def pending_jobs(self) -> int:
        return self._jobs

    def commit(self, change: Commit) -> int:
        """Write one ingest step; returns how many jobs were new (not already queued)."""
        now = time.time()
        closed = [(f"{trace_id:032x}",) for trace_id in change.closed_traces]
        jobs = [(*key, run.model_dump_json(), now, _level(run)) for key, run in change.jobs]
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT INTO spans (trace_id, record) VALUES (?, ?)",
                    [(f"{s.trace_id:032x}", _dump_record(s)) for s in change.spans],
                )
                self._db.executemany("INSERT OR IGNORE INTO emitted VALUES (?, ?)", change.emitted)
                before = self._db.total_changes
                self._db.executemany(
                    "INSERT OR IGNORE INTO jobs (trace_id, span_id, scorer_id, run, created, "
                    "level) VALUES (?, ?, ?, ?, ?, ?)",
                    jobs,
                )
                added_jobs = self._db.total_changes - before
                before = self._db.total_changes
                self._db.executemany("DELETE FROM spans WHERE trace_id = ?", closed)
                removed_spans = self._db.total_changes - before
                self._db.executemany("DELETE FROM emitted WHERE trace_id = ?", closed)
                for write in change.conversations:
                    self._write_conversation(write)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._spans += len(change.spans) - removed_spans
            self._jobs += added_jobs
            # Under the lock, so no delete comes between the rows and what is kept of them.
            # When some row was already queued, that job keeps the run its row holds: none
            # of the step's runs is kept then, and none kept earlier under its keys stays.
            if added_jobs == len(jobs):
                for (key, run), row in zip(change.jobs, jobs, strict=True):
                    self._queued_runs.put(key, run, len(row[3]))
            else:
                self._queued_runs.discard(key for key, _ in change.jobs)
        return added_jobs

    def _write_conversation(self, write: ConversationWrite) -> None:
        key = write.conversation_id
        if write.delete or write.clear_turns:
            self._db.execute("DELETE FROM turns WHERE conversation_id = ?", (key,))
        if write.delete:
            self._db.execute("DELETE FROM conversations WHERE conversation_id = ?", (key,))
            return
        if write.header is not None:
            self._db.execute(
                "INSERT OR REPLACE INTO conversations VALUES (?, ?)", (key, write.header)
            )
        self._db.executemany(
            "INSERT OR REPLACE INTO turns VALUES (?, ?, ?)",
            [(key, seq, turn) for seq, turn in write.turns],
        )

    def conversation_headers(self) -> list[tuple[str, str]]:
        """Each open conversation's id and header (JSON)."""
        with self._lock:
            return self._db.execute("SELECT conversation_id, header FROM conversations").fetchall()

    def conversation_turns(self, conversation_id: str) -> list[str]:
        """An open conversation's turns (JSON), in order."""
        with self._lock:
            rows = self._db.execute(
                "SELECT turn FROM turns WHERE conversation_id = ? ORDER BY seq",
                (conversation_id,),
            ).fetchall()
        return [row[0] for row in rows]

    def stored_spans(self) -> list[SpanRecord]:
        """The spans of open traces, in the order they arrived."""
        with self._lock:
            rows = self._db.execute("SELECT record FROM spans ORDER BY seq").fetchall()
        return [_load_record(row[0]) for row in rows]

    def emitted(self) -> set[tuple[str, str]]:
        with self._lock:
            return set(self._db.execute("SELECT trace_id, span_id FROM emitted").fetchall())

    def due_jobs(
        self, limit: int, exclude: set[JobKey], scorers: Collection[str] | None = None
    ) -> list[Job]:
        """The oldest jobs whose retry time has come, skipping those being handled; only
        those of `scorers` when given."""
        only = "" if scorers is None else f"AND scorer_id IN ({','.join('?' * len(scorers))}) "
        with self._lock:
            rows = self._db.execute(
                "SELECT trace_id, span_id, scorer_id, run, created, attempts, result, level "
                "FROM jobs "
                f"WHERE not_before <= ? {only}ORDER BY created LIMIT ?",
                (time.time(), *(scorers or ()), limit + len(exclude)),
            ).fetchall()
        jobs = [
            Job(
                (t, s, c),
                self._queued_runs.get((t, s, c)) or _RUN_TYPES[level].model_validate_json(run),
                created,
                attempts,
                None if result is None else ScoreResult.model_validate_json(result),
            )
            for t, s, c, run, created, attempts, result, level in rows
            if (t, s, c) not in exclude
        ]
        return jobs[:limit]

    def store_results(self, results: Sequence[tuple[JobKey, ScoreResult]]) -> None:
        """Keep finished results with their jobs, in one transaction (one sync)."""
        rows = [(result.model_dump_json(), *key) for key, result in results]
        with self._lock:
            self._transaction(
                "UPDATE jobs SET result = ? WHERE trace_id = ? AND span_id = ? AND scorer_id = ?",
                rows,
            )

    def oldest_job_age(self) -> float:
        with self._lock:
            row = self._db.execute("SELECT MIN(created) FROM jobs").fetchone()
        return max(0.0, time.time() - row[0]) if row and row[0] is not None else 0.0

    def delete_jobs(self, keys: Sequence[JobKey]) -> None:
        """Delete in one transaction: one sync for the batch, not one per row."""
        with self._lock:
            before = self._db.total_changes
            self._transaction(
                "DELETE FROM jobs WHERE trace_id = ? AND span_id = ? AND scorer_id = ?", keys
            )
            self._jobs -= self._db.total_changes - before
            self._queued_runs.discard(keys)

    def _transaction(self, statement: str, rows: Sequence[Sequence[object]]) -> None:
        if not rows:
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany(statement, rows)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def retry_later(self, keys: Sequence[JobKey], delay: float) -> None:
        """Count a failed attempt on each job and leave it for `delay` seconds."""
        with self._lock:
            self._transaction(
                "UPDATE jobs SET attempts = attempts + 1, not_before = ? "
                "WHERE trace_id = ? AND span_id = ? AND scorer_id = ?",
                [(time.time() + delay, *key) for key in keys],
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()
            os.close(self._owner)

    def _move_jobs_to_a_rowid_table(self) -> None:
        """Queue files until 2026-11-24 keep jobs in a WITHOUT ROWID table, where each row
        (a run's JSON, then its result) sits in the key's b-tree: queueing, storing the
        result and deleting a job cost more CPU there than in a rowid table. Moved once, in
        one transaction, so a crash midway leaves the old table whole."""
        (definition,) = self._db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'jobs'"
        ).fetchone()
        if "WITHOUT ROWID" not in definition.upper():
            return
        new_table = _SCHEMA[_SCHEMA.index("CREATE TABLE IF NOT EXISTS jobs") :]
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute("ALTER TABLE jobs RENAME TO jobs_without_rowid")
            self._db.execute("DROP INDEX IF EXISTS jobs_by_age")
            for statement in new_table.split(";"):  # not executescript: it would commit
                if statement.strip():
                    self._db.execute(statement)
            self._db.execute(
                f"INSERT INTO jobs ({_JOB_COLUMNS}) SELECT {_JOB_COLUMNS} FROM jobs_without_rowid"
            )
            self._db.execute("DROP TABLE jobs_without_rowid")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def _count(self, table: str) -> int:
        return int(self._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def _own(path: Path) -> int:
    """An exclusive lock on `<queue>.lock`, held while the process lives (the kernel releases
    it on any exit, kill -9 included, so a crash never leaves the queue locked)."""
    lock_path = path.with_name(path.name + ".lock")
    descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(descriptor)
        raise QueueInUseError(
            f"the queue {path} is in use by another process (pid {holder}); give each "
            "agentscore serve process its own --queue file"
        ) from None
    except OSError:
        os.close(descriptor)
        raise
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, str(os.getpid()).encode(), 0)
    return descriptor


def _level(run: ScorerRun) -> str | None:
    level = level_of(run)
    return None if level == "generation" else level


def _dump_record(span: SpanRecord) -> str:
    return json.dumps(
        [
            f"{span.trace_id:032x}",
            f"{span.span_id:016x}",
            None if span.parent_span_id is None else f"{span.parent_span_id:016x}",
            span.name,
            dict(span.attributes),
            span.end_time,
            span.parent_is_remote,
            span.scope,
            span.start_time,
            span.error,
        ],
        separators=(",", ":"),
        default=str,
        ensure_ascii=False,  # UTF-8, not six bytes a character: the byte budget counts on it
    )


def _load_record(text: str) -> SpanRecord:
    fields = json.loads(text)
    trace_id, span_id, parent, name, attributes, end_time, remote, scope = fields[:8]
    # Rows stored before spans kept their start and error hold eight fields.
    start_time, error = fields[8:10] if len(fields) >= 10 else (0, None)
    return SpanRecord(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        parent_span_id=None if parent is None else int(parent, 16),
        name=name,
        attributes={key: _tuples(value) for key, value in attributes.items()},
        end_time=end_time,
        parent_is_remote=remote,
        scope=scope,
        start_time=start_time,
        error=error,
    )


def _tuples(value: Any) -> Any:
    return tuple(_tuples(item) for item in value) if isinstance(value, list) else value
