"""`agentscore.testing.assert_scores` with an OpenAI-compatible judge (scripted, through the
real `openai` client), inside sync and async tests, and when the judge cannot answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentscore import ScorerRun
from agentscore.judges import OpenAIJudge
from agentscore.scorers import create_faithfulness_scorer, create_hallucination_scorer
from agentscore.testing import (
    ScoreAssertionError,
    ScriptedEndpoint,
    ScriptedReply,
    assert_scores,
    chat_completion,
    network_failure,
)

CONTEXT = ["Order 1042 shipped with UPS on 2026-11-18."]
RUN = {
    "input": "Where is order 1042?",
    "output": "Order 1042 shipped with UPS. It arrives tomorrow.",
    "request_context": {"context": CONTEXT},
}


def judge_of(endpoint: ScriptedEndpoint) -> OpenAIJudge:
    return OpenAIJudge("judge-model", client=endpoint.client(max_retries=0))


def verdicts(body: dict[str, Any]) -> ScriptedReply:
    return chat_completion(
        {
            "claims": [
                {"claim": "Order 1042 shipped with UPS.", "verdict": "yes", "reason": "stated"},
                {
                    "claim": "It arrives tomorrow.",
                    "verdict": "unsure",
                    "reason": "the context gives no delivery date",
                },
            ]
        }
    )


def test_an_llm_judges_unsupported_claim_is_in_the_failure_message() -> None:
    endpoint = ScriptedEndpoint(verdicts)
    faithfulness = create_faithfulness_scorer(judge_of(endpoint), context=CONTEXT)
    with pytest.raises(ScoreAssertionError) as failed:
        assert_scores(RUN, faithfulness)
    [result] = failed.value.results
    assert result.reason is not None and "It arrives tomorrow." in result.reason
    assert str(failed.value) == (
        f"faithfulness 0.5: {result.reason}"
        "\n  - unverifiable: 'It arrives tomorrow.'"
        "\n    why: the context gives no delivery date"
    )
    assert len(endpoint.requests) == 1


def test_passing_scores_are_returned() -> None:
    endpoint = ScriptedEndpoint(verdicts)
    lenient = create_hallucination_scorer(judge_of(endpoint), context=CONTEXT, threshold=0.5)
    [result] = assert_scores(ScorerRun.model_validate(RUN), [lenient])
    assert (result.score, result.passed) == (0.5, True)


@pytest.mark.anyio
async def test_it_works_inside_an_async_test() -> None:
    local = create_faithfulness_scorer("local", context=CONTEXT)
    with pytest.raises(ScoreAssertionError, match=r"unverifiable: 'It arrives tomorrow\.'"):
        assert_scores(RUN, local)


def test_a_judge_that_cannot_answer_fails_with_the_error_not_a_score() -> None:
    endpoint = ScriptedEndpoint([network_failure("connect")])
    faithfulness = create_faithfulness_scorer(judge_of(endpoint), context=CONTEXT)
    with pytest.raises(ScoreAssertionError) as failed:
        assert_scores(RUN, faithfulness)
    assert str(failed.value).startswith("faithfulness failed: JudgeConnectionError: ")
    assert "sk-test" not in str(failed.value)


def test_nothing_to_judge_passes() -> None:
    [result] = assert_scores({"input": "Hi", "output": ""}, create_faithfulness_scorer("local"))
    assert result.status.value == "no_claims"


FAILING_TEST = """
from agentscore.scorers import create_faithfulness_scorer
from agentscore.testing import assert_scores

CONTEXT = ['{"result": {"order_id": 1042, "status": "processing"}}']


def test_answer() -> None:
    run = {"input": "Where is order 1042?", "output": "Order 1042 was delivered yesterday."}
    assert_scores(run, create_faithfulness_scorer(context=CONTEXT))


def test_unreadable_run() -> None:
    assert_scores({"input": 3.5j}, create_faithfulness_scorer(context=CONTEXT))
"""


def test_the_pytest_traceback_stops_at_the_tests_line(tmp_path: Path) -> None:
    (tmp_path / "test_failing.py").write_text(FAILING_TEST)
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_failing.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = completed.stdout
    assert "2 failed" in out, out
    # The failing line of each test is shown, and no frame of agentscore's own.
    assert ">       assert_scores(run, create_faithfulness_scorer(context=CONTEXT))" in out
    assert '>       assert_scores({"input": 3.5j}' in out
    assert "agentscore/testing.py" not in out and "def assert_scores" not in out
    assert "def _as_run" not in out
    # The verdict and its reason are there.
    assert "ScoreAssertionError: faithfulness 0:" in out
    assert "the claim says 'delivered', the context says 'processing'" in out


@pytest.mark.parametrize(
    ("record", "answer", "conflict", "quoted"),
    [
        (
            {"order_id": "1042", "status": "processing"},
            "Order 1042 has shipped.",
            "the claim says 'shipped', the context says 'processing'",
            "status: processing",
        ),
        (
            {"order_id": "1042", "error": "order not found"},
            "Order 1042 was delivered.",
            "the context says 'not found'",
            "error: order not found",
        ),
    ],
)
def test_a_contradicted_state_quotes_the_line_that_holds_the_state(
    record: dict[str, str], answer: str, conflict: str, quoted: str
) -> None:
    context = [json.dumps(record)]
    run = {"input": "Where is order 1042?", "output": answer}
    with pytest.raises(ScoreAssertionError) as failed:
        assert_scores(run, create_faithfulness_scorer("local", context=context))
    message = str(failed.value)
    assert f"\n  - contradicted: '{answer}'" in message
    why = f'\n    why: Contradicts the context: {conflict} (relied on: "{quoted}").'
    assert message.endswith(why), message
    assert "order_id" not in message
