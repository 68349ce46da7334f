"""The parts of a judged score in `agentscore serve` that do not wait on the judge, in µs of
CPU per score, measured in process on the service's own pieces.

- telemetry: what the worker emits for one score, with the exporters the service builds
  (its outbox, keyed span ids), a meter provider and the service's counters: the evaluation
  span, the judge's chat span with its reply, the gen_ai.evaluation.result log record, the
  score metrics, and the three counts a score adds (judge requests, tokens, scored).
- a queued job handed out: `SqliteQueue.due_jobs` and `delete_jobs` per job, for jobs just
  queued (their runs kept in memory) and for the same jobs after a reopen (a restart: each
  run parsed from its row), same run, so the ratio is what the kept runs save.
- a job's rows: queued, its result stored and its row deleted, in the batches the service
  writes them in, with `--synchronous FULL`.

CPU time, median of 5 rounds. Usage: python benchmarks/serve_parts.py [--scores N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from _evaluation import emit_evaluation, sample_result
from _machine import print_machine
from opentelemetry import _logs, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from agentscore.messages import Message
from agentscore.run import ScorerRun
from agentscore.serve.export import Exporters, build_exporters, keyed_ids
from agentscore.serve.queue import Commit, JobKey, SqliteQueue
from agentscore.serve.stats import ServiceStats
from agentscore.telemetry import Telemetry

ROUNDS = 5
ORDER = json.dumps({"order": 1042, "items": [{"sku": f"A{i}", "qty": i} for i in range(20)]})


def telemetry_per_score(
    exporters: Exporters,
    providers: tuple[trace.TracerProvider, _logs.LoggerProvider],
    scores: int,
) -> float:
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    telemetry = Telemetry(*providers, meter_provider=meter_provider)
    stats = ServiceStats(meter_provider, depth=lambda: 0, oldest_age=lambda: 0.0)
    run = ScorerRun(
        input="Where is order 1042?",
        output="Order 1042 shipped with UPS.",
        trace_id="a" * 32,
        span_id="b" * 16,
        agent_name="support",
    )
    result = sample_result(run)

    def score(index: int) -> None:
        with keyed_ids(("a" * 32, "b" * 16, str(index))):
            emit_evaluation(telemetry, run, result, index)
        stats.add("judge_requests")
        stats.add("judge_tokens", 976)
        stats.add("scored")

    rounds = []
    for round_ in range(ROUNDS + 1):  # the first is a warm-up
        started = time.process_time()
        for index in range(scores):
            score(index)
        if round_:
            rounds.append((time.process_time() - started) / scores * 1e6)
        exporters.export()  # untimed: the outbox does not grow between rounds
    return statistics.median(rounds)


def queued_jobs(count: int) -> list[tuple[JobKey, ScorerRun]]:
    jobs = []
    for index in range(count):
        trace_id, span_id = f"{index + 1:032x}", f"{index + 1:016x}"
        run = ScorerRun.unchecked(
            input=[Message(role="user", content=f"Where is order 1042? ({index})")],
            output=[
                Message(role="tool", content=ORDER, tool_call_id="c1", name="get_order"),
                Message(role="assistant", content=f"Order 1042 shipped. ({index})"),
            ],
            trace_id=trace_id,
            span_id=span_id,
            agent_name="support",
        )
        jobs.append(((trace_id, span_id, "faithfulness"), run))
    return jobs


def hand_out(queue: SqliteQueue) -> int:
    """Take every due job 16 at a time, as the worker's read-ahead does, and delete it."""
    taken = 0
    while jobs := queue.due_jobs(16, set()):
        queue.delete_jobs([job.key for job in jobs])
        taken += len(jobs)
    return taken


def job_hand_out(directory: Path, jobs: int) -> tuple[float, float]:
    """(µs per job just queued, µs per job read back after a reopen), medians of ROUNDS."""
    made = queued_jobs(jobs)
    fresh: list[float] = []
    reopened: list[float] = []
    for round_ in range(ROUNDS):
        for kept, times in ((True, fresh), (False, reopened)):
            path = directory / f"{'fresh' if kept else 'reopened'}-{round_}.db"
            queue = SqliteQueue(path, synchronous="NORMAL")
            for start in range(0, jobs, 128):
                queue.commit(Commit(jobs=made[start : start + 128]))
            if not kept:  # a restart: nothing in memory, every run is read from its row
                queue.close()
                queue = SqliteQueue(path, synchronous="NORMAL")
            started = time.process_time()
            taken = hand_out(queue)
            times.append((time.process_time() - started) / taken * 1e6)
            queue.close()
    return statistics.median(fresh), statistics.median(reopened)


def job_rows(directory: Path, jobs: int) -> float:
    """µs of CPU per job for its rows, median of ROUNDS: queued (128 to a commit, as one
    512-span request brings them), its result stored and its row deleted (32 to a
    transaction, an export's batch), with the service's default `--synchronous FULL`."""
    made = queued_jobs(jobs)
    results = [(key, sample_result(run, index)) for index, (key, run) in enumerate(made)]
    times = []
    for round_ in range(ROUNDS):
        queue = SqliteQueue(directory / f"rows-{round_}.db", synchronous="FULL")
        started = time.process_time()
        for start in range(0, jobs, 128):
            queue.commit(Commit(jobs=made[start : start + 128]))
        for start in range(0, jobs, 32):
            queue.store_results(results[start : start + 32])
        for start in range(0, jobs, 32):
            queue.delete_jobs([key for key, _ in results[start : start + 32]])
        times.append((time.process_time() - started) / jobs * 1e6)
        queue.close()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--scores", type=int, default=4000)
    parser.add_argument("--jobs", type=int, default=2048)
    args = parser.parse_args()
    print_machine()
    os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    with tempfile.TemporaryDirectory() as tmp:
        exporters = build_exporters(Path(tmp) / "evaluations.jsonl")
        providers = (exporters.tracer_provider, exporters.logger_provider)
        telemetry = statistics.median(
            telemetry_per_score(exporters, providers, args.scores) for _ in range(3)
        )
        exporters.shutdown()
        print(f"telemetry per score: {telemetry:.1f} µs (the SDK's providers into the outbox)")
        fresh, reopened = job_hand_out(Path(tmp), args.jobs)
        rows = job_rows(Path(tmp), args.jobs)
    print(
        f"a queued job handed out and deleted: {fresh:.1f} µs just queued (run kept in "
        f"memory), {reopened:.1f} µs after a reopen (run parsed from its row), "
        f"×{reopened / fresh:.2f}"
    )
    print(f"a job's rows (queued, result stored, deleted): {rows:.1f} µs")


if __name__ == "__main__":
    main()
