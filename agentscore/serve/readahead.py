"""Due jobs read from the queue ahead of the worker's free slots.

A slot frees as each judge call ends; asking the queue then costs a thread hop and a query
per job, which was a large share of a service's CPU per score. The worker instead takes jobs
from a batch read ahead (oldest first, `batch` jobs a query), and reads the next batch only
when the one held cannot fill the free slots.

Held jobs stay on disk, untouched, until the worker is done with them, so a crash or a stop
loses nothing. They count as busy for the next read, so no job is handed out twice; jobs
handed out but not started (no budget) go back to the front, ahead of newer ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import anyio

from agentscore.pipeline.generation import Generation
from agentscore.run import Level
from agentscore.serve.queue import Job, JobKey, SqliteQueue

__all__ = ["ReadAhead"]

Grouping = Callable[[Sequence[Job]], dict[tuple[Level, str], Generation]]


class ReadAhead:
    """Used from one task at a time (the worker's loop): a read in progress is the only one.

    `generations`: each target among a batch read (`Job.target`: a generation, a trace or a
    conversation). Made for the whole batch, so a target's jobs share their judge request
    even when the free slots take them one at a time."""

    def __init__(self, queue: SqliteQueue, batch: int, generations: Grouping) -> None:
        self._queue = queue
        self._batch = batch
        self._generations = generations
        self._held: list[tuple[Job, Generation | None]] = []

    def keys(self) -> set[JobKey]:
        return {job.key for job, _ in self._held}

    async def take(
        self,
        room: int,
        busy: Callable[[], set[JobKey]],
        only: frozenset[str] | None = None,
    ) -> list[tuple[Job, Generation | None]]:
        """Up to `room` due jobs, oldest first, with their generation (None for a job
        scored before, whose stored result is sent again).

        `busy`: jobs on disk the worker has in hand (in flight, finished, being exported):
        never read again while it has them. `only`: the scorers whose jobs may be taken now
        (a spend budget holds the others back); the others' stay held, in their place."""
        if only is None:
            ready = self._held
        else:
            ready = [entry for entry in self._held if entry[0].scorer_id in only]
        if len(ready) < room:
            exclude = busy() | self.keys()
            limit = max(self._batch, room) - len(ready)
            jobs = await anyio.to_thread.run_sync(self._queue.due_jobs, limit, exclude, only)
            generations = self._generations([job for job in jobs if job.result is None])
            read = [(job, generations.get(job.target)) for job in jobs]
            self._held += read
            ready = self._held if only is None else ready + read
        if only is None:
            taken, self._held = self._held[:room], self._held[room:]
            return taken
        taken = ready[:room]
        keys = {job.key for job, _ in taken}
        self._held = [entry for entry in self._held if entry[0].key not in keys]
        return taken

    def put_back(self, entries: Sequence[tuple[Job, Generation | None]]) -> None:
        """Jobs taken but not started: first in line for the next `take`."""
        self._held[:0] = entries
