"""The local judge reads a context once per run, and reads large ones instead of refusing."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from agentscore.judges import LocalJudge, OpenAIJudge
from agentscore.judges.local import _context as prepared_contexts
from agentscore.judges.local._context import Prepared, prepare
from agentscore.judges.local._grounding import check_claims
from agentscore.judges.local._numbers import Number
from agentscore.judges.local._parse import Parsed, parse
from agentscore.result import ScoreStatus
from agentscore.run import ScorerRun
from agentscore.scorers import create_faithfulness_scorer, create_hallucination_scorer
from agentscore.scorers._claims import MAX_CONTEXT_CHARS
from agentscore.testing import ScriptedEndpoint

pytestmark = pytest.mark.anyio

STATUSES = ("shipped", "delivered", "cancelled")


def orders(count: int, customer: str = "ana") -> str:
    return json.dumps(
        {
            "orders": [
                {
                    "order_id": 1000 + n,
                    "customer": customer,
                    "status": STATUSES[n % 3],
                    "city": ("Lyon", "Porto", "Ghent")[n % 3],
                }
                for n in range(count)
            ]
        }
    )


def agent_run(result: str, answer: str) -> ScorerRun:
    call = {"id": "c1", "type": "function", "function": {"name": "orders", "arguments": "{}"}}
    return ScorerRun(
        input=[{"role": "user", "content": "Where are my orders?"}],
        output=[
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": result},
            {"role": "assistant", "content": answer},
        ],
    )


@pytest.fixture(autouse=True)
def empty_cache() -> None:
    prepared_contexts._cache.clear()


def preparations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts real preparations (the class still does all the work)."""
    made: list[int] = []
    original = Prepared.__init__

    def counting(self: Prepared, context: list[str]) -> None:
        made.append(sum(len(item) for item in context))
        original(self, context)

    monkeypatch.setattr(Prepared, "__init__", counting)
    return made


async def test_faithfulness_and_hallucination_on_one_run_prepare_its_context_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = preparations(monkeypatch)
    run = agent_run(orders(50), "Order 1001 was delivered to Porto. Order 1002 was shipped.")
    judge = LocalJudge()
    faithful = await create_faithfulness_scorer(judge).run(run)
    hallucinated = await create_hallucination_scorer(judge).run(run)
    assert len(made) == 1  # both scorers' contexts are equal lists of new strings
    assert faithful.score == 0.5 and hallucinated.score == 0.5
    verdicts = [v["verdict"] for v in faithful.analyze_step_result["verdicts"]]
    assert verdicts == ["yes", "no"]  # order 1002 is cancelled
    # Another run's context is prepared anew.
    other = agent_run(orders(50, "bo"), "Order 1001 was delivered to Porto.")
    assert (await create_faithfulness_scorer(judge).run(other)).score == 1.0
    assert len(made) == 2


