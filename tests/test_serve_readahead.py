"""The worker's read-ahead of due jobs: a query per batch, not per freed slot, and still every
job handed out once, oldest first, with none left behind."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import anyio

from agentscore.run import Level, ScorerRun
from agentscore.serve.queue import Commit, Job, JobKey, SqliteQueue
from agentscore.serve.readahead import ReadAhead


def queued(queue: SqliteQueue, first: int, count: int) -> list[JobKey]:
    keys: list[JobKey] = []
    for index in range(first, first + count):
        key = (f"{index:032x}", f"{index:016x}", "faithfulness")
        run = ScorerRun(run_id=f"r{index}", output="Hi", trace_id=key[0], span_id=key[1])
        queue.commit(Commit(jobs=[(key, run)]))
        keys.append(key)
    return keys


class CountingQueue(SqliteQueue):
    reads = 0

    def due_jobs(
        self, limit: int, exclude: set[JobKey], scorers: Collection[str] | None = None
    ) -> list[Job]:
        self.reads += 1
        return super().due_jobs(limit, exclude, scorers)


def no_sharing(jobs: Sequence[Job]) -> dict[tuple[Level, str], Any]:
    return {}


def test_jobs_are_handed_out_once_in_order_with_one_read_per_batch(tmp_path: Path) -> None:
    queue = CountingQueue(tmp_path / "q.db")
    keys = queued(queue, 0, 40)
    ahead = ReadAhead(queue, 16, no_sharing)
    handed: list[JobKey] = []
    in_hand: set[JobKey] = set()

    async def drain() -> None:
        while len(handed) < len(keys):
            # A slot frees at a time, as judge calls end one by one; finished rows go.
            taken = await ahead.take(1, lambda: set(in_hand))
            assert taken, "a due job was left behind"
            for job, _ in taken:
                handed.append(job.key)
                in_hand.add(job.key)
            if len(in_hand) > 3:
                done = sorted(in_hand)[:2]
                queue.delete_jobs(done)
                in_hand.difference_update(done)

    anyio.run(drain)
    assert handed == keys  # each once, oldest first
    assert queue.reads == 3  # 40 jobs in batches of 16


def test_jobs_put_back_come_first_and_newer_jobs_are_not_starved(tmp_path: Path) -> None:
    queue = SqliteQueue(tmp_path / "q.db")
    first = queued(queue, 0, 3)
    ahead = ReadAhead(queue, 2, no_sharing)

    async def steps() -> None:
        taken = await ahead.take(2, set)
        assert [job.key for job, _ in taken] == first[:2]
        ahead.put_back(taken[1:])  # no budget for the second: it waits in front
        later = queued(queue, 10, 2)
        in_hand = {first[0]}
        taken = await ahead.take(4, lambda: set(in_hand))
        # Fewer held than room: a read for the rest, which skips what is held or in hand.
        assert [job.key for job, _ in taken] == [first[1], first[2], *later]
        assert await ahead.take(4, lambda: in_hand | set(first[1:]) | set(later)) == []

    anyio.run(steps)


def test_a_generations_jobs_share_the_grouping_made_for_their_batch(tmp_path: Path) -> None:
    queue = SqliteQueue(tmp_path / "q.db")
    queued(queue, 0, 3)
    batches: list[list[str]] = []

    def grouping(jobs: Sequence[Job]) -> dict[tuple[Level, str], Any]:
        batches.append([job.run.run_id for job in jobs])
        return {("generation", "r1"): "shared"}

    ahead = ReadAhead(queue, 8, grouping)

    async def one_at_a_time() -> list[object]:
        return [together for _ in range(3) for _, together in await ahead.take(1, set)]

    assert anyio.run(one_at_a_time) == [None, "shared", None]
    assert batches == [["r0", "r1", "r2"]]  # grouped once, over the whole batch read
