"""The background runner: bounded, never blocking, never raising, always accounted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscore._runtime import courtesy
from agentscore._runtime.hooks import exit_flush_timeout
from agentscore._runtime.loop import background_loop
from agentscore.errors import ConfigurationError
from agentscore.pipeline.runner import HANDOVER_LINGER, Runner, ScoreJob
from agentscore.result import ScoreStatus
from agentscore.run import ScorerRun
from agentscore.scorers import StepParams, create_scorer


def sleeping_scorer(seconds: float, *, fail: bool = False, id: str = "sleepy") -> Any:
    async def analyze(params: StepParams) -> float:
        await anyio.sleep(seconds)
        if fail:
            raise RuntimeError("scorer broke")
        return 1.0

    return create_scorer(id=id, analyze=analyze, generate_score=lambda p: 0.75)


def gated_scorer(gate: threading.Event, in_flight: list[int], peak: list[int]) -> Any:
    async def analyze(params: StepParams) -> None:
        in_flight[0] += 1
        peak[0] = max(peak[0], in_flight[0])
        # The gate is a threading.Event opened by the test thread; an anyio.Event can't be.
        while not gate.is_set():  # noqa: ASYNC110
            await anyio.sleep(0.005)
        in_flight[0] -= 1

    return create_scorer(id="gated", analyze=analyze, generate_score=lambda p: 1.0)


def assert_identity(runner: Runner) -> None:
    stats = runner.stats()
    assert stats.submitted == stats.scored + stats.failed + stats.dropped + stats.pending


def test_overflow_drops_are_counted_reported_and_never_block() -> None:
    gate = threading.Event()
    drops: list[str] = []
    runner = Runner(max_queue=5, concurrency=1, on_drop=lambda job, reason: drops.append(reason))
    scorer = gated_scorer(gate, [0], [0])

    started = time.perf_counter()
    accepted = [runner.submit(ScoreJob(scorer, ScorerRun(output=f"{i}"))) for i in range(50)]
    elapsed = time.perf_counter() - started

    # Fifty submissions against a stuck worker returned: a blocking one would wait for the
    # gate, which nothing opens before they are all in.
    assert elapsed < 60
    # one job may already be running, so 5 or 6 were accepted; the rest dropped
    assert 5 <= sum(accepted) <= 6
    assert len(drops) == 50 - sum(accepted)
    assert set(drops) == {"queue_full"}
    assert_identity(runner)
    gate.set()
    assert runner.flush(timeout=10)
    stats = runner.stats()
    assert stats.scored == sum(accepted)
    assert stats.dropped == len(drops)
    assert stats.pending == 0
    assert_identity(runner)


def test_concurrency_cap_is_respected() -> None:
    gate = threading.Event()
    in_flight, peak = [0], [0]
    runner = Runner(concurrency=3)
    scorer = gated_scorer(gate, in_flight, peak)
    for i in range(10):
        runner.submit(ScoreJob(scorer, ScorerRun(output=f"{i}")))
    time.sleep(0.2)
    assert peak[0] == 3
    gate.set()
    assert runner.flush(timeout=10)
    assert runner.stats().scored == 10


def test_per_run_timeout_ends_as_a_failed_result() -> None:
    results: list[Any] = []
    runner = Runner(run_timeout=0.05, on_score=results.append)
    runner.submit(ScoreJob(sleeping_scorer(5), ScorerRun(output="x")))
    assert runner.flush(timeout=30)
    [result] = results
    assert result.status is ScoreStatus.FAILED
    assert result.error.type == "ScorerTimeoutError"
    assert runner.stats().failed == 1


def test_scorer_exceptions_are_failed_results() -> None:
    results: list[Any] = []
    runner = Runner(on_score=results.append)
    runner.submit(ScoreJob(sleeping_scorer(0, fail=True), ScorerRun(output="x")))
    runner.submit(ScoreJob(sleeping_scorer(0), ScorerRun(output="y")))
    assert runner.flush(timeout=30)
    assert sorted(r.status.value for r in results) == ["failed", "scored"]
    assert_identity(runner)


def test_a_job_whose_failure_path_raises_does_not_stop_the_dispatcher() -> None:
    class Broken:
        """Not a scorer: running it and building its failure result both raise."""

    results: list[Any] = []
    runner = Runner(concurrency=1, on_score=results.append)
    runner.submit(ScoreJob(Broken(), ScorerRun(output="x")))  # type: ignore[arg-type]
    for i in range(3):
        runner.submit(ScoreJob(sleeping_scorer(0), ScorerRun(output=f"{i}")))
    assert runner.flush(timeout=30)
    stats = runner.stats()
    assert (stats.scored, stats.failed, stats.pending) == (3, 1, 0)
    # Its run still ends, as failed, and the sinks hear of it: none is left waiting.
    assert [r.status.value for r in results] == ["failed"] + ["scored"] * 3
    assert (results[0].scorer_id, results[0].error.type) == ("Broken", "AttributeError")
    assert_identity(runner)


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message either")


def test_a_run_whose_reading_raises_the_unprintable_fails_alone() -> None:
    def unreadable() -> ScorerRun:
        raise Unprintable()

    results: list[Any] = []
    runner = Runner(concurrency=1, on_score=results.append)
    runner.submit(ScoreJob(sleeping_scorer(0), ScorerRun(output="x"), read=unreadable))
    runner.submit(ScoreJob(sleeping_scorer(0), ScorerRun(output="y")))
    assert runner.flush(timeout=30)
    failed, scored = results
    assert failed.status is ScoreStatus.FAILED
    assert (failed.error.type, failed.error.message) == (
        "Unprintable",
        "(its message could not be read)",
    )
    assert scored.status is ScoreStatus.SCORED
    assert_identity(runner)


def test_shutdown_flushes_pending_work_then_drops_new_submissions() -> None:
    results: list[Any] = []
    runner = Runner(concurrency=2, on_score=results.append)
    for i in range(6):
        runner.submit(ScoreJob(sleeping_scorer(0.1), ScorerRun(output=f"{i}")))
    assert runner.shutdown(timeout=10)
    assert len(results) == 6
    assert runner.submit(ScoreJob(sleeping_scorer(0), ScorerRun(output="late"))) is False
    stats = runner.stats()
    assert (stats.scored, stats.dropped, stats.pending) == (6, 1, 0)
    assert_identity(runner)


def test_shutdown_timeout_reports_unfinished_work_and_accounting_still_holds() -> None:
    runner = Runner(concurrency=1)
    for i in range(3):
        runner.submit(ScoreJob(sleeping_scorer(1.0), ScorerRun(output=f"{i}")))
    assert runner.shutdown(timeout=0.1) is False
    assert runner.stats().pending > 0
    assert_identity(runner)


def test_flush_waits_for_in_flight_work() -> None:
    runner = Runner()
    runner.submit(ScoreJob(sleeping_scorer(0.3), ScorerRun(output="x")))
    assert runner.flush(timeout=0.05) is False
    assert runner.flush(timeout=30) is True
    assert runner.stats().scored == 1


def first_start_after_an_idle_submit(runner: Runner) -> float:
    """Seconds from submitting three jobs to an idle dispatcher to the first one starting."""
    started: list[float] = []

    def analyze(params: StepParams) -> float:
        started.append(time.monotonic())
        return 1.0

    scorer = create_scorer(id="clock", analyze=analyze, generate_score=lambda p: 1.0)
    runner.submit(ScoreJob(scorer, ScorerRun(output="first")))  # starts the dispatcher
    assert runner.flush(timeout=30)
    time.sleep(0.05)  # the dispatcher is idle again
    started.clear()
    submitted = time.monotonic()
    for i in range(3):
        assert runner.submit(ScoreJob(scorer, ScorerRun(output=f"{i}"))) is True
    assert runner.flush(timeout=30)
    assert len(started) == 3
    stats = runner.stats()
    assert (stats.scored, stats.failed, stats.pending) == (4, 0, 0)
    assert_identity(runner)
    return min(started) - submitted


def test_an_idle_runner_takes_a_job_only_after_the_handover_linger() -> None:
    # Submitting happens inside the caller's request; scoring must not start in the middle
    # of it. Jobs submitted while the dispatcher lingers are taken in the same wake-up.
    # asyncio may run a timer up to its clock resolution early; nothing ran before the linger.
    assert first_start_after_an_idle_submit(Runner(concurrency=4)) >= HANDOVER_LINGER * 0.9


def test_a_runners_handover_linger_is_its_own() -> None:
    runner = Runner(concurrency=4, handover_linger=0.2)
    assert runner.handover_linger == 0.2
    assert first_start_after_an_idle_submit(runner) >= 0.2 * 0.9


def test_a_runners_gil_slice_paces_its_own_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    # The pauses on the scoring loop's thread, recorded; two runners share that thread.
    paused: list[str] = []
    pause = courtesy._pause

    def recording_pause() -> float:
        paused.append(threading.current_thread().name)
        return pause()

    monkeypatch.setattr(courtesy, "_pause", recording_pause)

    async def analyze(params: StepParams) -> float:  # async: it runs on the loop's thread
        for _ in range(10):
            courtesy.give_way()
        return 1.0

    scorer = create_scorer(id="pieces", analyze=analyze, generate_score=lambda p: 1.0)

    def pauses_in_a_job_of(runner: Runner) -> int:
        paused.clear()
        assert runner.submit(ScoreJob(scorer, ScorerRun(output="x")))
        assert runner.flush(timeout=10)
        runner.shutdown()
        loop_thread = background_loop.thread
        assert loop_thread is not None
        return paused.count(loop_thread.name)

    assert pauses_in_a_job_of(Runner(gil_slice=float("inf"))) == 0
    # A zero slice pauses at every give_way: the scorer's ten and the pipeline's own.
    assert pauses_in_a_job_of(Runner(gil_slice=0.0)) >= 10
    # The slice was that runner's, not the thread's: the next runner's jobs keep their own.
    assert pauses_in_a_job_of(Runner(gil_slice=float("inf"))) == 0


def test_negative_runner_knobs_are_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match="handover_linger"):
        Runner(handover_linger=-1.0)
    with pytest.raises(ConfigurationError, match="gil_slice"):
        Runner(gil_slice=-1.0)


def test_submit_from_many_threads_keeps_the_identity() -> None:
    runner = Runner(max_queue=100, concurrency=8)
    scorer = sleeping_scorer(0.001)

    def hammer() -> None:
        for i in range(200):
            runner.submit(ScoreJob(scorer, ScorerRun(output=f"{i}")))

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert runner.flush(timeout=30)
    stats = runner.stats()
    assert stats.submitted == 800
    assert stats.pending == 0
    assert stats.scored + stats.dropped == 800
    assert_identity(runner)


def test_a_failing_on_drop_callback_is_contained() -> None:
    def on_drop(job: ScoreJob, reason: str) -> None:
        raise RuntimeError("callback broke")

    runner = Runner(max_queue=1, concurrency=1, on_drop=on_drop)
    gate = threading.Event()
    scorer = gated_scorer(gate, [0], [0])
    outcomes = [runner.submit(ScoreJob(scorer, ScorerRun(output=f"{i}"))) for i in range(5)]
    assert outcomes.count(False) >= 3
    gate.set()
    assert runner.flush(timeout=30)
    assert_identity(runner)


EXIT_SCRIPT = """
import sys, time, anyio
from agentscore.pipeline.runner import Runner, ScoreJob
from agentscore.run import ScorerRun
from agentscore.scorers import create_scorer

