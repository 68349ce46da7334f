"""What the serve benchmarks emit and encode: one hallucination score of a support agent's
answer, two claims, as a real judge's reply would give it, and its telemetry."""

from __future__ import annotations

from agentscore.result import JudgeUsage, ScoreResult, ScoreStatus
from agentscore.run import ScorerRun
from agentscore.telemetry import Telemetry
from agentscore.telemetry.evaluations import emit_result, evaluation_span, record_attempt
from agentscore.telemetry.spans import chat_span, record_chat_reply


def sample_result(run: ScorerRun, index: int = 0) -> ScoreResult:
    return ScoreResult(
        scorer_id="hallucination",
        run_id=run.run_id,
        status=ScoreStatus.SCORED,
        score=0.5,
        passed=True,
        label="pass",
        reason='The score is 0.5 because "arrive by November 24" is not supported.',
        analyze_step_result={
            "verdicts": [
                {"claim": "Order 1042 shipped.", "verdict": "yes", "reason": "the tool"},
                {"claim": "It arrives Nov 24.", "verdict": "unsure", "reason": "no eta"},
            ]
        },
        output=run.output,
        judge_usage=JudgeUsage(calls=1, input_tokens=812, output_tokens=164),
        judge_model="gpt-4o-mini",
        trace_id=run.trace_id,
        span_id=run.span_id,
        response_id=f"chatcmpl-{index:024d}",
        agent_name=run.agent_name,
    )


def emit_evaluation(telemetry: Telemetry, run: ScorerRun, result: ScoreResult, index: int) -> None:
    """What the pipeline emits for `result`: the evaluation span with the judge's chat span
    under it, then the gen_ai.evaluation.result log record and the metrics."""
    with evaluation_span(telemetry, result.scorer_id, run) as span:
        with chat_span(telemetry, model="gpt-4o-mini", provider="openai", temperature=0.0) as chat:
            record_chat_reply(
                chat,
                response_id=f"chatcmpl-{index:024d}",
                model="gpt-4o-mini-2024-07-18",
                finish_reasons=["stop"],
                input_tokens=812,
                output_tokens=164,
            )
        attributes = record_attempt(span, telemetry, result, final=True)
    emit_result(telemetry, result, run, attributes)
