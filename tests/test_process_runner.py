"""ProcessRunner: runs scored in a forked process, results back here, nothing lost or repeated
when a process dies, is killed, or exits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agentscore import (
    Agent,
    Evals,
    ProcessRunner,
    RunnerStats,
    ScoreResult,
    ScoreStatus,
    Telemetry,
)
from agentscore._runtime import courtesy
from agentscore._runtime.callbacks import on_loop
from agentscore.pipeline import process
from agentscore.pipeline.runner import ScoreJob
from agentscore.run import ScorerRun
from agentscore.scorers import StepParams, create_faithfulness_scorer, create_scorer
from agentscore.telemetry.otlp import OtlpSpanExporter
from agentscore.testing import ScriptedEndpoint, chat_completion
from tests.http_collector import http_collector

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")

ORDER = {"order": "A1", "status": "shipped", "eta": "2026-12-01"}
CALL = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}


def answered(text: str) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps(ORDER)},
        {"role": "assistant", "content": text},
    ]


def pid_scorer(log: Path, *, seconds: float = 0.0, id: str = "pid") -> Any:
    """Writes the pid it runs in and the run's question to `log`, after `seconds`."""

    def analyze(params: StepParams) -> float:
        time.sleep(seconds)
        question = params.run.input[0].content if params.run.input else ""
        if question == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        with log.open("a") as file:
            file.write(f"{os.getpid()} {question}\n")
        return 1.0

    return create_scorer(id=id, analyze=analyze, generate_score=lambda p: 1.0)


@pytest.fixture
def fast_refork(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "REFORK_INTERVAL", 0.05)


@pytest.fixture
def runner() -> Iterator[ProcessRunner]:
    runner = ProcessRunner()
    yield runner
    runner.shutdown(10)


def test_runs_are_scored_in_a_child_and_results_reach_sinks_here(
    runner: ProcessRunner, tmp_path: Path
) -> None:
    results: list[tuple[int, ScoreResult]] = []
    log = tmp_path / "scored"
    evals = Evals(
        scorers=[create_faithfulness_scorer("local"), pid_scorer(log)],
        runner=runner,
        on_score=lambda result: results.append((os.getpid(), result)),
    )
    assert evals.submit("Where is my order?", answered("Order A1 shipped."))
    assert evals.submit("Where is my order?", answered("Order A1 was cancelled."))
    assert runner.flush(20)

    assert runner.child_pid not in (None, os.getpid())
    assert runner.stats() == RunnerStats(4, 4, 0, 0, 0, 0)
    assert {pid for pid, _ in results} == {os.getpid()}  # sinks run here
    faithfulness = sorted(r.score or 0.0 for _, r in results if r.scorer_id == "faithfulness")
    assert faithfulness == [0.0, 1.0]
    assert all(r.status is ScoreStatus.SCORED for _, r in results)
    # The scorers themselves ran in the child.
    assert {line.split()[0] for line in log.read_text().splitlines()} == {str(runner.child_pid)}


def test_evaluation_spans_leave_from_the_child_to_a_real_receiver() -> None:
    with http_collector() as collector:
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(OtlpSpanExporter(collector.url)))
        telemetry = Telemetry(tracer_provider=provider)
        runner = ProcessRunner()
        evals = Evals(
            scorers=[create_faithfulness_scorer("local")], runner=runner, telemetry=telemetry
        )
        with provider.get_tracer("app").start_as_current_span("invoke_agent support") as agent:
            evals.submit("Where is my order?", answered("Order A1 shipped."))
        assert runner.shutdown(20)  # the child finishes, flushes its exporters, exits
        deadline = time.monotonic() + 10
        spans: list[Any] = []
        while time.monotonic() < deadline and not spans:
            for received in list(collector.received):
                request = ExportTraceServiceRequest()
                request.ParseFromString(received.body)
                spans += [
                    span
                    for resource in request.resource_spans
                    for scope in resource.scope_spans
                    for span in scope.spans
                ]
            time.sleep(0.05)
        provider.shutdown()
    evaluation = [span for span in spans if span.name.startswith("evaluation")]
    assert evaluation, [span.name for span in spans]
    attributes = {a.key: a.value for a in evaluation[0].attributes}
    assert attributes["gen_ai.evaluation.score.value"].double_value == 1.0
    # Parented to the agent's span, in the agent's trace, though sent from another process.
    assert evaluation[0].trace_id == agent.get_span_context().trace_id.to_bytes(16, "big")


