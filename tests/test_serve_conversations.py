"""Conversations and whole traces in `agentscore serve`'s ingest, in process: the queue file
holds open conversations (headers and turns), the hand-over of a conversation to its jobs is
one transaction, and what a restart finds on disk is scored once. The conversations' clock is
injected; whole traces use a grace of 0 (due at once) or one no test waits for."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentscore.pipeline.conversations import ConversationTracker, OpenConversation
from agentscore.run import ConversationRun, ScorerRun, Turn
from agentscore.serve.conversations import SqliteConversationStore
from agentscore.serve.ingest import Ingestor
from agentscore.serve.queue import Commit, Job, SqliteQueue
from agentscore.serve.stats import ServiceStats
from agentscore.spans.records import SpanRecord
from tests.support.serve import agent_turn
from tests.support.serve_level_scorers import evals


@dataclass
class Clock:
    now: float = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def turn_spans(question: str, conversation_id: str, **options: Any) -> list[SpanRecord]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent_turn(provider, question, f"{question} answered.", conversation_id=conversation_id)
    provider.shutdown()
    return [SpanRecord.from_readable(span) for span in exporter.get_finished_spans()]


@pytest.fixture
def queue_path(tmp_path: Path) -> Path:
    return tmp_path / "queue.db"


@pytest.fixture
def queue(queue_path: Path) -> Iterator[SqliteQueue]:
    opened = SqliteQueue(queue_path)
    yield opened
    opened.close()


def ingestor(queue: SqliteQueue, clock: Clock, *, grace: float = 0.0) -> Ingestor:
    stats = ServiceStats(None, depth=lambda: queue.depth, oldest_age=queue.oldest_job_age)
    return Ingestor(queue, evals, stats, trace_grace=grace, conversation_idle=10.0, clock=clock)


def conversation_jobs(queue: SqliteQueue) -> list[Job]:
    return [job for job in queue.due_jobs(100, set()) if job.scorer_id == "conversation_turns"]


# -- The store ----------------------------------------------------------------------------------


def test_the_store_keeps_headers_and_turns_across_a_reopen(queue_path: Path) -> None:
    queue = SqliteQueue(queue_path)
    store = SqliteConversationStore(queue)
    turns = tuple(Turn(input=f"Q{n}?", output=f"A{n}.", run_id=f"r{n}") for n in range(3))
    held = OpenConversation("c", first_seen=5.0, last_seen=7.0, held_bytes=300, trace_id="t")
    assert store.put(held) is None
    for n in range(3):  # as the tracker adds them: one more each time
        current = store.get("c")
        assert current is not None
        assert (
            store.put(OpenConversation("c", turns=(*current.turns, turns[n]), last_seen=9.0))
            is None
        )
    queue.commit(Commit(conversations=store.pending()))
    store.committed()
    queue.close()

    reopened = SqliteQueue(queue_path)
    again = SqliteConversationStore(reopened)
    found = again.get("c")
    assert found is not None
    assert found.turns == turns
    assert found.last_seen == 9.0
    assert again.idle(8.9) == [] and again.idle(9.0) == ["c"]
    assert again.take("c") is not None
    reopened.commit(Commit(conversations=again.pending()))
    again.committed()
    assert len(SqliteConversationStore(reopened)) == 0
    reopened.close()


def test_writes_not_committed_are_forgotten_and_the_disk_is_what_is_open(
    queue: SqliteQueue,
) -> None:
    store = SqliteConversationStore(queue)
    store.put(OpenConversation("c", turns=(Turn(input="Q?", output="A."),), held_bytes=10))
    queue.commit(Commit(conversations=store.pending()))
    store.committed()
    taken = store.take("c")
    assert taken is not None and len(store) == 0
    store.rolled_back()  # the commit that would have deleted it failed
    assert len(store) == 1 and store.held_bytes == 10
    again = store.get("c")
    assert again is not None and len(again.turns) == 1


def test_the_store_is_bounded_like_the_memory_one(queue: SqliteQueue) -> None:
    store = SqliteConversationStore(queue, max_conversations=1, max_turns=1, max_bytes=100)
    assert store.put(OpenConversation("a", held_bytes=50)) is None
    assert store.put(OpenConversation("b")) == "too_many_conversations"
    two = (Turn(input="1"), Turn(input="2"))
    assert store.put(OpenConversation("a", turns=two)) == "too_many_turns"
    assert store.put(OpenConversation("a", held_bytes=101)) == "open_conversation_bytes"


def test_the_one_tracker_runs_on_the_durable_store(queue: SqliteQueue) -> None:
    over: list[OpenConversation] = []
    clock = Clock()
    tracker = ConversationTracker(
        over.append, idle=10, store=SqliteConversationStore(queue), clock=clock, background=False
    )
    assert tracker.add(ScorerRun(input="Q?", output="A.", conversation_id="x"))
    clock.now += 10
    assert tracker.expire() == 1
    assert [c.conversation_id for c in over] == ["x"]


# -- The ingest step ----------------------------------------------------------------------------


def test_turns_are_committed_with_their_trace_and_the_conversation_handed_over_once(
    queue: SqliteQueue,
) -> None:
    clock = Clock()
    ingest = ingestor(queue, clock)
    for n in range(3):
        ingest.ingest(turn_spans(f"Question {n}", "c-1"))
        clock.now += 5  # under the idle timeout between turns
        ingest.expire()
        assert ingest.open_conversations == 1
        assert conversation_jobs(queue) == []
    trace_jobs = [job for job in queue.due_jobs(100, set()) if job.scorer_id == "tool_efficiency"]
    assert len(trace_jobs) == 3  # one per trace
    clock.now += 10
    ingest.expire()
    [job] = conversation_jobs(queue)
    assert isinstance(job.run, ConversationRun)
    assert [turn.input[0].content for turn in job.run.turns] == [
        "Question 0",
        "Question 1",
        "Question 2",
    ]
    assert job.run.conversation_id == "c-1"
    assert ingest.open_conversations == 0
    ingest.expire()
    assert len(conversation_jobs(queue)) == 1


def test_a_failed_hand_over_leaves_the_conversation_open_and_it_is_handed_over_later(
    queue: SqliteQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    ingest = ingestor(queue, clock)
    ingest.ingest(turn_spans("Question", "c-2"))
    clock.now += 11
    real_commit = SqliteQueue.commit

    def full_disk(self: SqliteQueue, change: Commit) -> int:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(SqliteQueue, "commit", full_disk)
    with pytest.raises(sqlite3.OperationalError):
        ingest.expire()
    assert ingest.open_conversations == 1  # as on disk: not taken
    monkeypatch.setattr(SqliteQueue, "commit", real_commit)
    ingest.expire()
    assert len(conversation_jobs(queue)) == 1
    assert ingest.open_conversations == 0


def test_a_restart_finds_the_open_conversation_and_scores_it_once(queue_path: Path) -> None:
    clock = Clock()
    first = SqliteQueue(queue_path)
    ingestor(first, clock).ingest(turn_spans("Question 1", "c-3"))
    first.close()  # killed: nothing more is written

    clock.now += 60  # down longer than the idle timeout
    second = SqliteQueue(queue_path)
    restarted = ingestor(second, clock)  # idle past its timeout: handed over at the start
    assert restarted.open_conversations == 0
    [job] = conversation_jobs(second)
    assert isinstance(job.run, ConversationRun) and len(job.run.turns) == 1
    restarted.expire()
    second.close()
    third = SqliteQueue(queue_path)
    assert ingestor(third, clock).open_conversations == 0
    assert len(conversation_jobs(third)) == 1  # once, whatever the restarts
    third.close()


def test_a_conversation_still_within_its_idle_time_at_a_restart_stays_open(
    queue_path: Path,
) -> None:
    clock = Clock()
    first = SqliteQueue(queue_path)
    ingestor(first, clock).ingest(turn_spans("Question 1", "c-5"))
    first.close()
    clock.now += 5
    second = SqliteQueue(queue_path)
    restarted = ingestor(second, clock)
    assert restarted.open_conversations == 1
    restarted.ingest(turn_spans("Question 2", "c-5"))
    clock.now += 10
    restarted.expire()
    [job] = conversation_jobs(second)
    assert isinstance(job.run, ConversationRun) and len(job.run.turns) == 2
    second.close()


def test_a_trace_in_its_grace_at_a_crash_becomes_its_turn_after_the_restart(
    queue_path: Path,
) -> None:
    clock = Clock()
    first = SqliteQueue(queue_path)
    ingest = ingestor(first, clock, grace=3600.0)  # no test waits that long
    ingest.ingest(turn_spans("Question 1", "c-4"))
    assert ingest.open_conversations == 0  # the trace waits for its grace: not a turn yet
    first.close()

    second = SqliteQueue(queue_path)
    restarted = ingestor(second, clock, grace=3600.0)
    assert restarted.open_conversations == 1  # its root had ended before the crash
    assert second.stored_spans() == []  # handed over: its spans are gone with it
    clock.now += 11
    restarted.expire()
    assert len(conversation_jobs(second)) == 1
    second.close()


def test_span_rows_keep_start_and_error(queue: SqliteQueue, queue_path: Path) -> None:
    span = SpanRecord(1, 2, None, "x", {"k": "v"}, end_time=9, start_time=4, error="boom")
    queue.commit(Commit(spans=[span]))
    assert queue.stored_spans() == [span]
