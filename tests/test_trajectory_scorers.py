"""The deterministic trace scorers (issue 38): trajectory against expected steps, and tool
efficiency. Runs are real: traces recorded with the OTel SDK and read by `trace_run`, or a
generation's own messages; no judge is asked, even when one is at hand."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

import agentscore.scorers
from agentscore.errors import ConfigurationError
from agentscore.judges import OpenAIJudge
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.run import ScorerRun, TraceRun
from agentscore.scorers import (
    ExpectedStep,
    Scorer,
    create_tool_efficiency_scorer,
    create_trajectory_scorer,
)
from agentscore.spans.records import SpanRecord
from agentscore.spans.trajectory import trace_run
from agentscore.testing import ScriptedEndpoint

pytestmark = pytest.mark.anyio

# A call: the tool, its arguments (an object, or raw text as the model wrote it), and the
# error it failed with (None: it succeeded).
Call = tuple[str, Any] | tuple[str, Any, str | None]
Build = Callable[..., ScorerRun]

USER = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Refund order 7"}]}])
ANSWER = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Refunded."}]}])
LOOKUP: Call = ("lookup_order", {"order_id": "7"})
REFUND: Call = ("refund_order", {"order_id": "7", "amount": 20})
NOTIFY: Call = ("notify_customer", {"order_id": "7", "channel": {"kind": "email", "to": "a@b.c"}})
EXPECTED: list[Any] = [
    "lookup_order",
    {"name": "refund_order", "arguments": {"order_id": "7"}},
    "notify_customer",
]


def _arguments(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def traced(*calls: Call) -> TraceRun:
    """A trace recorded with the OTel SDK: an agent span, a model call per tool call (GenAI
    conventions), each tool span with its arguments, its result or its error status."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"}
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.input.messages": USER,
        "gen_ai.output.messages": ANSWER,
    }
    with tracer.start_as_current_span("invoke_agent support", attributes=agent):
        for number, (name, arguments, *failure) in enumerate(calls):
            with tracer.start_as_current_span("chat gpt-test", attributes=chat):
                pass
            error = failure[0] if failure else None
            tool: dict[str, str] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": f"c{number}",
            }
            if arguments is not None:
                tool["gen_ai.tool.call.arguments"] = _arguments(arguments)
            if error is None:
                tool["gen_ai.tool.call.result"] = "ok"
            with tracer.start_as_current_span(f"execute_tool {name}", attributes=tool) as span:
                if error is not None:
                    span.set_status(Status(StatusCode.ERROR, error))
        with tracer.start_as_current_span("chat gpt-test", attributes=chat):
            pass
    run = trace_run([SpanRecord.from_readable(s) for s in exporter.get_finished_spans()])
    assert [step.name for step in run.tool_steps] == [call[0] for call in calls]
    return run


def generation(*calls: Call) -> ScorerRun:
    """A plain generation whose messages tell the calls (each in its own assistant turn)."""
    output: list[dict[str, Any]] = []
    for number, (name, arguments, *_) in enumerate(calls):
        call = {"id": f"c{number}", "type": "function",
                "function": {"name": name, "arguments": _arguments(arguments)}}  # fmt: skip
        output.append({"role": "assistant", "content": None, "tool_calls": [call]})
        output.append({"role": "tool", "tool_call_id": f"c{number}", "content": "ok"})
    output.append({"role": "assistant", "content": "Refunded."})
    return ScorerRun(input="Refund order 7", output=output)


BUILDS = pytest.mark.parametrize("build", [traced, generation], ids=["trace", "generation"])


def score(scorer: Scorer, run: ScorerRun) -> ScoreResult:
    result = scorer.run_sync(run)
    assert result.status is ScoreStatus.SCORED, result.error
    return result


def reason_of(result: ScoreResult) -> str:
    assert result.reason is not None
    return result.reason


# --- both scorers on one run ---------------------------------------------------------------