def test_an_agents_scores_come_back_to_the_agent(runner: ProcessRunner) -> None:
    model = ScriptedEndpoint(lambda body: chat_completion("Order 1042 shipped."))
    agent = Agent(
        "support",
        "m",
        client=model.client(),
        evals={"scorers": [create_faithfulness_scorer("local")], "runner": runner},
    )
    agent.generate_sync("Where is order 1042?")
    assert agent.flush(20)
    assert [score.scorer_id for score in agent.scores] == ["faithfulness"]
    assert runner.stats().scored == 1


def test_a_killed_child_is_replaced_and_its_runs_scored_once(
    runner: ProcessRunner, tmp_path: Path, fast_refork: None
) -> None:
    log = tmp_path / "scored"
    results: list[ScoreResult] = []
    evals = Evals(scorers=[pid_scorer(log, seconds=0.5)], runner=runner, on_score=results.append)
    for n in range(4):
        evals.submit(f"q{n}", "answer")
    deadline = time.monotonic() + 10
    while runner.child_pid is None and time.monotonic() < deadline:
        time.sleep(0.01)
    first = runner.child_pid
    assert first is not None
    time.sleep(0.2)  # the runs are under way in the child
    os.kill(first, signal.SIGKILL)
    assert runner.flush(20)

    assert runner.child_pid not in (None, first)
    assert runner.stats() == RunnerStats(4, 4, 0, 0, 0, 0)
    assert sorted(r.run_id for r in results) == sorted({r.run_id for r in results})
    assert len(results) == 4 and all(r.status is ScoreStatus.SCORED for r in results)
    lines = log.read_text().splitlines()
    assert sorted(line.split()[1] for line in lines) == ["q0", "q1", "q2", "q3"]
    assert {line.split()[0] for line in lines} == {str(runner.child_pid)}


def test_a_run_that_kills_every_child_fails_and_later_runs_score(
    runner: ProcessRunner, tmp_path: Path, fast_refork: None
) -> None:
    results: list[ScoreResult] = []
    evals = Evals(scorers=[pid_scorer(tmp_path / "log")], runner=runner, on_score=results.append)
    evals.submit("die", "answer")
    assert runner.flush(20)
    [failed] = results
    assert failed.status is ScoreStatus.FAILED and failed.error is not None
    assert failed.error.type == "ScoringProcessExited"
    assert "killed by SIGKILL" in failed.error.message

    evals.submit("fine", "answer")
    assert runner.flush(20)
    assert results[-1].status is ScoreStatus.SCORED
    assert runner.stats() == RunnerStats(2, 1, 1, 0, 0, 0)


def test_a_scorer_made_after_the_child_started_is_scored_by_a_new_child(
    runner: ProcessRunner, tmp_path: Path, fast_refork: None
) -> None:
    results: list[ScoreResult] = []
    first = Evals(scorers=[pid_scorer(tmp_path / "a", id="a")], runner=runner)
    first.submit("q", "answer")
    assert runner.flush(20)
    old = runner.child_pid

    later = Evals(
        scorers=[pid_scorer(tmp_path / "b", id="b")], runner=runner, on_score=results.append
    )
    later.submit("q", "answer")
    assert runner.flush(20)
    assert [r.scorer_id for r in results] == ["b"]
    assert runner.child_pid != old
    assert (tmp_path / "b").read_text().split()[0] == str(runner.child_pid)
    # The first child finished and exited: no process is left behind.
    assert old is not None
    deadline = time.monotonic() + 10
    while Path(f"/proc/{old}").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not Path(f"/proc/{old}").exists()


def test_messages_that_do_not_pickle_are_read_here(runner: ProcessRunner) -> None:
    results: list[ScoreResult] = []
    evals = Evals(
        scorers=[create_faithfulness_scorer("local")], runner=runner, on_score=results.append
    )
    evals.submit("Where is my order?", (message for message in answered("Order A1 shipped.")))
    assert runner.flush(20)
    assert [r.score for r in results] == [1.0]


