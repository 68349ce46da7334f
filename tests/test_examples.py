"""The examples run offline, as a user would run them, and print real scores."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from agentscore.pipeline.sampling import sample_point

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OTEL_"))}
    env["PYTHONPATH"] = str(ROOT)
    completed = subprocess.run(
        [sys.executable, f"examples/{name}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_rag_agent_scores_the_grounded_answer_better() -> None:
    out = run_example("rag_agent.py")
    assert "[What is your warranty?] hallucination 0.0 (pass)" in out
    assert "[How long do I have for returns?] hallucination 1.0 (fail)" in out
    assert "the claim says 90, the context says 30" in out


def test_batch_eval_prints_per_record_scores_and_summaries() -> None:
    out = run_example("batch_eval.py")
    rows = {
        line.split()[0]: line for line in out.splitlines() if line.startswith(("order", "refund"))
    }
    assert "'faithfulness': 1.0" in rows["refund-window"]
    assert "'hallucination': 1.0" in rows["refund-window-wrong"]
    assert "faithfulness: mean" in out and "pass rate" in out


def test_custom_scorer_scores_in_code_from_the_judge_verdict() -> None:
    out = run_example("custom_scorer.py")
    assert "1.0 pass: Sorry for the wait! Order 1042" in out
    assert "0.0 fail: It shipped." in out
    assert out.count("judge calls: 1") == 2


def test_fastapi_service_answers_and_reports_sampled_scores() -> None:
    from examples.fastapi_service import agent, app

    with TestClient(app) as client:
        traces = [
            client.post("/chat", json={"message": "Where is order 1042?"}).json()["trace_id"]
            for _ in range(12)
        ]
        assert agent.flush(timeout=30)
        scores = client.get("/scores").json()
    sampled = {t for t in traces if sample_point(t, "") < 0.5}  # sampling 0.5 on the trace id
    assert {s["trace_id"] for s in scores} == sampled
    assert all(s["score"] == 1.0 and s["label"] == "pass" for s in scores)


def test_openai_loop_is_scored_through_evals_submit() -> None:
    out = run_example("openai_loop.py")
    assert "A: Order 1042 was shipped with UPS on 2026-11-18." in out
    assert "faithfulness 1.0 (pass)" in out


def test_assert_scores_fails_the_examples_invented_answer_with_its_claim() -> None:
    from agentscore import Agent
    from agentscore.scorers import create_hallucination_scorer
    from agentscore.testing import ScoreAssertionError, ScriptedEndpoint, assert_scores
    from examples.rag_agent import retrieved_documents, scripted_model, search_docs

    agent = Agent(
        name="help-centre",
        model="gpt-4o-mini",
        instructions="Answer from the help-centre articles you find.",
        tools=[search_docs],
        client=ScriptedEndpoint(scripted_model).client(),
    )
    hallucination = create_hallucination_scorer("local", get_context=retrieved_documents)

    grounded = agent.generate_sync("What is your warranty?")
    [result] = assert_scores(grounded, hallucination)
    assert (result.score, result.label) == (0.0, "pass")

    invented = agent.generate_sync("How long do I have for returns?")  # says 90 days, not 30
    with pytest.raises(ScoreAssertionError) as failed:
        assert_scores(invented, [hallucination])
    message = str(failed.value)
    assert message.startswith("hallucination 1: The score is 1 because")
    assert (
        "  - contradicted: 'Unworn shoes can be returned within 90 days of delivery for a "
        "full refund.'" in message
    )
    assert "the claim says 90, the context says 30" in message
    assert failed.value.results[0].score == 1.0
