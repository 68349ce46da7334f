"""The first submit never waits for the background loop to start, and loses nothing meanwhile."""

from __future__ import annotations

import contextvars
import json
import sys
import threading
from types import FrameType
from typing import Any

import anyio
import pytest
import trio
from structlog.testing import capture_logs

from agentscore import Evals, Runner, ScoreResult, ScoreStatus
from agentscore._runtime.loop import BackgroundLoop, _Start
from agentscore._runtime.threads import start_daemon_thread
from agentscore.judges import LocalJudge
from agentscore.scorers import create_faithfulness_scorer

QUESTION = "Where is order 1042?"
OUTPUT: list[dict[str, Any]] = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "lookup_order", "arguments": '{"order_id": "1042"}'},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "c1",
        "content": json.dumps({"order": "1042", "status": "shipped"}),
    },
    {"role": "assistant", "content": "Order 1042 shipped."},
]


CALLERS: contextvars.ContextVar[str] = contextvars.ContextVar("callers", default="unset")


class GatedLoop(BackgroundLoop):
    """A loop whose thread waits for `gate` before it starts its event loop."""

    def __init__(self, gate: threading.Event) -> None:
        self.gate = gate
        self.waiting = threading.Event()
        super().__init__("agentscore-test-gated", courteous=True)

    def _run(self, start: _Start) -> None:
        self.waiting.set()
        self.gate.wait()
        super()._run(start)


class FailingLoop(BackgroundLoop):
    """A loop whose first `failures` starts fail inside its thread, as a broken event loop
    would; `failed` is set once they have."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.starts = 0
        self.failed = threading.Event()
        super().__init__("agentscore-test-failing")

    def _run(self, start: _Start) -> None:
        super()._run(start)
        if self.starts >= self.failures:
            self.failed.set()

    async def _main(self, start: _Start) -> None:
        self.starts += 1
        if self.starts <= self.failures:
            raise OSError("no event loop for you")
        await super()._main(start)


def evals_on(loop: BackgroundLoop) -> tuple[Evals, Runner, list[ScoreResult]]:
    runner = Runner(loop=loop)
    scores: list[ScoreResult] = []
    scorer = create_faithfulness_scorer(LocalJudge())
    return Evals(scorers=[scorer], runner=runner, on_score=scores.append), runner, scores


def assert_identity(runner: Runner) -> None:
    stats = runner.stats()
    assert stats.submitted == stats.scored + stats.failed + stats.dropped + stats.pending


def test_the_first_submit_returns_while_the_loop_is_still_starting() -> None:
    gate = threading.Event()
    loop = GatedLoop(gate)
    evals, runner, scores = evals_on(loop)
    try:
        assert evals.submit(QUESTION, OUTPUT) is True
        assert loop.waiting.wait(10)  # the thread is up, its event loop held back
        assert evals.submit(QUESTION, OUTPUT) is True
        stats = runner.stats()
        assert (stats.submitted, stats.pending, stats.scored) == (2, 2, 0)
        assert_identity(runner)
        assert scores == []
    finally:
        gate.set()
    assert runner.flush(10)
    assert [score.status for score in scores] == [ScoreStatus.SCORED] * 2
    assert [score.score for score in scores] == [1.0, 1.0]
    stats = runner.stats()
    assert (stats.submitted, stats.scored, stats.pending) == (2, 2, 0)


def test_a_shutdown_during_the_start_still_scores_what_was_queued() -> None:
    gate = threading.Event()
    loop = GatedLoop(gate)
    evals, runner, scores = evals_on(loop)
    assert evals.submit(QUESTION, OUTPUT) is True
    assert loop.waiting.wait(10)
    finished: list[bool] = []
    # The exit flush's path: shutdown waits for the queued run, which the loop scores once up.
    shutting_down = threading.Thread(target=lambda: finished.append(runner.shutdown(10)))
    shutting_down.start()
    assert evals.submit(QUESTION, OUTPUT) is False  # closed: dropped, and counted
    gate.set()
    shutting_down.join()
    assert finished == [True]
    assert [score.score for score in scores] == [1.0]
    stats = runner.stats()
    assert (stats.submitted, stats.scored, stats.dropped, stats.pending) == (2, 1, 1, 0)


def test_trio_and_asyncio_callers_submit_before_the_loop_is_up() -> None:
    gate = threading.Event()
    loop = GatedLoop(gate)
    runner = Runner(loop=loop)
    seen: list[str] = []  # what the caller's context variable reads in the sink

    def on_score(result: ScoreResult) -> None:
        if result.status is ScoreStatus.SCORED:
            seen.append(CALLERS.get())

    scorer = create_faithfulness_scorer(LocalJudge())
    evals = Evals(scorers=[scorer], runner=runner, on_score=on_score)

    async def submit() -> bool:
        CALLERS.set("the caller's")  # must not reach the scoring loop's tasks
        return evals.submit(QUESTION, OUTPUT)

    assert trio.run(submit) is True  # the first submit: it starts the loop from trio
    assert anyio.run(submit, backend="asyncio") is True
    assert runner.stats().pending == 2
    gate.set()
    assert runner.flush(10)
    assert seen == ["unset", "unset"]


def test_a_blocking_call_is_told_when_the_loop_failed_to_start() -> None:
    loop = FailingLoop(failures=1_000)
    with capture_logs() as logs, pytest.raises(RuntimeError, match="failed to start") as raised:
        loop.call(anyio.sleep, 0)
    assert isinstance(raised.value.__cause__, OSError)
    [failure] = [log for log in logs if log["event"] == "background_loop_failed"]
    assert failure["error_type"] == "OSError"
    assert "no event loop" not in repr(failure)  # the type only, never the message


def test_a_loop_that_failed_to_start_runs_the_queued_work_on_its_next_start() -> None:
    loop = FailingLoop(failures=1)
    evals, runner, scores = evals_on(loop)
    with capture_logs() as logs:
        assert evals.submit(QUESTION, OUTPUT) is True
        assert loop.failed.wait(10)
    assert [log["error_type"] for log in logs if log["event"] == "background_loop_failed"] == [
        "OSError"
    ]
    stats = runner.stats()
    assert (stats.submitted, stats.pending, stats.scored) == (1, 1, 0)
    # The exit flush's shutdown uses the loop: it starts again and runs the dispatcher that
    # the first submit handed over.
    assert runner.shutdown(10)
    assert loop.starts == 2
    assert [score.score for score in scores] == [1.0]
    assert_identity(runner)
    assert runner.stats().scored == 1


def test_a_thread_started_without_waiting_is_named_listed_and_traced() -> None:
    seen: dict[str, object] = {}
    done = threading.Event()

    def hook(frame: FrameType, event: str, arg: object) -> None:
        return None

    def target() -> None:
        thread = threading.current_thread()
        seen.update(name=thread.name, daemon=thread.daemon, ident=threading.get_ident())
        seen.update(listed=thread in threading.enumerate(), traced=sys.gettrace() is hook)
        done.set()

    threading.settrace(hook)
    try:
        ident = start_daemon_thread(target, "agentscore-test-thread")
    finally:
        threading.settrace(None)
    assert done.wait(10)
    assert seen == {
        "name": "agentscore-test-thread",
        "daemon": True,
        "ident": ident,
        "listed": True,
        "traced": True,
    }