@BUILDS
def test_a_clean_run_passes_both(build: Build) -> None:
    run = build(LOOKUP, REFUND, NOTIFY)
    trajectory = score(create_trajectory_scorer(EXPECTED), run)
    efficiency = score(create_tool_efficiency_scorer(max_steps=3), run)

    assert (trajectory.score, trajectory.passed) == (1.0, True)
    assert reason_of(trajectory) == "The score is 1. 3 of 3 expected steps made in order."
    assert (efficiency.score, efficiency.passed) == (1.0, True)
    assert reason_of(efficiency) == (
        "The score is 1. 3 tool calls: no repeated call, loop, unrecovered error or call "
        "over budget."
    )
    assert trajectory.preprocess_step_result == {
        "order": "in_order",
        "expected": ["lookup_order", "refund_order", "notify_customer"],
        "calls": ["lookup_order", "refund_order", "notify_customer"],
        "matched": [[1, 1], [2, 2], [3, 3]],
        "faults": [],
    }


@BUILDS
def test_a_skipped_tool_fails_naming_it(build: Build) -> None:
    result = score(create_trajectory_scorer(EXPECTED), build(LOOKUP, NOTIFY))

    assert (result.score, result.passed) == (0.67, False)
    assert reason_of(result) == (
        "The score is 0.67. 2 of 3 expected steps made in order: refund_order never called."
    )


@BUILDS
def test_calls_out_of_order_fail_naming_the_steps(build: Build) -> None:
    scorer = create_trajectory_scorer(EXPECTED)

    early = score(scorer, build(NOTIFY, LOOKUP, REFUND))
    late = score(scorer, build(REFUND, NOTIFY, LOOKUP))

    assert (early.score, early.passed) == (0.67, False)
    assert reason_of(early).endswith(
        "notify_customer called out of order: step 3 before step 1 (lookup_order)."
    )
    assert reason_of(late).endswith(
        "lookup_order called out of order: step 1 after step 3 (notify_customer)."
    )


@BUILDS
def test_a_call_repeated_four_times_fails_both(build: Build) -> None:
    run = build(LOOKUP, LOOKUP, LOOKUP, LOOKUP, REFUND, NOTIFY)

    trajectory = score(create_trajectory_scorer(EXPECTED, order="strict"), run)
    efficiency = score(create_tool_efficiency_scorer(), run)

    assert trajectory.passed is False
    assert trajectory.score == 0.5  # 3 steps matched in sequence / 6 calls
    assert reason_of(trajectory).endswith(": expected refund_order at step 2, got lookup_order.")
    assert (efficiency.score, efficiency.passed) == (0.75, False)
    assert reason_of(efficiency) == (
        "The score is 0.75. 6 tool calls, 1 problem: lookup_order called 4 times with the "
        "same arguments."
    )
    assert efficiency.preprocess_step_result == {
        "calls": 6,
        "problems": [
            {
                "kind": "repeat",
                "message": "lookup_order called 4 times with the same arguments",
                "calls": [1, 2, 3, 4],
            }
        ],
    }


# --- trajectory: orders ---------------------------------------------------------------------

EXTRA: Call = ("search_faq", {"q": "refunds"})
ORDER_CASES = {
    # name: (calls, {order: score})
    "exact": (
        [LOOKUP, REFUND, NOTIFY],
        {"strict": 1.0, "in_order": 1.0, "any_order": 1.0, "subset": 1.0},
    ),
    "an extra call between": (
        [LOOKUP, EXTRA, REFUND, NOTIFY],
        {"strict": 0.75, "in_order": 1.0, "any_order": 1.0, "subset": 0.75},
    ),
    "swapped": (
        [LOOKUP, NOTIFY, REFUND],
        {"strict": 0.67, "in_order": 0.67, "any_order": 1.0, "subset": 1.0},
    ),
    "one missing": (
        [LOOKUP, REFUND],
        {"strict": 0.67, "in_order": 0.67, "any_order": 0.67, "subset": 1.0},
    ),
    "none": ([], {"strict": 0.0, "in_order": 0.0, "any_order": 0.0, "subset": 1.0}),
}