def test_a_full_queue_drops_and_counts(tmp_path: Path) -> None:
    dropped: list[str] = []
    runner = ProcessRunner(max_queue=2, on_drop=lambda job, reason: dropped.append(reason))
    try:
        evals = Evals(scorers=[pid_scorer(tmp_path / "log", seconds=0.3)], runner=runner)
        accepted = [evals.submit(f"q{n}", "answer") for n in range(5)]
        assert accepted == [True, True, False, False, False]
        assert dropped == ["queue_full"] * 3
        assert runner.flush(20)
        assert runner.stats() == RunnerStats(5, 2, 0, 3, 0, 0)
    finally:
        runner.shutdown(10)


def test_submit_after_shutdown_is_dropped(tmp_path: Path) -> None:
    runner = ProcessRunner()
    runner.shutdown(1)
    evals = Evals(scorers=[pid_scorer(tmp_path / "log")], runner=runner)
    assert evals.submit("q", "answer") is False
    assert runner.stats().dropped == 1


def test_a_bare_fork_of_the_parent_does_not_keep_the_scoring_process_alive(
    tmp_path: Path,
) -> None:
    runner = ProcessRunner()
    evals = Evals(scorers=[pid_scorer(tmp_path / "log")], runner=runner)
    evals.submit("q", "answer")
    assert runner.flush(20)
    scoring = runner.child_pid
    assert scoring is not None
    worker = os.fork()  # a pre-forking server's worker, say: it must not hold our pipes
    if worker == 0:
        time.sleep(5)
        os._exit(0)
    try:
        assert runner.shutdown(10)
        deadline = time.monotonic() + 3
        while Path(f"/proc/{scoring}").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not Path(f"/proc/{scoring}").exists()
    finally:
        os.kill(worker, signal.SIGKILL)
        os.waitpid(worker, 0)