async def slow(params):
    await anyio.sleep(float(sys.argv[1]))

scorer = create_scorer(id="slow", analyze=slow, generate_score=lambda p: 1.0)
runner = Runner(on_score=lambda result: print("scored", result.score, flush=True))
runner.submit(ScoreJob(scorer, ScorerRun(output="x")))
print("exiting", flush=True)
"""


def run_exit_script(job_seconds: float, exit_timeout: str) -> tuple[str, float]:
    env = {**os.environ, "AGENTSCORE_EXIT_FLUSH_TIMEOUT": exit_timeout}
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT, str(job_seconds)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout, time.perf_counter() - started


def test_pending_work_is_flushed_at_interpreter_exit() -> None:
    out, _ = run_exit_script(job_seconds=0.5, exit_timeout="10")
    assert out.splitlines() == ["exiting", "scored 1.0"]


def test_exit_flush_is_bounded_in_time() -> None:
    out, elapsed = run_exit_script(job_seconds=3600, exit_timeout="0.5")
    assert "scored" not in out
    assert elapsed < 60  # the exit's 0.5 s, not the job's hour


TELEMETRY_EXIT_SCRIPT = """
import sys, anyio
from agentscore import setup_telemetry
from agentscore.pipeline.runner import Runner, ScoreJob
from agentscore.run import ScorerRun
from agentscore.scorers import create_scorer