def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lines the prepared context parses in full."""
    parsed: list[str] = []
    original = parse  # the function the prepared context calls, wrapped where it calls it

    def counting(text: str, numbers: Sequence[Number] | None = None) -> Parsed:
        parsed.append(text)
        return original(text, numbers)

    monkeypatch.setattr(prepared_contexts, "parse", counting)
    return parsed


async def test_only_the_lines_a_claim_reaches_are_parsed_and_the_second_scorer_parses_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed = parses(monkeypatch)
    run = agent_run(orders(2_000), "Order 1001 was delivered to Porto. Order 1002 was shipped.")
    judge = LocalJudge()
    faithful = await create_faithfulness_scorer(judge).run(run)
    # The best line of each claim and its record's four lines: not the 8,000 lines read.
    assert 0 < len(parsed) <= 10
    assert any("order id 1001" in line for line in parsed)
    assert not any("order id 1500" in line for line in parsed)
    first = len(parsed)
    hallucinated = await create_hallucination_scorer(judge).run(run)
    assert len(parsed) == first  # the alignments and parsed lines are the first scorer's
    assert (faithful.score, hallucinated.score) == (0.5, 0.5)


def test_a_shared_preparation_gives_the_verdicts_of_a_fresh_one() -> None:
    context = [orders(30), "Order 1003 left the Lyon depot on Monday. It is insured."]
    claims = [
        "Order 1003 was shipped.",
        "Order 1004 was cancelled.",
        "Order 1005 was delivered to Ghent.",
        "Order 1003 left the Porto depot.",
        "It is insured.",
    ]
    first = check_claims(claims, context, mode="hallucination")
    assert prepare(list(context)) is prepare([str(item) for item in context])  # the cached one
    prepared_contexts._cache.clear()
    assert check_claims(claims, context, mode="hallucination") == first
    assert [c.verdict for c in first] == ["yes", "no", "no", "no", "yes"]


def test_the_cache_is_bounded_in_entries_and_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prepared_contexts._cache, "size", 10_000)
    for n in range(prepared_contexts.CACHE_ENTRIES + 5):
        prepare([f"Order {n} shipped on day {n}."])
    assert len(prepared_contexts._cache) == prepared_contexts.CACHE_ENTRIES
    big = orders(200)  # about 15,000 characters: never cached, still prepared
    assert len(big) > 10_000
    assert prepare([big]) is not prepare([big])
    for n in range(3):
        prepare([orders(40, f"c{n}")])  # about 3,000 characters each
    assert prepared_contexts._cache.total_size <= 10_000


async def test_a_one_megabyte_tool_result_is_scored_by_both_scorers_from_one_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = preparations(monkeypatch)
    parsed = parses(monkeypatch)
    result = orders(28_000)
    assert len(result) > 2_000_000
    answer = (
        "Order 28997 was delivered to Porto. Order 28998 was delivered. "
        "Order 1000 was shipped to Lyon. Every order ships free."
    )
    run = agent_run(result, answer)
    judge = LocalJudge()
    faithful = await create_faithfulness_scorer(judge).run(run)
    hallucinated = await create_hallucination_scorer(judge).run(run)
    assert faithful.status is ScoreStatus.SCORED, faithful.error
    verdicts = [v["verdict"] for v in faithful.analyze_step_result["verdicts"]]
    assert verdicts == ["yes", "no", "yes", "unsure"]  # 28998 is cancelled; none ships free
    assert faithful.score == 0.5 and hallucinated.score == 0.5
    reason = faithful.analyze_step_result["verdicts"][1]["reason"]
    assert "the context says 'cancelled'" in reason
    # Quoted as the field it is read from: this order's status, not the first cancelled one.
    assert '(relied on: "result.orders[27998].status: cancelled")' in reason
    assert len(made) == 1 and len(parsed) <= 20  # of 112,000 lines


async def test_an_llm_judge_still_refuses_a_context_its_prompt_cannot_hold() -> None:
    endpoint = ScriptedEndpoint([])
    judge = OpenAIJudge("judge", client=endpoint.client(max_retries=0))
    run = agent_run(orders(6_000), "Order 1001 was delivered.")
    result = await create_faithfulness_scorer(judge).run(run)
    assert result.status is ScoreStatus.FAILED
    assert result.error is not None and result.error.type == "InputTooLargeError"
    assert str(MAX_CONTEXT_CHARS) in result.error.message
    assert endpoint.requests == []


async def test_past_the_local_judges_own_bound_the_run_fails_clearly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(LocalJudge, "max_context_chars", 100_000)
    result = await create_faithfulness_scorer(LocalJudge()).run(
        agent_run(orders(2_000), "Order 1001 was delivered.")
    )
    assert result.status is ScoreStatus.FAILED
    assert result.error is not None and result.error.type == "InputTooLargeError"
    assert "100000" in result.error.message


def test_a_static_context_keeps_a_bounded_number_of_claims(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `context=[...]` is the same for every run: its prepared form stays cached while each
    # run brings new claims, which must not accumulate.
    monkeypatch.setattr(prepared_contexts, "REMEMBERED_CLAIMS", 8)
    context = [orders(10)]
    found = [check_claims([f"Order {1000 + n} was shipped."], context)[0] for n in range(20)]
    # Delivered orders are not said to be shipped; ids past 1009 are not in the context.
    expected = [("yes", "unsure", "no")[n % 3] for n in range(10)] + ["unsure"] * 10
    assert [check.verdict for check in found] == expected
    assert len(prepare(context)._remembered) <= 8
