"""Facts the user stated count as context (`user_facts`, on by default) for both scorers."""

from __future__ import annotations

from typing import Any

import pytest

from agentscore.judges import OpenAIJudge
from agentscore.run import ScorerRun
from agentscore.scorers import create_faithfulness_scorer, create_hallucination_scorer
from agentscore.testing import ScriptedEndpoint, chat_completion

pytestmark = pytest.mark.anyio

POLICY = ["Items can be returned within 30 days of delivery."]

# (what the user stated, then asked; the answer's restatement of it)
USER_FACTS = [
    (
        "My shoes were delivered 45 days ago. Can I still return them?",
        "Your shoes were delivered 45 days ago.",
    ),
    (
        "I ordered the blue jacket on 3 March 2026. Where is it?",
        "You ordered the blue jacket on 3 March 2026.",
    ),
    ("My name is Priya Raman and my order number is 88231.", "Your order number is 88231."),
]


def make(kind: str, model: Any = "local", **options: Any) -> Any:
    factory = create_faithfulness_scorer if kind == "faithfulness" else create_hallucination_scorer
    return factory(model, context=POLICY, **options)


@pytest.mark.parametrize("kind", ["faithfulness", "hallucination"])
@pytest.mark.parametrize(("said", "restated"), USER_FACTS)
async def test_restating_the_users_own_fact_is_not_penalised(
    kind: str, said: str, restated: str
) -> None:
    run = ScorerRun(
        input=said, output=f"{restated} Items can be returned within 30 days of delivery."
    )
    on = await make(kind).run(run)
    off = await make(kind, user_facts=False).run(run)
    on_verdicts = [v["verdict"] for v in on.analyze_step_result["verdicts"]]
    off_verdicts = [v["verdict"] for v in off.analyze_step_result["verdicts"]]
    assert on_verdicts == ["yes", "yes"]
    assert off_verdicts == ["unsure", "yes"]
    perfect = 1.0 if kind == "faithfulness" else 0.0
    assert on.score == perfect
    assert off.score == 0.5


async def test_only_statements_of_the_user_join_the_context() -> None:
    run = ScorerRun(
        input=[
            {"role": "system", "content": "Orders ship in 2 days."},
            {
                "role": "user",
                "content": "Tell me about returns. My shoes were delivered 45 days ago.",
            },
            {"role": "assistant", "content": "Let me check."},
            {"role": "user", "content": "Can I return them? Where is my refund?"},
        ],
        output="Your shoes were delivered 45 days ago.",
    )
    result = await make("hallucination").run(run)
    assert result.context == [*POLICY, "The user said: My shoes were delivered 45 days ago."]


async def test_the_llm_judge_sees_the_users_facts_labelled_in_the_context() -> None:
    reply = {
        "claims": [
            {"claim": "Your shoes were delivered 45 days ago.", "verdict": "yes", "reason": "r"}
        ]
    }
    endpoint = ScriptedEndpoint([chat_completion(reply), chat_completion(reply)])
    judge = OpenAIJudge("judge-llm", client=endpoint.client(max_retries=0), use_cache=False)
    run = ScorerRun(input=USER_FACTS[0][0], output=USER_FACTS[0][1])
    await make("faithfulness", judge).run(run)
    await make("faithfulness", judge, user_facts=False).run(run)
    with_facts, without = (r["messages"][-1]["content"] for r in endpoint.requests)
    assert "[2] The user said: My shoes were delivered 45 days ago." in with_facts
    assert "Can I still return them" not in with_facts
    assert "The user said" not in without


async def test_user_facts_join_context_from_get_context_too() -> None:
    scorer = create_hallucination_scorer("local", get_context=lambda p: POLICY)
    result = await scorer.run(ScorerRun(input=USER_FACTS[0][0], output=USER_FACTS[0][1]))
    assert result.score == 0.0
    assert result.context is not None and result.context[-1].startswith("The user said: ")


# A first-person clause on a noun inside a question is taken as given by the question.
PRESUPPOSED = [
    ("Can I still return the boots I received 45 days ago?", "You received the boots 45 days ago."),
    (
        "How do I return the jacket I bought on 3 March 2026?",
        "You bought the jacket on 3 March 2026.",
    ),
    ("What happened to the parcel we sent to Berlin?", "You sent the parcel to Berlin."),
]
# ... but not a clause the question asks about, nor one whose end cannot be told.
ASKED = [
    ("Is it true that I bought 3 jackets?", "You bought 3 jackets."),
    ("Do you know if I paid 40 euros?", "You paid 40 euros."),
    ("Did the parcel we sent reach Berlin?", "The parcel reached Berlin."),
]


@pytest.mark.parametrize(("asked", "restated"), PRESUPPOSED)
async def test_a_fact_the_users_question_takes_as_given_is_context(
    asked: str, restated: str
) -> None:
    result = await make("faithfulness").run(ScorerRun(input=asked, output=restated))
    assert [v["verdict"] for v in result.analyze_step_result["verdicts"]] == ["yes"]


@pytest.mark.parametrize(("asked", "restated"), ASKED)
async def test_what_the_user_asks_about_is_not_context(asked: str, restated: str) -> None:
    result = await make("faithfulness").run(ScorerRun(input=asked, output=restated))
    assert [v["verdict"] for v in result.analyze_step_result["verdicts"]] != ["yes"]
    assert not any(chunk.startswith("The user said") for chunk in result.context or [])