async def slow(params):
    await anyio.sleep(float(sys.argv[1]))

setup = setup_telemetry(jsonl_path=sys.argv[2])
scorer = create_scorer(id="slow", analyze=slow, generate_score=lambda p: 1.0)
Runner().submit(ScoreJob(scorer, ScorerRun(output="x"), setup.telemetry))
"""


def test_telemetry_exit_hook_waits_for_scores_as_long_as_configured(tmp_path: Path) -> None:
    # Longer than the 5 s default, shorter than the configured 20 s: the evaluation span
    # is exported only if the exporters stay open until the score is in.
    traces = tmp_path / "traces.jsonl"
    completed = subprocess.run(
        [sys.executable, "-c", TELEMETRY_EXIT_SCRIPT, "5.5", str(traces)],
        env={**os.environ, "AGENTSCORE_EXIT_FLUSH_TIMEOUT": "20"},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert completed.returncode == 0, completed.stderr
    names = {json.loads(line).get("name") for line in traces.read_text().splitlines()}
    assert "evaluation slow" in names


def test_a_malformed_exit_timeout_falls_back_to_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTSCORE_EXIT_FLUSH_TIMEOUT", "soon")
    assert exit_flush_timeout() == 5.0
    monkeypatch.setenv("AGENTSCORE_EXIT_FLUSH_TIMEOUT", "-1")
    assert exit_flush_timeout() == 5.0
    monkeypatch.setenv("AGENTSCORE_EXIT_FLUSH_TIMEOUT", "0.25")
    assert exit_flush_timeout() == 0.25
