"""No context is its own outcome: a scorer that needs context and finds none ends with status
no_context, no score anywhere, its own count, and one warning per scorer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from agentscore import Evals, Runner, ScoreResult, ScorerRun
from agentscore.ci.batch import run_evals_sync
from agentscore.cli import main
from agentscore.judges import OpenAIJudge
from agentscore.result import ScoreStatus
from agentscore.scorers import (
    Score,
    create_faithfulness_scorer,
    create_hallucination_scorer,
    create_scorer,
)
from agentscore.testing import ScriptedEndpoint, chat_completion
from tests.support.otel import Otel

ANSWER = "Order 1042 shipped with UPS on 2026-11-18."


def scorers() -> list[Any]:
    return [create_faithfulness_scorer("local"), create_hallucination_scorer("local")]


def test_observe_on_a_string_answer_with_no_context_has_no_score_on_span_or_log(
    otel: Otel,
) -> None:
    runner = Runner()
    results: list[ScoreResult] = []
    evals = Evals(scorers=scorers(), runner=runner, on_score=results.append)

    @evals.observe(name="bot")
    def reply(question: str) -> str:
        return ANSWER

    with capture_logs() as logs:
        for _ in range(3):
            reply("Where is order 1042?")
        assert runner.flush(10)
    assert len(results) == 6
    assert {r.status for r in results} == {ScoreStatus.NO_CONTEXT}
    assert all(r.score is None and r.passed is None and r.label is None for r in results)
    assert all(r.judge_usage.calls == 0 for r in results)  # nothing to judge against: no call
    assert results[0].reason == "Not scored: there is no context to check the output against."
    evaluations = [s for s in otel.spans.get_finished_spans() if s.name.startswith("evaluation")]
    assert len(evaluations) == 6
    for span in evaluations:
        attributes = dict(span.attributes or {})
        assert "gen_ai.evaluation.score.value" not in attributes
        assert attributes["gen_ai.evaluation.score.label"] == "no_context"
        assert attributes["agentscore.score.status"] == "no_context"
    records = [r.log_record for r in otel.logs.get_finished_logs()]
    assert len(records) == 6
    for record in records:
        assert record.event_name == "gen_ai.evaluation.result"
        attributes = dict(record.attributes or {})
        assert "gen_ai.evaluation.score.value" not in attributes
        assert attributes["gen_ai.evaluation.score.label"] == "no_context"
    # One warning per scorer, not per run, naming how to give the scorer context.
    warnings = [entry for entry in logs if entry["event"] == "scorer_has_no_context"]
    assert sorted(w["scorer_id"] for w in warnings) == ["faithfulness", "hallucination"]
    assert "get_context" in warnings[0]["hint"] and "documents" in warnings[0]["hint"]
    assert runner.stats().failed == 0


def test_an_empty_get_context_or_context_is_no_context_and_the_judge_is_not_called() -> None:
    # Stepwise asks for the claims first (get_context may read them); nothing else is asked.
    endpoint = ScriptedEndpoint(lambda body: chat_completion({"claims": [ANSWER]}))
    judge = OpenAIJudge("judge", client=endpoint.client(max_retries=0))
    run = ScorerRun(input="Where is order 1042?", output=ANSWER)
    options: dict[str, Any]
    for options in ({"get_context": lambda params: []}, {"context": []}, {}):
        for stepwise in (False, True):
            scorer = create_hallucination_scorer(judge, stepwise=stepwise, **options)
            result = scorer.run_sync(run)
            assert result.status is ScoreStatus.NO_CONTEXT, (options, stepwise, result.error)
            assert result.score is None
    # One claims extraction (the other stepwise runs hit the judge's cache), no verdicts.
    assert [r["messages"][-1]["content"].count(ANSWER) > 0 for r in endpoint.requests] == [True]


def test_a_users_own_words_alone_are_not_context() -> None:
    run = ScorerRun(input="My order number is 1042. Where is it?", output=ANSWER)
    result = create_faithfulness_scorer("local").run_sync(run)
    assert result.status is ScoreStatus.NO_CONTEXT


def test_an_empty_answer_is_no_claims_whatever_the_context() -> None:
    result = create_faithfulness_scorer("local").run_sync(ScorerRun(input="Hi", output=""))
    assert result.status is ScoreStatus.NO_CLAIMS


def test_a_custom_scorer_can_report_no_context() -> None:
    scorer = create_scorer(
        id="needs-notes",
        generate_score=lambda params: Score(status="no_context"),
        generate_reason=lambda params: f"{params.score:.2f}",  # never asked: no score
    )
    result = scorer.run_sync(ScorerRun(input="q", output="a"))
    assert result.status is ScoreStatus.NO_CONTEXT
    assert result.score is None and result.error is None


def test_batch_summaries_count_no_context_apart_from_the_mean_and_the_pass_rate() -> None:
    data: list[dict[str, Any]] = [
        {"id": "grounded", "input": "Where?", "output": ANSWER, "documents": [ANSWER]},
        {"id": "bare", "input": "Where?", "output": ANSWER},
    ]
    report = run_evals_sync(data, [create_faithfulness_scorer("local")])
    summary = report.summaries["faithfulness"]
    assert (summary.mean, summary.pass_rate) == (1.0, 1.0)
    assert (summary.scored, summary.failed, summary.no_context) == (1, 0, 1)


def _eval(tmp_path: Path, records: list[dict[str, Any]], *args: str) -> int:
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(json.dumps(record) + "\n" for record in records))
    return main(["eval", str(data), "--scorer", "faithfulness", *args])


def test_eval_shows_no_context_in_its_own_column_and_says_how_to_give_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records: list[dict[str, Any]] = [
        {"id": "a", "input": "Where?", "output": ANSWER, "context": [ANSWER]},
        {"id": "b", "input": "Where?", "output": ANSWER, "documents": [ANSWER]},
        {"id": "c", "input": "Where?", "output": ANSWER},
    ]
    assert _eval(tmp_path, records, "--fail-under", "1.0") == 0  # c is neither pass nor fail
    captured = capsys.readouterr()
    header, _, row = captured.out.strip().splitlines()[-3:]
    assert header.split("  ")[-1] == "no context"
    assert row.split() == ["faithfulness", "1.000", "100.0%", "2", "0", "1"]
    assert "faithfulness: 1 record(s) had no context" in captured.err
    assert "'context' or 'documents'" in captured.err


def test_fail_under_with_no_record_judged_fails_with_a_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _eval(tmp_path, [{"input": "Where?", "output": ANSWER}], "--fail-under", "0.5") == 1
    err = capsys.readouterr().err
    assert "faithfulness pass rate - below --fail-under 50.0%" in err


def test_documents_of_the_wrong_shape_are_a_skipped_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records: list[dict[str, Any]] = [
        {"input": "Where?", "output": ANSWER, "documents": [ANSWER]},
        {"input": "Where?", "output": ANSWER, "documents": ANSWER},
    ]
    assert _eval(tmp_path, records, "--max-skip-rate", "0.5") == 0
    assert "'documents' must be a list of strings" in capsys.readouterr().err


def test_a_judge_that_is_never_needed_is_never_called_for_runs_without_context() -> None:
    endpoint = ScriptedEndpoint([chat_completion({"claims": []})])
    scorer = create_faithfulness_scorer(OpenAIJudge("judge", client=endpoint.client()))
    scorer.run_sync(ScorerRun(input="Where?", output=ANSWER))
    assert endpoint.requests == []


def test_a_deepeval_case_without_retrieval_context_has_no_score_and_says_why() -> None:
    from agentscore.compat.deepeval import FaithfulnessMetric, LLMTestCase

    metric = FaithfulnessMetric(model="local")
    assert metric.measure(LLMTestCase(input="Where?", actual_output=ANSWER)) is None
    assert (metric.score, metric.success, metric.error) == (None, None, None)
    assert metric.reason == "Not scored: there is no context to check the output against."
    assert metric.result is not None and metric.result.status is ScoreStatus.NO_CONTEXT