@pytest.mark.parametrize("case", ORDER_CASES)
def test_each_order_mode_scores_the_share_it_defines(case: str) -> None:
    calls, expected_scores = ORDER_CASES[case]
    run = traced(*calls)
    for order, expected_score in expected_scores.items():
        result = score(create_trajectory_scorer(EXPECTED, order=order), run)  # type: ignore[arg-type]
        assert (order, result.score) == (order, expected_score)
        assert result.passed is (expected_score == 1.0)


def test_each_order_mode_names_its_fault() -> None:
    def reason(order: str, *calls: Call) -> str:
        result = score(create_trajectory_scorer(EXPECTED, order=order), traced(*calls))  # type: ignore[arg-type]
        return reason_of(result)

    assert reason("strict", LOOKUP, EXTRA, REFUND, NOTIFY) == (
        "The score is 0.75. 3 of 3 expected steps matched in sequence by 4 tool calls: "
        "expected refund_order at step 2, got search_faq."
    )
    assert reason("strict", LOOKUP, REFUND).endswith(
        ": expected notify_customer at step 3, the run made only 2 calls."
    )
    assert reason("strict", LOOKUP, REFUND, NOTIFY, EXTRA).endswith(
        ": unexpected search_faq at step 4: 3 steps expected."
    )
    assert reason("any_order", NOTIFY, LOOKUP) == (
        "The score is 0.67. 2 of 3 expected steps made: refund_order never called."
    )
    assert reason("subset", LOOKUP, EXTRA, ("refund_order", {"order_id": "8"})) == (
        "The score is 0.33. 1 of 3 tool calls among the expected steps: unexpected "
        'search_faq at call 2; refund_order at call 3 with unexpected arguments: {"order_id": '
        '"8"}.'
    )


def test_strict_and_subset_with_nothing_expected_forbid_every_call() -> None:
    for order in ("strict", "subset"):
        scorer = create_trajectory_scorer([], order=order)
        assert score(scorer, traced()).score == 1.0
        refused = score(scorer, traced(EXTRA))
        assert (refused.score, refused.passed) == (0.0, False)
    assert reason_of(refused).endswith(": unexpected search_faq at call 1.")


def test_any_order_finds_the_largest_matching() -> None:
    """A bare-name step must not take the only call a step with arguments matches."""
    scorer = create_trajectory_scorer(
        ["lookup_order", {"name": "lookup_order", "arguments": {"order_id": "7"}}],
        order="any_order",
    )
    result = score(scorer, traced(LOOKUP, ("lookup_order", {"order_id": "8"})))
    assert result.score == 1.0
    assert result.preprocess_step_result["matched"] == [[1, 2], [2, 1]]


def test_a_step_expected_twice_needs_two_calls() -> None:
    scorer = create_trajectory_scorer(["lookup_order", "refund_order", "lookup_order"])
    result = score(scorer, traced(LOOKUP, REFUND))
    assert reason_of(result).endswith(
        ": lookup_order called 1 time, fewer than expected: step 3 is not matched."
    )


# --- trajectory: arguments ------------------------------------------------------------------

ARGS_CASES: list[tuple[str, Any, dict[str, bool]]] = [
    # (what the call's arguments are, the call's arguments, {args mode: matches})
    ("equal, keys reordered, spaced", '{ "amount" : 20.0,"order_id":"7"}',
     {"exact": True, "subset": True}),
    ("one more key", {"order_id": "7", "amount": 20, "reason": "late"},
     {"exact": False, "subset": True}),
    ("a key missing", {"order_id": "7"}, {"exact": False, "subset": False}),
    ("another value", {"order_id": "8", "amount": 20}, {"exact": False, "subset": False}),
    ("true is not 1", {"order_id": "7", "amount": True}, {"exact": False, "subset": False}),
    ("not JSON", "order_id=7", {"exact": False, "subset": False}),
]  # fmt: skip


