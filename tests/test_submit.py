"""Evals.submit and @evals.observe: the public way in for any agent, from sync, asyncio and trio."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from agentscore import Evals, Runner, ScoreResult, Telemetry
from agentscore.errors import ConfigurationError
from agentscore.judges import LocalJudge
from agentscore.run import ScorerRun
from agentscore.scorers import create_faithfulness_scorer
from tests.support.otel import Otel, span_context

ORDER = {"order": "1042", "status": "shipped", "carrier": "UPS"}
QUESTION = "Where is order 1042?"
ANSWER = "Order 1042 shipped with UPS."
# A hand-written tool loop's messages, in the OpenAI Chat Completions shape.
LOOP_OUTPUT: list[dict[str, Any]] = [
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
    {"role": "tool", "tool_call_id": "c1", "content": json.dumps(ORDER)},
    {"role": "assistant", "content": ANSWER},
]


def make_evals(**options: Any) -> tuple[Evals, Runner, list[ScoreResult]]:
    runner = Runner()
    scores: list[ScoreResult] = []
    evals = Evals(
        scorers=[create_faithfulness_scorer(LocalJudge())],
        runner=runner,
        on_score=scores.append,
        **options,
    )
    return evals, runner, scores


def test_submit_from_sync_code_parents_the_evaluation_to_the_current_span(otel: Otel) -> None:
    evals, runner, scores = make_evals()
    tracer = trace.get_tracer("app")
    with tracer.start_as_current_span("my agent") as span:
        assert evals.submit(QUESTION, LOOP_OUTPUT, agent_name="support") is True
    assert runner.flush(10)
    [score] = scores
    assert score.score == 1.0
    assert score.agent_name == "support"
    context = span.get_span_context()
    assert score.trace_id == f"{context.trace_id:032x}"
    assert score.span_id == f"{context.span_id:016x}"
    [evaluation] = [s for s in otel.spans.get_finished_spans() if s.name.startswith("evaluation")]
    assert evaluation.parent is not None
    assert evaluation.parent.span_id == context.span_id


@pytest.mark.anyio
async def test_submit_from_async_code_with_an_explicit_span_context() -> None:
    evals, runner, scores = make_evals()
    context = SpanContext(trace_id=0x1234, span_id=0x99, is_remote=False, trace_flags=TraceFlags(1))
    assert evals.submit(QUESTION, LOOP_OUTPUT, span=context) is True
    assert evals.submit(QUESTION, ANSWER, span=NonRecordingSpan(context)) is True
    assert await runner.aflush(10)
    assert len(scores) == 2
    assert {score.span_id for score in scores} == {f"{0x99:016x}"}


def test_submit_from_trio() -> None:
    evals, runner, scores = make_evals()

    async def main() -> None:
        assert evals.submit(QUESTION, LOOP_OUTPUT) is True
        assert await runner.aflush(10)

    trio.run(main)
    assert [score.score for score in scores] == [1.0]


def test_submit_samples_on_the_trace_id_like_the_agent() -> None:
    evals, runner, scores = make_evals(sampling=0.5)
    below = SpanContext(trace_id=1, span_id=1, is_remote=False)  # low 64 bits near 0: sampled
    above = SpanContext(trace_id=(1 << 64) - 1, span_id=1, is_remote=False)
    assert evals.submit(QUESTION, ANSWER, span=below) is True
    assert evals.submit(QUESTION, ANSWER, span=above) is False
    assert runner.flush(10)
    assert len(scores) == 1


def test_submit_applies_the_filter_and_never_raises() -> None:
    def only_support(run: ScorerRun) -> bool:
        return run.agent_name == "support"

    evals, runner, scores = make_evals(filter=only_support)
    assert evals.submit(QUESTION, ANSWER, agent_name="billing") is False
    assert evals.submit(QUESTION, ANSWER, agent_name="support") is True

    def broken(run: ScorerRun) -> bool:
        raise RuntimeError("filter bug")

    broken_evals, _, _ = make_evals(filter=broken)
    assert broken_evals.submit(QUESTION, ANSWER) is False
    assert runner.flush(10)
    assert len(scores) == 1


def test_unreadable_output_is_a_failed_result_not_a_score_of_nothing() -> None:
    def rejects_everything(run: ScorerRun) -> bool:
        return False

    # Even a filter that would veto it: an unreadable run must surface.
    evals, runner, scores = make_evals(filter=rejects_everything)
    assert evals.submit(QUESTION, [{"type": "hologram_call", "id": "x"}]) is True
    assert runner.flush(10)
    [score] = scores
    assert score.status == "failed"
    assert score.error is not None
    assert score.error.type == "UnreadableMessageError"
    assert "hologram_call" in score.error.message


@pytest.mark.parametrize("with_filter", [False, True])
def test_output_that_fails_while_read_is_a_failed_result_with_its_own_error(
    with_filter: bool,
) -> None:
    def answer() -> Any:
        yield {"role": "assistant", "content": ANSWER}
        raise ConnectionResetError("stream cut")

    options = {"filter": lambda run: True} if with_filter else {}
    evals, runner, scores = make_evals(**options)
    assert evals.submit(QUESTION, answer()) is True
    assert runner.flush(10)
    [score] = scores
    assert score.status == "failed"
    assert score.error is not None
    assert score.error.type == "ConnectionResetError"


def test_submit_returns_false_once_the_runner_is_closed() -> None:
    evals, runner, _ = make_evals()
    runner.shutdown(1)
    assert evals.submit(QUESTION, ANSWER) is False
    assert runner.stats().dropped == 1


def test_observe_a_sync_function_scores_each_call_under_its_own_span(otel: Otel) -> None:
    evals, runner, scores = make_evals(telemetry=Telemetry())

    @evals.observe
    def answer(question: str) -> list[dict[str, Any]]:
        return LOOP_OUTPUT

    assert answer(QUESTION) == LOOP_OUTPUT
    assert runner.flush(10)
    [score] = scores
    assert score.score == 1.0
    assert score.input[0].content == QUESTION
    assert score.agent_name == "answer"
    [agent_span] = [s for s in otel.spans.get_finished_spans() if s.name == "invoke_agent answer"]
    assert score.span_id == f"{span_context(agent_span).span_id:016x}"


@pytest.mark.anyio
async def test_observe_an_async_function_with_mappings() -> None:
    evals, runner, scores = make_evals()

    @evals.observe(
        name="support", input=lambda args: args["request"]["text"], output=lambda r: r[1]
    )
    async def handle(user_id: int, request: dict[str, str]) -> tuple[int, str]:
        return 200, "Order 1042 shipped with FedEx."

    context = json.dumps(ORDER)
    assert await handle(7, {"text": f"{QUESTION} {context}"}) == (
        200,
        "Order 1042 shipped with FedEx.",
    )
    assert await runner.aflush(10)
    [score] = scores
    assert score.agent_name == "support"
    assert score.output[0].content == "Order 1042 shipped with FedEx."


def test_observe_does_not_score_a_call_that_raises_and_reraises_it() -> None:
    evals, runner, scores = make_evals()

    @evals.observe
    def answer(question: str) -> str:
        raise KeyError("no such order")

    with pytest.raises(KeyError):
        answer(QUESTION)
    assert runner.flush(10)
    assert scores == []


def test_observe_rejects_generators() -> None:
    evals, _, _ = make_evals()

    def stream(question: str) -> Any:
        yield "x"

    with pytest.raises(ConfigurationError, match=r"evals\.submit"):
        evals.observe(stream)


def test_a_list_the_caller_keeps_appending_to_is_scored_as_it_was_submitted() -> None:
    import threading

    from agentscore._runtime.loop import background_loop

    evals, runner, scores = make_evals()
    conversation = list(LOOP_OUTPUT)
    gate = threading.Event()
    background_loop.call_soon(gate.wait)  # the scoring loop reads only after the caller moved on
    try:
        assert evals.submit(QUESTION, conversation) is True
        conversation.append({"role": "user", "content": "And order 2001?"})
        conversation.append({"role": "assistant", "content": "Order 2001 was cancelled."})
    finally:
        gate.set()
    assert runner.flush(10)
    [score] = scores
    assert score.output[-1].content == ANSWER
    assert score.score == 1.0


def test_a_huge_answer_ends_as_a_failed_result_not_a_stall() -> None:
    evals, runner, scores = make_evals()
    assert evals.submit(QUESTION, "Order 1042 shipped. " * 10_000) is True
    assert runner.flush(30)
    [score] = scores
    assert score.status == "failed"
    assert score.error is not None
    assert score.error.type == "InputTooLargeError"


def test_submit_from_many_threads_accounts_for_every_run() -> None:
    from concurrent.futures import ThreadPoolExecutor

    evals, runner, scores = make_evals()
    with ThreadPoolExecutor(max_workers=16) as pool:
        queued = list(pool.map(lambda _: evals.submit(QUESTION, LOOP_OUTPUT), range(400)))
    assert all(queued)
    assert runner.flush(60)
    stats = runner.stats()
    assert stats.submitted == stats.scored + stats.failed + stats.dropped + stats.pending == 400
    assert len(scores) == 400
    assert {score.score for score in scores} == {1.0}


def test_a_run_built_unchecked_sets_every_field_itself() -> None:
    # A field left to model_construct's default costs an inspect.signature of its default
    # factory per run, on the caller's path (Evals.submit); a new field must get a default in
    # ScorerRun.unchecked.
    run = ScorerRun.unchecked(input=[], agent_name="support")
    assert run.model_fields_set == set(ScorerRun.model_fields)
    assert run.agent_name == "support" and run.tools == [] and run.documents == []
    assert len(run.run_id) == 32
    assert ScorerRun.unchecked().run_id != ScorerRun.unchecked().run_id
    assert ScorerRun.unchecked(run_id="r1").run_id == "r1"