SCRIPT = """
import os, signal, sys, time
from agentscore import Evals, ProcessRunner
from agentscore.scorers import create_scorer

log = sys.argv[1]

def analyze(params):
    time.sleep(0.3)
    with open(log, "a") as file:
        file.write(params.run.input[0].content + "\\n")
    return 1.0

runner = ProcessRunner()
evals = Evals(
    scorers=[create_scorer(id="slow", analyze=analyze, generate_score=lambda p: 1.0)],
    runner=runner,
    on_score=lambda result: print("scored", flush=True),
)
for n in range(3):
    evals.submit(f"q{n}", "answer")
while runner.child_pid is None:
    time.sleep(0.01)
print("child", runner.child_pid, flush=True)
if sys.argv[2] == "kill":
    time.sleep(0.1)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def run_script(log: Path, how: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), str(log), how],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "OTEL_SDK_DISABLED": "true"},
    )


def test_at_exit_the_parent_waits_for_its_runs(tmp_path: Path) -> None:
    log = tmp_path / "log"
    script = run_script(log, "exit")
    out, _ = script.communicate(timeout=60)
    assert script.returncode == 0
    assert out.count("scored") == 3
    assert sorted(log.read_text().split()) == ["q0", "q1", "q2"]


def test_a_parent_killed_outright_leaves_the_child_to_finish_and_exit(tmp_path: Path) -> None:
    log = tmp_path / "log"
    script = run_script(log, "kill")
    out, _ = script.communicate(timeout=60)
    assert script.returncode == -signal.SIGKILL
    child = int(out.split("child")[1].split()[0])
    deadline = time.monotonic() + 20
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{child}").exists()  # it saw its pipe end and exited
    assert sorted(log.read_text().split()) == ["q0", "q1", "q2"]


def test_options_are_checked_at_once() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        ProcessRunner(concurrency=0)
    with pytest.raises(ValueError, match="max_queue"):
        ProcessRunner(max_queue=0)


@pytest.mark.anyio
async def test_aflush_waits_without_blocking_the_loop(
    runner: ProcessRunner, tmp_path: Path
) -> None:
    evals = Evals(scorers=[pid_scorer(tmp_path / "log", seconds=0.2)], runner=runner)
    evals.submit("q", "answer")
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.01)

    async with anyio.create_task_group() as group:
        group.start_soon(tick)
        assert await runner.aflush(20)
        group.cancel_scope.cancel()
    assert ticks > 5
    assert runner.stats().scored == 1


def test_a_job_submitted_directly_is_scored(runner: ProcessRunner, tmp_path: Path) -> None:
    done: list[ScoreResult] = []
    job = ScoreJob(pid_scorer(tmp_path / "log"), ScorerRun(run_id="r1"), on_result=done.append)
    assert runner.submit(job)
    assert runner.flush(20)
    assert [(r.run_id, r.score) for r in done] == [("r1", 1.0)]


def test_a_child_whose_scoring_loop_hangs_is_killed_and_replaced(
    runner: ProcessRunner, monkeypatch: pytest.MonkeyPatch, fast_refork: None
) -> None:
    monkeypatch.setattr(process, "HEARTBEAT", 0.05)
    monkeypatch.setattr(process, "SILENCE_TIMEOUT", 0.5)

    async def analyze(params: StepParams) -> float:
        if params.run.input[0].content == "hang":
            time.sleep(60)  # noqa: ASYNC251 - blocks the child's loop on purpose
        return 1.0

    results: list[ScoreResult] = []
    scorer = create_scorer(id="hang", analyze=analyze, generate_score=lambda p: 1.0)
    evals = Evals(scorers=[scorer], runner=runner, on_score=results.append)
    evals.submit("hang", "answer")
    assert runner.flush(30)
    [failed] = results
    assert failed.error is not None and failed.error.type == "ScoringProcessExited"
    evals.submit("fine", "answer")
    assert runner.flush(30)
    assert results[-1].status is ScoreStatus.SCORED


def test_a_refused_fork_delays_runs_and_loses_none(
    runner: ProcessRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fast_refork: None
) -> None:
    real_fork = os.fork
    refused: list[int] = []

    def fork_once_refused() -> int:
        if not refused:
            refused.append(1)
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return real_fork()

    monkeypatch.setattr(os, "fork", fork_once_refused)
    evals = Evals(scorers=[pid_scorer(tmp_path / "log")], runner=runner)
    for n in range(3):
        evals.submit(f"q{n}", "answer")
    assert runner.flush(30)
    assert refused == [1]
    assert runner.stats() == RunnerStats(3, 3, 0, 0, 0, 0)


def test_flush_from_a_sink_raises_instead_of_waiting_on_itself(
    runner: ProcessRunner, tmp_path: Path
) -> None:
    raised: list[str] = []

    def sink(result: ScoreResult) -> None:
        try:
            runner.flush(1)
        except RuntimeError as exc:
            raised.append(str(exc))

    sink_on_loop = on_loop(sink)  # as an agent's own sink: on the loop, not a worker thread
    evals = Evals(scorers=[pid_scorer(tmp_path / "log")], runner=runner, on_score=sink_on_loop)
    evals.submit("q", "answer")
    assert runner.flush(30)
    assert raised == ["flush() from a sink would wait on itself"]


def test_a_megabyte_tool_result_and_an_empty_answer_cross_the_pipe(
    runner: ProcessRunner,
) -> None:
    results: list[ScoreResult] = []
    evals = Evals(
        scorers=[create_faithfulness_scorer("local")], runner=runner, on_score=results.append
    )
    big = dict(ORDER, notes="x" * 1_000_000)
    huge = [
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps(big)},
        {"role": "assistant", "content": "Order A1 shipped."},
    ]
    evals.submit("Where is my order?", huge)
    evals.submit("Where is my order?", answered(""))
    assert runner.flush(60)
    by_answer = {r.output[-1].content if r.output else None: r for r in results}
    assert by_answer["Order A1 shipped."].score == 1.0
    assert by_answer[""].status is not ScoreStatus.FAILED  # no claims: a documented result
    assert runner.stats() == RunnerStats(2, 2, 0, 0, 0, 0)


def test_the_parents_threads_give_way_and_the_scoring_process_never_pauses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every give_way on a thread that gives way pauses; the pauses are recorded by thread.
    monkeypatch.setattr(courtesy, "GIL_SLICE", 0.0)
    paused_on: set[str] = set()
    pause = courtesy._pause

    def recording_pause() -> float:
        paused_on.add(threading.current_thread().name)
        return pause()

    monkeypatch.setattr(courtesy, "_pause", recording_pause)
    alone = create_scorer(
        id="alone",
        analyze=lambda params: 0.0 if courtesy._host_present else 1.0,
        generate_score=lambda params: params.results["analyze_step_result"],
    )
    results: list[ScoreResult] = []
    runner = ProcessRunner()
    evals = Evals(scorers=[alone], runner=runner, on_score=results.append)
    for n in range(20):
        evals.submit(f"question {n}", answered("Order A1 shipped."))
    assert runner.flush(20)
    runner.shutdown(10)

    # The child has no host to make way for: its scoring ran with pauses switched off.
    assert [r.score for r in results] == [1.0] * 20
    # The parent's threads pickle and unpickle runs between pauses.
    assert {"agentscore-process-send", "agentscore-process-read"} <= paused_on


def test_a_scorer_that_cannot_report_its_own_failure_still_ends_its_run(
    runner: ProcessRunner,
) -> None:
    class Broken:
        """Not a scorer: running it and building its failure result both raise."""

        id = "broken"

    results: list[ScoreResult] = []
    runner.add_sink(results.append)
    run = ScorerRun(output="x")
    assert runner.submit(ScoreJob(Broken(), run))  # type: ignore[arg-type]
    assert runner.flush(20)  # not left pending until the child exits

    assert runner.stats() == RunnerStats(1, 0, 1, 0, 0, 0)
    [result] = results
    assert (result.scorer_id, result.status, result.run_id) == ("broken", "failed", run.run_id)


def test_a_run_the_child_cannot_read_fails_alone(runner: ProcessRunner) -> None:
    results: list[ScoreResult] = []
    evals = Evals(
        scorers=[create_faithfulness_scorer("local")], runner=runner, on_score=results.append
    )
    evals.submit("Where is my order?", answered("Order A1 shipped."))
    assert runner.flush(20)  # the child has started
    child = runner.child_pid

    # A class made after the fork pickles here by name; the child has no such name.
    late = type("MadeAfterTheFork", (dict,), {"__module__": __name__})
    globals()["MadeAfterTheFork"] = late
    try:
        unreadable = answered("Order A1 shipped.")
        unreadable[2] = late(role="assistant", content="Order A1 shipped.")
        evals.submit("Where is my order?", unreadable)
        evals.submit("Where is my order?", answered("Order A1 was cancelled."))  # same batch
        assert runner.flush(20)
    finally:
        del globals()["MadeAfterTheFork"]

    assert runner.child_pid == child  # nothing killed it
    assert runner.stats() == RunnerStats(3, 2, 1, 0, 0, 0)
    failed = [r for r in results if r.status is ScoreStatus.FAILED]
    assert [r.error.type for r in failed if r.error] == ["ScoringMessageUnreadable"]
    assert "MadeAfterTheFork" in (failed[0].error.message if failed[0].error else "")
    assert sorted(r.score for r in results if r.score is not None) == [0.0, 1.0]


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message either")


def _explode_in_the_child() -> None:
    raise Unprintable()


class ExplodesWhenRead(dict[str, str]):
    """Pickles here; reading it back (in the child) raises an exception that cannot be
    printed."""

    def __reduce__(self) -> Any:
        return _explode_in_the_child, ()


def test_a_run_whose_reading_raises_the_unprintable_fails_alone(runner: ProcessRunner) -> None:
    results: list[ScoreResult] = []
    evals = Evals(
        scorers=[create_faithfulness_scorer("local")], runner=runner, on_score=results.append
    )
    strange = answered("Order A1 shipped.")
    strange[2] = ExplodesWhenRead(role="assistant", content="Order A1 shipped.")
    evals.submit("Where is my order?", strange)
    evals.submit("Where is my order?", answered("Order A1 shipped."))
    assert runner.flush(20)

    assert runner.stats() == RunnerStats(2, 1, 1, 0, 0, 0)
    [failed] = [r for r in results if r.status is ScoreStatus.FAILED]
    assert failed.error is not None
    assert failed.error.type == "ScoringMessageUnreadable"
    assert "Unprintable: (its message could not be read)" in failed.error.message
    assert [r.score for r in results if r.score is not None] == [1.0]