@pytest.mark.parametrize("case", ARGS_CASES, ids=[case[0] for case in ARGS_CASES])
def test_each_args_mode(case: tuple[str, Any, dict[str, bool]]) -> None:
    _, arguments, matches = case
    step = {"name": "refund_order", "arguments": {"order_id": "7", "amount": 20}}
    run = traced(("refund_order", arguments))
    for args, matched in [*matches.items(), (None, True)]:
        scorer = create_trajectory_scorer([step], order="strict", args=args)  # type: ignore[arg-type]
        assert (args, score(scorer, run).score) == (args, 1.0 if matched else 0.0)


def test_subset_arguments_are_found_at_any_depth() -> None:
    nested = {"name": "notify_customer", "arguments": {"channel": {"kind": "email"}}}
    listed = {"name": "notify_customer", "arguments": {"channel": {"kind": "sms"}}}
    run = traced(NOTIFY)
    assert score(create_trajectory_scorer([nested]), run).score == 1.0
    wrong = score(create_trajectory_scorer([listed]), run)
    assert reason_of(wrong) == (
        "The score is 0. 0 of 1 expected steps made in order: notify_customer at step 1 called "
        'with other arguments: expected {"channel": {"kind": "sms"}}, got {"order_id": "7", '
        '"channel": {"kind": "email", "to": "a@b.c"}}.'
    )


def test_arguments_not_recorded_do_not_match_expected_ones() -> None:
    run = traced(("refund_order", None, "card declined"))
    scorer = create_trajectory_scorer([{"name": "refund_order", "arguments": {"order_id": "7"}}])
    assert reason_of(score(scorer, run)).endswith(
        'refund_order at step 1 called with other arguments: expected {"order_id": "7"}, got '
        "none recorded."
    )
    assert score(create_trajectory_scorer(["refund_order"]), run).score == 1.0


def test_a_secret_in_the_arguments_stays_out_of_the_reason() -> None:
    secret = "sk-live-abcdef0123456789abcdef"
    run = traced(("refund_order", {"order_id": "7", "api_key": secret}))
    scorer = create_trajectory_scorer([{"name": "refund_order", "arguments": {"order_id": "8"}}])
    reason = reason_of(score(scorer, run))
    assert secret not in reason
    assert "[REDACTED]" in reason


def test_typed_steps_and_scale() -> None:
    scorer = create_trajectory_scorer(
        [ExpectedStep("lookup_order"), ExpectedStep("refund_order", {"amount": 20})],
        order="any_order",
        scale=10,
        threshold=0.5,
    )
    result = score(scorer, traced(REFUND))
    assert (result.score, result.passed) == (5.0, True)


# --- tool efficiency ------------------------------------------------------------------------

SEARCH: Call = ("search", {"q": "refund policy"})
FETCH: Call = ("fetch", {"url": "https://example.test/refunds"})


@BUILDS
def test_a_loop_is_named_with_its_cycle(build: Build) -> None:
    result = score(create_tool_efficiency_scorer(), build(LOOKUP, SEARCH, FETCH, SEARCH, FETCH,
                                                          SEARCH, FETCH, REFUND))  # fmt: skip
    assert (result.score, result.passed) == (0.75, False)
    # Its calls are not reported again as repeats (search and fetch, 3 times each).
    assert reason_of(result) == (
        "The score is 0.75. 8 tool calls, 1 problem: search -> fetch repeated 3 times."
    )
    assert result.preprocess_step_result["problems"][0]["calls"] == [2, 3, 4, 5, 6, 7]


def test_what_is_not_a_loop() -> None:
    scorer = create_tool_efficiency_scorer()
    # Twice is one repeat, which the default allows.
    assert score(scorer, traced(SEARCH, FETCH, SEARCH, FETCH)).score == 1.0
    # The same tools on other items make progress.
    items = [call for n in range(4) for call in (("lookup_order", {"order_id": n}),
                                                   ("refund_order", {"order_id": n}))]  # fmt: skip
    assert score(scorer, traced(*items)).score == 1.0
    # With no repeat allowed, twice is a loop.
    strict = score(create_tool_efficiency_scorer(max_repeats=0), traced(SEARCH, FETCH, SEARCH,
                                                                        FETCH))  # fmt: skip
    assert reason_of(strict).endswith(": search -> fetch repeated 2 times.")


