"""User callbacks run off the shared scoring loop, bounded by the scorer's timeout.

Each blocking callback here waits on a `threading.Event` the test opens only at the end, so
whatever else finished meanwhile provably did not wait for it (ordering, not timing).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from structlog.testing import capture_logs

from agentscore import Agent
from agentscore._runtime import callbacks as _callbacks
from agentscore._runtime.loop import background_loop
from agentscore.context import ContextParams
from agentscore.pipeline.runner import Runner, ScoreJob
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.run import ScorerRun
from agentscore.scorers import StepParams, create_hallucination_scorer, create_scorer
from agentscore.testing import ScriptedEndpoint, chat_completion

RUN = ScorerRun(output="Order 1042 shipped.")
BLOCK_LIMIT = 30.0  # a blocked callback gives up after this, so a broken fix fails, not hangs


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # frees the abandoned worker threads


def test_blocking_get_context_times_out_while_another_scorer_finishes(
    gate: threading.Event,
) -> None:
    calls: list[str] = []

    def slow_context(params: ContextParams) -> list[str]:
        calls.append("get_context")
        gate.wait(BLOCK_LIMIT)
        return ["Order 1042 shipped."]

    slow = create_hallucination_scorer("local", get_context=slow_context, timeout=0.5)
    quick = create_hallucination_scorer("local", context=["Order 1042 shipped."])
    results: dict[str, ScoreResult] = {}
    runner = Runner(concurrency=4)
    runner.submit(ScoreJob(slow, RUN, on_result=lambda r: results.setdefault("slow", r)))
    runner.submit(ScoreJob(quick, RUN, on_result=lambda r: results.setdefault("quick", r)))

    assert runner.flush(timeout=BLOCK_LIMIT / 2)
    assert not gate.is_set()  # both runs ended while get_context was still blocked
    assert calls == ["get_context"]
    assert results["quick"].status is ScoreStatus.SCORED and results["quick"].score == 0.0
    assert results["slow"].status is ScoreStatus.FAILED
    assert results["slow"].error is not None
    assert results["slow"].error.type == "ScorerTimeoutError"
    stats = runner.stats()
    assert (stats.submitted, stats.scored, stats.failed, stats.pending) == (2, 1, 1, 0)


def test_blocking_sync_step_of_a_custom_scorer_is_bounded_by_its_timeout(
    gate: threading.Event,
) -> None:
    def preprocess(params: StepParams) -> str:
        gate.wait(BLOCK_LIMIT)
        return "late"

    scorer = create_scorer(
        id="slow", preprocess=preprocess, generate_score=lambda p: 1.0, timeout=0.3
    )
    result = scorer.run_sync(RUN)
    assert not gate.is_set()
    assert result.error is not None and result.error.type == "ScorerTimeoutError"


def test_blocking_sync_sink_is_cut_at_sink_timeout_and_others_still_get_results(
    gate: threading.Event,
) -> None:
    delivered: list[str] = []

    def stuck_sink(result: ScoreResult) -> None:
        gate.wait(BLOCK_LIMIT)

    runner = Runner(sink_timeout=0.3, on_score=stuck_sink)
    runner.add_sink(lambda result: delivered.append(result.run_id))
    scorer = create_hallucination_scorer("local", context=["Order 1042 shipped."])
    with capture_logs() as logs:
        for index in range(3):
            runner.submit(ScoreJob(scorer, RUN.model_copy(update={"run_id": f"r{index}"})))
        assert runner.flush(timeout=BLOCK_LIMIT / 2)
    assert not gate.is_set()
    assert sorted(delivered) == ["r0", "r1", "r2"]
    failures = [e for e in logs if e["event"] == "score_sink_failed"]
    assert [e["error_type"] for e in failures] == ["TimeoutError"] * 3


def test_flush_from_a_sync_sink_raises_instead_of_waiting_on_itself() -> None:
    errors: list[str] = []

    def flushing_sink(result: ScoreResult) -> None:
        try:
            runner.flush(timeout=5)
        except RuntimeError as exc:
            errors.append(str(exc))

    runner = Runner(on_score=flushing_sink)
    runner.submit(ScoreJob(create_hallucination_scorer("local", context=["x"]), RUN))
    assert runner.flush(timeout=10)
    assert errors == ["flush() from the background loop would wait on itself"]


def test_first_submit_to_a_new_runner_does_not_wait_for_a_busy_loop() -> None:
    order: list[str] = []
    loop_released = threading.Event()

    def hold_the_loop() -> None:
        loop_released.wait(BLOCK_LIMIT)
        order.append("loop free")

    background_loop.call_soon(hold_the_loop)
    runner = Runner()
    accepted = runner.submit(ScoreJob(create_hallucination_scorer("local", context=["x"]), RUN))
    order.append("submit returned")
    loop_released.set()
    assert runner.flush(timeout=10)
    assert accepted and order == ["submit returned", "loop free"]
    assert runner.stats().scored == 1


def test_slow_filter_and_on_score_do_not_hold_the_shared_generate_sync_loop(
    gate: threading.Event,
) -> None:
    order: list[str] = []

    def slow_filter(run: ScorerRun) -> bool:
        order.append(f"filter {run.request_context['who']}")
        if run.request_context["who"] == "first":
            gate.wait(BLOCK_LIMIT)
        return True

    model = ScriptedEndpoint(lambda body: chat_completion("Order 1042 shipped."))
    scorer = create_hallucination_scorer("local", context=["Order 1042 shipped."])
    runner = Runner()
    agent = Agent(
        "support",
        "m",
        client=model.client(),
        evals={"scorers": [scorer], "filter": slow_filter, "runner": runner},
    )
    first = threading.Thread(
        target=lambda: agent.generate_sync("Where?", request_context={"who": "first"})
    )
    first.start()
    while not order:  # the first call is now inside its filter
        threading.Event().wait(0.01)
    result = agent.generate_sync("Where?", request_context={"who": "second"})
    order.append("second returned")
    gate.set()
    first.join(BLOCK_LIMIT)
    assert result.text == "Order 1042 shipped."
    assert order == ["filter first", "filter second", "second returned"]
    assert runner.flush(timeout=10) and runner.stats().scored == 2


def test_callbacks_that_never_return_cannot_pile_up_threads(
    gate: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_callbacks, "MAX_ABANDONED_CALLS", 3)
    calls: list[int] = []

    def hung_context(params: ContextParams) -> list[str]:
        calls.append(1)
        gate.wait(BLOCK_LIMIT)
        return ["Order 1042 shipped."]

    hung = create_hallucination_scorer("local", get_context=hung_context, timeout=0.3)
    results: list[ScoreResult] = []
    concurrency = 2
    runner = Runner(concurrency=concurrency)
    for _ in range(10):
        runner.submit(ScoreJob(hung, RUN, on_result=results.append))
    assert runner.flush(timeout=BLOCK_LIMIT / 2)
    assert not gate.is_set()  # every run ended while the callbacks still hung

    # Runs start while fewer than 3 calls are abandoned: at most 3 + one wave of 2 threads.
    started = len(calls)
    assert 3 <= started <= 3 + concurrency - 1
    assert _callbacks.abandoned_callbacks() == started
    errors = [r.error.type for r in results if r.error is not None]
    assert len(results) == 10  # the sink (itself a sync callback) got every result
    assert errors.count("ScorerTimeoutError") == started
    assert errors.count("CallbackBacklogError") == 10 - started  # refused: no thread

    gate.set()  # the hung calls return, and the callback is accepted again
    deadline = time.monotonic() + 10
    while _callbacks.abandoned_callbacks() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _callbacks.abandoned_callbacks() == 0
    assert hung.run_sync(RUN).status is ScoreStatus.SCORED
