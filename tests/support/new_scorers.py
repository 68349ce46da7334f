"""The eight scorers of issue 21 as the placement tests use them (and `agentscore serve`
imports them: `--scorers tests.support.new_scorers:evals`).

Answer relevancy, context relevance, tool-call accuracy and the three checks run on the
offline local judge; completeness and the rubric need an LLM, here a scripted
OpenAI-compatible endpoint in this process (the real `openai` client), which answers their
shared request (or each alone) from the schema it is sent.
"""

from __future__ import annotations

import json
from typing import Any

from agentscore import Evals, ScoreResult
from agentscore.judges import OpenAIJudge
from agentscore.scorers import (
    Scorer,
    create_answer_relevancy_scorer,
    create_completeness_scorer,
    create_contains_scorer,
    create_context_relevance_scorer,
    create_json_schema_scorer,
    create_regex_scorer,
    create_rubric_scorer,
    create_tool_call_accuracy_scorer,
)
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion
from agentscore.tools import tool

REQUIREMENTS = {
    "requirements": [{"requirement": "where the order is", "verdict": "yes", "reason": "UPS"}]
}
RUBRIC = {"criteria": [{"score": 9, "reason": "names the carrier"}]}


@tool
def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order by its id."""
    return {"order": order_id, "status": "shipped", "carrier": "UPS"}


def _reply(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties", {})
    if "requirements" in properties:
        return REQUIREMENTS
    if "criteria" in properties:
        return RUBRIC
    # The shared request: one key per section, each with its section's schema.
    return {key: _reply(section) for key, section in properties.items()}


def _answer(body: dict[str, Any]) -> ScriptedReply:
    return chat_completion(_reply(body["response_format"]["json_schema"]["schema"]))


endpoint = ScriptedEndpoint(_answer)


def llm_judge() -> OpenAIJudge:
    return OpenAIJudge("judge-model", client=endpoint.client(max_retries=0), use_cache=False)


def new_scorers() -> list[Scorer]:
    return [
        create_answer_relevancy_scorer("local"),
        create_context_relevance_scorer("local"),
        create_tool_call_accuracy_scorer(tools=[lookup_order], expected_tools=["lookup_order"]),
        create_completeness_scorer(llm_judge()),
        create_rubric_scorer(llm_judge(), criteria=["Names the carrier."]),
        create_regex_scorer(r"\bUPS\b"),
        create_json_schema_scorer({"type": "object"}),
        create_contains_scorer(["1042", "UPS"]),
    ]


evals = Evals(scorers=new_scorers())


def check(results: list[ScoreResult], *, valid_call: bool = True) -> None:
    """The scores every placement must produce for "Order 1042 shipped with UPS." answering
    "Where is order 1042?" after a lookup_order call (arguments valid or not)."""
    by_id = {result.scorer_id: result for result in results}
    assert sorted(by_id) == sorted(s.id for s in new_scorers()), sorted(by_id)
    scores = {scorer_id: result.score for scorer_id, result in by_id.items()}
    assert scores == {
        "answer_relevancy": 1.0,  # its one statement shares "order" and "1042" with the question
        "context_relevance": 1.0,  # the tool result names the order
        "tool_call_accuracy": 1.0 if valid_call else 0.0,
        "completeness": 1.0,
        "rubric": 0.9,  # 9 of 10 points
        "regex": 1.0,
        "json_schema": 0.0,  # the answer is prose, not JSON
        "contains": 1.0,
    }, json.dumps(scores)
    assert by_id["json_schema"].passed is False
    assert "not JSON" in (by_id["json_schema"].reason or "")
    if not valid_call:
        assert "violate the tool's schema" in (by_id["tool_call_accuracy"].reason or "")
    assert by_id["tool_call_accuracy"].judge_usage.calls == 0
    # Completeness and the rubric shared one request: the results count it once.
    assert by_id["completeness"].judge_usage.calls + by_id["rubric"].judge_usage.calls == 1