def test_a_longer_cycle() -> None:
    result = score(create_tool_efficiency_scorer(), traced(EXTRA, *[SEARCH, FETCH, LOOKUP] * 3))
    assert reason_of(result) == (
        "The score is 0.75. 10 tool calls, 1 problem: search -> fetch -> lookup_order "
        "repeated 3 times."
    )


def test_the_same_call_in_other_spellings_is_a_repeat() -> None:
    spellings = [
        '{"order_id": "7", "n": 1}',
        '{ "n":1.0,"order_id":"7" }',
        '{"order_id":"7","n":1}',
    ]
    run = traced(*[("lookup_order", text) for text in spellings])
    assert reason_of(score(create_tool_efficiency_scorer(), run)).endswith(
        ": lookup_order called 3 times with the same arguments."
    )


@BUILDS
def test_unrecovered_errors(build: Build) -> None:
    scorer = create_tool_efficiency_scorer()
    never_retried = score(scorer, traced(LOOKUP, ("refund_order", {"order_id": "7"}, "timeout"),
                                         NOTIFY))  # fmt: skip
    assert (never_retried.score, never_retried.passed) == (0.75, False)
    assert reason_of(never_retried).endswith(
        ": refund_order failed (timeout) and was never retried."
    )
    retried: Call = ("refund_order", {"order_id": "7", "retry": 1}, "502")
    failing = score(scorer, traced(("refund_order", {"order_id": "7"}, "timeout"), retried))
    assert reason_of(failing).endswith(
        ": refund_order failed 2 times (502), no later call succeeded."
    )
    recovered = traced(("refund_order", {"order_id": "7"}, "timeout"), REFUND)
    assert score(scorer, recovered).score == 1.0
    # A generation's messages record no error: its calls all read as successful.
    assert score(scorer, build(("refund_order", {"order_id": "7"}, "timeout"))).score == (
        0.75 if build is traced else 1.0
    )


def test_a_secret_in_an_error_stays_out_of_the_reason() -> None:
    error = "401: bad token=abcdef0123456789 for refunds"
    result = score(create_tool_efficiency_scorer(), traced(("refund_order", {}, error)))
    assert "abcdef0123456789" not in reason_of(result)
    assert "failed (401: bad token=[REDACTED] for refunds)" in reason_of(result)


def test_steps_over_budget() -> None:
    calls = [("lookup_order", {"order_id": n}) for n in range(12)]
    over = score(create_tool_efficiency_scorer(max_steps=8), traced(*calls))
    assert (over.score, over.passed) == (0.75, False)
    assert (
        reason_of(over) == "The score is 0.75. 12 tool calls, 1 problem: 12 tool calls, budget 8."
    )
    assert over.preprocess_step_result["problems"][0]["calls"] == [9, 10, 11, 12]
    assert score(create_tool_efficiency_scorer(max_steps=12), traced(*calls)).score == 1.0


def test_each_problem_lowers_the_score_by_a_quarter_down_to_zero() -> None:
    calls: list[Call] = [
        *[LOOKUP] * 3,  # repeat
        SEARCH, FETCH, SEARCH, FETCH, SEARCH, FETCH,  # loop
        ("refund_order", {}, "timeout"),  # unrecovered
    ]  # fmt: skip
    three = score(create_tool_efficiency_scorer(), traced(*calls))
    assert three.score == 0.25
    assert reason_of(three) == (
        "The score is 0.25. 10 tool calls, 3 problems: search -> fetch repeated 3 times; "
        "lookup_order called 3 times with the same arguments; refund_order failed (timeout) "
        "and was never retried."
    )
    five = score(create_tool_efficiency_scorer(max_steps=2), traced(*calls, ("x", {}, "boom")))
    assert [p["kind"] for p in five.preprocess_step_result["problems"]] == [
        "over_budget", "loop", "repeat", "unrecovered_error", "unrecovered_error",
    ]  # fmt: skip
    assert five.score == 0.0


