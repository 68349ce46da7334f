"""Reasons quote enough of the evidence to be read alone: a tool result's field and value, or
a context sentence, never a cut word or two; the demo shows a dash for a run not judged."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentscore.demo.run import _cell
from agentscore.judges import OpenAIJudge
from agentscore.judges.local._grounding import check_claims
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.run import ScorerRun
from agentscore.scorers import create_faithfulness_scorer
from agentscore.testing import ScriptedEndpoint, chat_completion

ORDER = {"tool": "lookup_order", "result": {"order_id": 2001, "eta": "2026-11-28"}}
# The demo's invented answer: a date the tool result does not hold.
INVENTED = "Order 2001 was shipped with FedEx on 2026-11-20."


def run_with_tool(answer: str) -> ScorerRun:
    call: dict[str, Any] = {"id": "c1", "type": "function"}
    call["function"] = {"name": "lookup_order", "arguments": '{"order_id": 2001}'}
    return ScorerRun(
        input="Has order 2001 shipped yet?",
        output=[
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": json.dumps(ORDER["result"])},
            {"role": "assistant", "content": answer},
        ],
    )


def test_the_overall_reason_quotes_the_field_and_value_whole() -> None:
    result = create_faithfulness_scorer("local").run_sync(run_with_tool(INVENTED))
    assert result.reason is not None
    # Before: `(closest sentence: "result …` once the claim's reason passed 100 characters.
    assert "the number 2026-11-20 does not appear in the context" in result.reason
    assert '(closest sentence: "result.order_id: 2001")' in result.reason
    assert "…" not in result.reason


def test_a_verdict_on_json_names_the_field_as_written_and_on_prose_the_sentence() -> None:
    [on_json] = check_claims(
        ["Order 2001 arrives on 2026-11-28."], [json.dumps(ORDER)], mode="faithfulness"
    )
    assert on_json.verdict == "yes"
    assert on_json.reason.endswith('(relied on: "result.eta: 2026-11-28").')
    nested = json.dumps({"orders": [{"id": 1}, {"id": 2, "carrier": "UPS"}]})
    [in_list] = check_claims(["Order 2 ships with UPS."], [nested])
    assert '(relied on: "orders[1].id: 2")' in in_list.reason
    sentence = "Returns are accepted within 30 days of delivery for a full refund."
    [on_prose] = check_claims(["Returns are accepted within 30 days."], [sentence])
    assert on_prose.reason.endswith(f'(relied on: "{sentence}").')


def test_a_contradicted_state_quotes_its_own_records_state_line() -> None:
    # The same state line ("history processing") in two records, at other list indices: each
    # claim's quote is its own order's line, not the first copy of the text.
    history = {"orders": [{"order_id": 1, "history": ["processing"]},
                          {"order_id": 2, "history": ["ordered", "processing"]}]}  # fmt: skip
    first, second = check_claims(
        ["Order 1 has shipped.", "Order 2 has shipped."], [json.dumps(history)]
    )
    assert (first.verdict, second.verdict) == ("no", "no")
    assert first.reason.endswith('(relied on: "orders[0].history[0]: processing").')
    assert second.reason.endswith('(relied on: "orders[1].history[1]: processing").')


def test_a_long_judge_reason_is_cut_at_a_word_and_the_claim_kept_whole() -> None:
    claim = "Order 2001 was shipped with FedEx on 2026-11-20 from the Memphis hub overnight."
    reason = "The tool result gives no shipping date " + "and says nothing of a hub " * 20
    endpoint = ScriptedEndpoint(
        [chat_completion({"claims": [{"claim": claim, "verdict": "unsure", "reason": reason}]})]
    )
    scorer = create_faithfulness_scorer(
        OpenAIJudge("judge", client=endpoint.client()), context=["Order 2001: processing."]
    )
    result = scorer.run_sync(ScorerRun(input="Where?", output=claim))
    assert result.reason is not None
    assert f'"{claim}"' in result.reason
    quoted = result.reason.split(f'"{claim}" (', 1)[1]
    assert quoted.startswith("The tool result gives no shipping date and says nothing of a hub")
    kept = quoted.removesuffix("…).")
    assert kept != quoted and 250 < len(kept) <= 320
    assert reason.startswith(kept) and reason[len(kept)] == " "  # cut after a whole word


@pytest.mark.parametrize(
    ("status", "shown"),
    [(ScoreStatus.NO_CLAIMS, "- (no claims)"), (ScoreStatus.NO_CONTEXT, "- (no context)")],
)
def test_the_demo_shows_a_dash_for_a_run_not_judged(status: ScoreStatus, shown: str) -> None:
    score = 0.0 if status is ScoreStatus.NO_CLAIMS else None
    result = ScoreResult(scorer_id="faithfulness", run_id="r", status=status, score=score)
    assert _cell(result) == shown
    scored = result.model_copy(update={"status": ScoreStatus.SCORED, "score": 0.5, "label": "fail"})
    assert _cell(scored) == "0.50 fail"
