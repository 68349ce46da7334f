"""The scorers of issue 21 on real outputs: scores computed from scripted verdicts, thresholds
in their own direction, readable reasons, and their failure paths."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

import agentscore.scorers
from agentscore import Agent, Evals, Runner
from agentscore.errors import ConfigurationError
from agentscore.judges import OpenAIJudge
from agentscore.run import ScorerRun
from agentscore.scorers import (
    ScoreStatus,
    create_answer_relevancy_scorer,
    create_completeness_scorer,
    create_contains_scorer,
    create_context_relevance_scorer,
    create_json_schema_scorer,
    create_regex_scorer,
    create_rubric_scorer,
    create_tool_call_accuracy_scorer,
)
from agentscore.scorers.base import NO_CONTEXT_REASON
from agentscore.scorers.tool_calls import ToolLike
from agentscore.testing import ScriptedEndpoint, chat_completion
from tests.support.new_scorers import lookup_order

pytestmark = pytest.mark.anyio

FACTORIES = [
    "create_answer_relevancy_scorer",
    "create_completeness_scorer",
    "create_contains_scorer",
    "create_context_relevance_scorer",
    "create_json_schema_scorer",
    "create_regex_scorer",
    "create_rubric_scorer",
    "create_tool_call_accuracy_scorer",
]


def judge_for(endpoint: ScriptedEndpoint) -> OpenAIJudge:
    return OpenAIJudge("judge-model", client=endpoint.client(max_retries=0), use_cache=False)


def calls_run(*calls: tuple[str, Any], question: str = "Where is order 1042?") -> ScorerRun:
    return ScorerRun(
        input=question,
        output=[
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{index}",
                        "type": "function",
                        "function": {
                            "name": name,
                            "arguments": args if isinstance(args, str) else json.dumps(args),
                        },
                    }
                    for index, (name, args) in enumerate(calls)
                ],
            },
            {"role": "assistant", "content": "Order 1042 shipped with UPS."},
        ],
    )


def test_every_factory_is_exported() -> None:
    for name in FACTORIES:
        assert name in agentscore.scorers.__all__
        assert callable(getattr(agentscore.scorers, name))


# --- answer relevancy ----------------------------------------------------------------------

STATEMENTS = {
    "statements": [
        {"statement": "Order 1042 shipped.", "verdict": "yes", "reason": "answers where"},
        {"statement": "Shipping is usually fast.", "verdict": "unsure", "reason": "related"},
        {"statement": "Our dog is Rex.", "verdict": "no", "reason": "off-topic"},
    ]
}
RUN = ScorerRun(input="Where is order 1042?", output="Order 1042 shipped. ... Our dog is Rex.")


async def test_answer_relevancy_weighs_unsure_as_mastra_and_as_deepeval() -> None:
    mastra = create_answer_relevancy_scorer(
        judge_for(ScriptedEndpoint([chat_completion(STATEMENTS)]))
    )
    deepeval = create_answer_relevancy_scorer(
        judge_for(ScriptedEndpoint([chat_completion(STATEMENTS)])), uncertainty_weight=1.0
    )

    strict, lenient = await mastra.run(RUN), await deepeval.run(RUN)

    assert strict.score == 0.43  # (1 + 0.3 + 0) / 3
    assert lenient.score == 0.67  # (1 + 1 + 0) / 3: only "no" counts against
    assert strict.passed is False and lenient.passed is False  # below 0.7, higher is better
    assert strict.reason is not None
    assert strict.reason.startswith("The score is 0.43 because 1 of 3 statements")
    assert 'Off-topic: "Our dog is Rex." (off-topic)' in strict.reason


async def test_answer_relevancy_without_a_question_fails_and_an_empty_answer_has_no_claims() -> (
    None
):
    endpoint = ScriptedEndpoint([])
    scorer = create_answer_relevancy_scorer(judge_for(endpoint))

    no_question = await scorer.run(ScorerRun(output="Order 1042 shipped."))
    empty = await scorer.run(ScorerRun(input="Where is it?", output=""))

    assert no_question.status is ScoreStatus.FAILED
    assert no_question.error is not None and no_question.error.type == "MissingInputError"
    assert empty.status is ScoreStatus.NO_CLAIMS and empty.passed is None
    assert endpoint.requests == []


async def test_answer_relevancy_on_the_local_judge_leaves_what_it_cannot_tell_unscored() -> None:
    result = await create_answer_relevancy_scorer("local").run(
        ScorerRun(
            input="Where is order 1042?",
            output="Order 1042 left the depot on Monday. Our office dog is called Rex.",
        )
    )
    statements = result.preprocess_step_result["statements"]
    assert [s["verdict"] for s in statements] == ["yes", "unsure"]
    assert [s["confidence"] for s in statements] == [0.95, 0.5]
    # The second statement could be a needed detail or a digression: pass or fail hangs on it.
    assert result.status is ScoreStatus.UNDECIDED
    assert result.score is None and result.passed is None and result.label is None
    assert result.reason is not None
    assert result.reason.startswith("Not scored: the judge could not tell whether 1 of 2")
    assert '"Our office dog is called Rex."' in result.reason
    assert result.judge_usage.calls == 0


async def test_answer_relevancy_on_the_local_judge_scores_when_the_guesses_cannot_matter() -> None:
    # Three statements about the order and one it cannot tell: even if that one were
    # off-topic, 3 of 4 pass the 0.7 threshold, so the run is scored (the guess at 0.3).
    result = await create_answer_relevancy_scorer("local").run(
        ScorerRun(
            input="Where is order 1042?",
            output="Order 1042 left the depot on Monday. It is with UPS. It arrives on "
            "Thursday. Our office dog is called Rex.",
        )
    )
    assert result.status is ScoreStatus.SCORED
    assert result.score == 0.82 and result.passed is True  # (3 + 0.3) / 4


async def test_answer_relevancy_on_the_local_judge_fails_an_answer_about_another_order() -> None:
    result = await create_answer_relevancy_scorer("local").run(
        ScorerRun(
            input="Where is my order 1042?",
            output="Order 2001 was delivered yesterday. It was signed for by a neighbour.",
        )
    )
    assert result.score == 0.0 and result.passed is False
    assert result.reason is not None and "is about Order 2001" in result.reason


# --- context relevance ---------------------------------------------------------------------


async def test_context_relevance_judges_each_item_and_repairs_a_wrong_count() -> None:
    items = [{"verdict": "yes", "reason": "the order"}, {"verdict": "no", "reason": "a menu"}]
    endpoint = ScriptedEndpoint(
        [chat_completion({"items": items[:1]}), chat_completion({"items": items})]
    )
    scorer = create_context_relevance_scorer(
        judge_for(endpoint), context=['{"order": "1042", "status": "shipped"}', "Lunch: soup."]
    )

    result = await scorer.run(RUN)

    assert len(endpoint.requests) == 2  # the judge's one repair of a reply one item short
    assert result.score == 0.5
    assert result.reason is not None and 'Irrelevant: "Lunch: soup." (a menu)' in result.reason


async def test_context_relevance_with_no_context_has_nothing_to_judge() -> None:
    result = await create_context_relevance_scorer("local").run(RUN)
    assert result.status is ScoreStatus.NO_CONTEXT
    assert result.score is None and result.passed is None
    assert result.reason == NO_CONTEXT_REASON


# --- completeness and rubric ----------------------------------------------------------------


def test_semantic_scorers_refuse_the_local_judge_with_the_way_out() -> None:
    with pytest.raises(ConfigurationError, match="completeness needs an LLM judge"):
        create_completeness_scorer("local")
    with pytest.raises(ConfigurationError, match="rubric scorer needs an LLM judge"):
        create_rubric_scorer(None, criteria=["Polite."])
    with pytest.raises(ConfigurationError, match="judge_choice needs an LLM judge"):
        create_tool_call_accuracy_scorer("local", tools=[lookup_order], judge_choice=True)


async def test_completeness_counts_partly_covered_as_half() -> None:
    reply = {
        "requirements": [
            {"requirement": "where", "verdict": "yes", "reason": "UPS"},
            {"requirement": "when", "verdict": "unsure", "reason": "no date"},
            {"requirement": "cost", "verdict": "no", "reason": "not said"},
        ]
    }
    endpoint = ScriptedEndpoint([chat_completion(reply)])
    result = await create_completeness_scorer(judge_for(endpoint)).run(RUN)

    assert result.score == 0.5  # (1 + 0.5 + 0) / 3
    assert result.reason is not None
    assert 'Missing: "cost" (not said)' in result.reason
    assert 'Partly covered: "when" (no date)' in result.reason


async def test_rubric_scores_each_criterion_on_its_scale_with_its_reason() -> None:
    reply = {"criteria": [{"score": 8, "reason": "courteous"}, {"score": 6, "reason": "no id"}]}
    endpoint = ScriptedEndpoint([chat_completion(reply)])
    scorer = create_rubric_scorer(
        judge_for(endpoint),
        criteria={"polite": "Addresses the user courteously.", "cites": "Cites the order id."},
    )

    result = await scorer.run(RUN)

    assert result.score == 0.7  # (8 + 6) / 20
    assert result.passed is True
    assert result.reason is not None
    assert "polite: Addresses the user courteously.: 8/10 (courteous)" in result.reason
    assert "cites: Cites the order id.: 6/10 (no id)" in result.reason
    assert "CRITERIA" in (result.preprocess_prompt or "")


async def test_rubric_scores_off_its_scale_are_repaired_then_fail() -> None:
    bad = {"criteria": [{"score": 11, "reason": "too good"}]}
    endpoint = ScriptedEndpoint([chat_completion(bad), chat_completion(bad)])
    result = await create_rubric_scorer(judge_for(endpoint), criteria=["Polite."]).run(RUN)

    assert result.status is ScoreStatus.FAILED
    assert result.error is not None and result.error.type == "JudgeOutputError"
    assert "0..10" in result.error.message
    assert result.judge_usage.calls == 2


def test_rubric_criteria_must_be_given() -> None:
    with pytest.raises(ConfigurationError, match="at least one criterion"):
        create_rubric_scorer("gpt-4o-mini", criteria=[])
    with pytest.raises(ConfigurationError, match="not a string"):
        create_rubric_scorer("gpt-4o-mini", criteria="Be polite.")


# --- tool-call accuracy --------------------------------------------------------------------


async def test_tool_call_accuracy_on_the_local_judge_checks_tools_and_schemas() -> None:
    scorer = create_tool_call_accuracy_scorer(
        "local", tools=[lookup_order], expected_tools=["lookup_order"]
    )

    unknown = await scorer.run(calls_run(("delete_order", {"order_id": "1042"})))
    invalid = await scorer.run(calls_run(("lookup_order", {"order_id": 1042, "extra": 1})))
    not_json = await scorer.run(calls_run(("lookup_order", "{order_id")))
    valid = await scorer.run(calls_run(("lookup_order", {"order_id": "1042"})))

    assert unknown.score == 0.0 and unknown.passed is False
    assert unknown.reason is not None and "delete_order: not a tool the agent had" in unknown.reason
    assert invalid.score == 0.0
    assert invalid.reason is not None and "violate the tool's schema" in invalid.reason
    assert not_json.score == 0.0
    assert not_json.reason is not None and "not valid JSON" in not_json.reason
    assert valid.score == 1.0 and valid.passed is True
    assert all(r.judge_usage.calls == 0 for r in (unknown, invalid, not_json, valid))


async def test_tool_call_accuracy_makes_no_judge_request_even_with_an_llm_judge() -> None:
    endpoint = ScriptedEndpoint([])
    scorer = create_tool_call_accuracy_scorer(judge_for(endpoint), tools=[lookup_order])

    result = await scorer.run(calls_run(("lookup_order", {"order_id": "1042"})))

    assert result.score == 1.0
    assert endpoint.requests == []


async def test_tool_call_accuracy_wants_the_expected_calls_in_order() -> None:
    search = {"type": "function", "function": {"name": "search", "parameters": {}}}
    tools: list[ToolLike] = [lookup_order, search]
    in_order = create_tool_call_accuracy_scorer(
        tools=tools, expected_tools=["search", "lookup_order"]
    )
    with_args = create_tool_call_accuracy_scorer(
        tools=tools, expected_tools=[{"name": "lookup_order", "arguments": {"order_id": "7"}}]
    )

    swapped = await in_order.run(calls_run(("lookup_order", {"order_id": "1"}), ("search", {})))
    right = await in_order.run(calls_run(("search", {}), ("lookup_order", {"order_id": "1"})))
    missing = await in_order.run(ScorerRun(input="Where?", output="No idea."))
    other_id = await with_args.run(calls_run(("lookup_order", {"order_id": "1042"})))

    assert swapped.score == 0.5  # only one of the two in the expected order
    assert right.score == 1.0
    assert missing.score == 0.0  # expected calls never made
    assert other_id.score == 0.0
    assert swapped.reason is not None and "1 of 2 expected calls" in swapped.reason


async def test_tool_call_accuracy_without_tools_or_expectations_fails_clearly() -> None:
    result = await create_tool_call_accuracy_scorer().run(calls_run(("x", {})))
    assert result.status is ScoreStatus.FAILED
    assert result.error is not None and result.error.type == "MissingInputError"
    assert "tools=" in result.error.message


async def test_tool_choice_judged_by_an_llm_counts_a_wrong_tool_as_invalid() -> None:
    reply = {"items": [{"verdict": "no", "reason": "search answers this, not a lookup"}]}
    endpoint = ScriptedEndpoint([chat_completion(reply)])
    scorer = create_tool_call_accuracy_scorer(
        judge_for(endpoint), tools=[lookup_order], judge_choice=True
    )

    result = await scorer.run(calls_run(("lookup_order", {"order_id": "1042"})))

    assert result.score == 0.0
    assert result.reason is not None and "not the right tool for the question" in result.reason
    assert len(endpoint.requests) == 1
    assert "lookup_order" in str(endpoint.requests[0]["messages"][-1]["content"])


def test_the_agent_records_its_tools_in_the_run() -> None:
    # The model asks for a tool the agent does not have; no tools= on the scorer.
    model = ScriptedEndpoint(
        [
            chat_completion(tool_calls=[("delete_order", {"order_id": "1042"})]),
            chat_completion("Done."),
        ]
    )
    runner = Runner()
    agent = Agent(
        name="support",
        model="agent-model",
        tools=[lookup_order],
        client=model.client(),
        evals=Evals(scorers=[create_tool_call_accuracy_scorer()], runner=runner),
    )
    agent.generate_sync("Delete order 1042.")
    assert agent.flush(timeout=30)

    [result] = agent.scores
    assert result.score == 0.0
    assert result.reason is not None and "not a tool the agent had" in result.reason
    runner.shutdown()


# --- deterministic checks --------------------------------------------------------------------


async def test_regex_json_schema_and_contains_score_the_text_without_a_judge() -> None:
    prose = ScorerRun(input="Status?", output="Order 1042 shipped with UPS.")
    fenced = ScorerRun(input="Status?", output='```json\n{"status": "shipped"}\n```')
    schema = {
        "type": "object",
        "required": ["status"],
        "properties": {"status": {"enum": ["shipped"]}},
    }

    assert (await create_regex_scorer(r"\d{4}").run(prose)).score == 1.0
    assert (await create_regex_scorer(r"\d{4}", fullmatch=True).run(prose)).score == 0.0
    assert (await create_json_schema_scorer(schema).run(fenced)).score == 1.0
    wrong = await create_json_schema_scorer(schema).run(
        ScorerRun(input="Status?", output='{"status": "lost"}')
    )
    assert wrong.score == 0.0
    assert wrong.reason is not None and "violates the schema at status" in wrong.reason
    assert (await create_contains_scorer(["1042", "DHL"]).run(prose)).score == 0.5
    assert (await create_contains_scorer(["dhl", "ups"], mode="any").run(prose)).score == 1.0
    forbidden = await create_contains_scorer(["UPS", "refund"], mode="none").run(prose)
    assert forbidden.score == 0.5 and forbidden.passed is False
    assert forbidden.reason is not None and "['UPS']" in forbidden.reason


def test_deterministic_checks_refuse_bad_options() -> None:
    with pytest.raises(ConfigurationError, match="invalid regex"):
        create_regex_scorer("(")
    with pytest.raises(ConfigurationError, match="invalid JSON schema"):
        create_json_schema_scorer({"type": "not-a-type"})
    with pytest.raises(ConfigurationError, match="non-empty list"):
        create_contains_scorer("UPS")
    with pytest.raises(ConfigurationError, match="mode must be"):
        create_contains_scorer(["UPS"], mode="most")  # type: ignore[arg-type]


def test_jsonschema_is_imported_only_by_the_scorers_that_check_schemas() -> None:
    # Every full garbage collection of the host walks what its imports keep alive.
    probe = (
        "import sys, agentscore, agentscore.scorers as s\n"
        "assert 'jsonschema' not in sys.modules\n"
        "s.create_json_schema_scorer({'type': 'object'})\n"
        "assert 'jsonschema' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True)