def test_a_run_without_tool_calls_is_clean() -> None:
    result = score(create_tool_efficiency_scorer(max_steps=1), generation())
    assert (result.score, result.passed) == (1.0, True)


# --- both: no judge, configuration, exports -------------------------------------------------


async def test_no_judge_request_even_with_a_judge_at_hand() -> None:
    endpoint = ScriptedEndpoint([])  # any request would get a 500 and fail the run
    judge = OpenAIJudge("judge-model", client=endpoint.client(max_retries=0), use_cache=False)
    run = traced(LOOKUP, LOOKUP, LOOKUP, REFUND)
    scorers = [create_trajectory_scorer(EXPECTED), create_tool_efficiency_scorer()]

    results = [await scorer.run(run, judge=judge) for scorer in scorers]

    assert [s.level for s in scorers] == ["trace", "trace"]
    assert [r.status for r in results] == [ScoreStatus.SCORED, ScoreStatus.SCORED]
    assert [r.passed for r in results] == [False, False]
    assert [r.judge_usage.calls for r in results] == [0, 0]
    assert [r.preprocess_prompt for r in results] == [None, None]
    assert endpoint.request_count == 0


# As a caller without a type checker would write them.
UNTYPED: Any = agentscore.scorers
BAD_CONFIGURATIONS: list[tuple[Callable[[], object], str]] = [
    (lambda: UNTYPED.create_trajectory_scorer("lookup_order"), "expected must be a list of"),
    (lambda: UNTYPED.create_trajectory_scorer([""]), "expected step 1: an expected step needs a"),
    (lambda: UNTYPED.create_trajectory_scorer([42]), "expected step 1 must be a tool name"),
    (lambda: UNTYPED.create_trajectory_scorer(["a", {"arguments": {}}]),
     "expected step 2: an expected step needs a tool name"),
    (lambda: UNTYPED.create_trajectory_scorer([{"name": "a", "args": {}}]),
     "expected step 1: unknown key 'args'"),
    (lambda: UNTYPED.create_trajectory_scorer([{"name": "a", "arguments": "x=1"}]),
     "expected arguments of a must be a JSON object"),
    (lambda: UNTYPED.create_trajectory_scorer([{"name": "a", "arguments": {"at": object()}}]),
     "expected arguments of a must be JSON"),
    (lambda: UNTYPED.create_trajectory_scorer(["a"], order="sorted"), "order must be one of"),
    (lambda: UNTYPED.create_trajectory_scorer(["a"], args="loose"), "args must be 'exact'"),
    (lambda: UNTYPED.create_trajectory_scorer([], order="in_order"), "expected is empty"),
    (lambda: UNTYPED.create_trajectory_scorer(["a"], threshold=2), "threshold must be at most"),
    (lambda: UNTYPED.create_trajectory_scorer(["a"], treshold=1), "did you mean 'threshold'"),
    (lambda: UNTYPED.create_tool_efficiency_scorer(max_repeats=-1), "max_repeats must be at"),
    (lambda: UNTYPED.create_tool_efficiency_scorer(max_repeats=1.5), "max_repeats must be an"),
    (lambda: UNTYPED.create_tool_efficiency_scorer(max_steps=0), "max_steps must be at least 1"),
    (lambda: UNTYPED.create_tool_efficiency_scorer(max_steps=True), "max_steps must be an"),
    (lambda: UNTYPED.ExpectedStep("a", ["x"]), "expected arguments of a must be a JSON object"),
]  # fmt: skip


@pytest.mark.parametrize(("make", "message"), BAD_CONFIGURATIONS)
def test_bad_configuration_is_a_clear_error(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        make()


def test_expected_steps_are_copied_at_construction() -> None:
    arguments = {"order_id": "7"}
    scorer = create_trajectory_scorer([{"name": "lookup_order", "arguments": arguments}])
    arguments["order_id"] = "8"
    assert score(scorer, traced(LOOKUP)).score == 1.0


def test_both_factories_are_exported() -> None:
    for name in ("create_trajectory_scorer", "create_tool_efficiency_scorer", "ExpectedStep"):
        assert name in agentscore.scorers.__all__
