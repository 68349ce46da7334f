"""Scores on the trace: an evaluation span and a gen_ai.evaluation.result log record.

This module only emits; the pipeline (`agentscore.pipeline.evaluate`) decides what and when.

A span cannot change after it ends, and scores arrive after the agent's span has ended. So
each result becomes (1) a log record, the GenAI conventions' evaluation event, and (2) an
evaluation span for trace-only backends, both parented to the agent span's saved context.
The judge's own chat spans nest under the evaluation span because scoring runs inside it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import (
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
)

from agentscore.messages import assistant_text
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.run import ScorerRun
from agentscore.telemetry import ledger, semconv
from agentscore.telemetry.core import Telemetry, _current, use_telemetry

__all__ = [
    "ATTEMPT_ATTRIBUTE",
    "CLAIMS_ATTRIBUTE",
    "DELAYED",
    "DELAY_CAUSE_ATTRIBUTE",
    "STATUS_ATTRIBUTE",
    "averaged_score",
    "claims_for",
    "emit_result",
    "evaluation_attributes",
    "evaluation_span",
    "explanation_for",
    "label_for",
    "parent_context",
    "record_attempt",
    "record_delayed",
    "record_dropped",
    "record_outcome",
    "record_usage",
]


# With content capture on: a JSON list of {claim, verdict, reason}, so a person reading the
# evaluation sees which claim failed and why.
CLAIMS_ATTRIBUTE = "agentscore.protocol"
STATUS_ATTRIBUTE = "agentscore.score.status"
# The status and label of an attempt whose judge failed for a passing reason: it will be
# tried again.
DELAYED = "delayed"
# Which try of its run an evaluation span is (on delayed attempts, and on final ones after
# the first); a delayed attempt's passing cause (an error type).
ATTEMPT_ATTRIBUTE = "agentscore.attempt"
DELAY_CAUSE_ATTRIBUTE = "agentscore.delay.cause"


def parent_context(run: ScorerRun) -> Context | None:
    """The agent span's context saved in the run, or None when the run was not traced."""
    if not run.trace_id or not run.span_id:
        return None
    try:
        span_context = SpanContext(
            trace_id=int(run.trace_id, 16),
            span_id=int(run.span_id, 16),
            is_remote=False,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
    except ValueError:
        return None
    if not span_context.is_valid:
        return None
    return trace.set_span_in_context(NonRecordingSpan(span_context))


@contextmanager
def evaluation_span(telemetry: Telemetry, scorer_id: str, run: ScorerRun) -> Iterator[Span]:
    """The evaluation span of one scorer on one run, current (with `telemetry`) while open,
    so the judge's chat spans nest under it."""
    token = use_telemetry(telemetry)
    attributes = {
        semconv.EVALUATION_NAME: scorer_id,
        semconv.OPENINFERENCE_SPAN_KIND: "EVALUATOR",
        **_run_attributes(run),
    }
    try:
        with telemetry.tracer.start_as_current_span(
            f"evaluation {scorer_id}",
            context=parent_context(run),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
        ) as span:
            yield span
    finally:
        _current.reset(token)


def record_attempt(
    span: Span, telemetry: Telemetry, result: ScoreResult, *, final: bool, attempt: int = 1
) -> dict[str, Any]:
    """Put `result`, the `attempt`-th try of its run, on its evaluation span.

    An attempt that is not `final` (its judge failed for a passing reason and it will be
    tried again) is not a failure, and nothing on its span says one: its status stays unset,
    its label and status say delayed, and the passing cause is `agentscore.delay.cause`, not
    `error.type`. Returns the attributes set, which `emit_result` takes again for a final
    attempt."""
    if not final:
        attributes = _delayed_attributes(result, telemetry.capture_content, attempt)
        span.set_attributes(attributes)
        return attributes
    attributes = evaluation_attributes(result, telemetry.capture_content)
    if attempt > 1:
        attributes[ATTEMPT_ATTRIBUTE] = attempt
    span.set_attributes(attributes)
    if result.error is not None:
        span.set_status(Status(StatusCode.ERROR, result.error.type))
    return attributes


def _delayed_attributes(result: ScoreResult, capture_content: bool, attempt: int) -> dict[str, Any]:
    attributes = evaluation_attributes(result, capture_content)
    attributes.pop(semconv.ERROR_TYPE, None)
    cause = result.error.type if result.error is not None else "unknown"
    explanation = f"delayed: attempt {attempt} got no verdict ({cause}); it will be tried again"
    verdict = {"label": DELAYED, "score": None, "explanation": explanation}
    attributes.update(
        {
            STATUS_ATTRIBUTE: DELAYED,
            semconv.EVALUATION_SCORE_LABEL: DELAYED,
            semconv.EVALUATION_EXPLANATION: explanation,
            semconv.OUTPUT_VALUE: json.dumps(verdict, ensure_ascii=False),
            ATTEMPT_ATTRIBUTE: attempt,
            DELAY_CAUSE_ATTRIBUTE: cause,
        }
    )
    return attributes


def emit_result(
    telemetry: Telemetry,
    result: ScoreResult,
    run: ScorerRun,
    attributes: Mapping[str, Any] | None = None,
    *,
    counted: bool = True,
) -> None:
    """The final result's gen_ai.evaluation.result log record and metrics. `attributes`:
    what `record_attempt` put on the evaluation span, the same for a final attempt.
    `counted=False`: no metric (a run counted as dropped still gets its record)."""
    telemetry.logger.emit(
        event_name=semconv.EVALUATION_EVENT,
        context=parent_context(run),
        attributes={
            **(
                evaluation_attributes(result, telemetry.capture_content)
                if attributes is None
                else attributes
            ),
            **_run_attributes(run),
        },
    )
    if counted:
        _record_metrics(telemetry, result)


def _run_attributes(run: ScorerRun) -> dict[str, str]:
    """What the judged run adds to its evaluation's span and event: the conversation it
    belongs to (a conversation's evaluation is found by its id, not only by its trace)."""
    return {semconv.CONVERSATION_ID: run.conversation_id} if run.conversation_id else {}


def record_outcome(
    telemetry: Telemetry, outcome: str, scorer_id: str, agent_name: str | None
) -> None:
    """One run of `scorer_id` ended as `outcome` (agentscore.telemetry.ledger) without a
    result emitted for it."""
    telemetry.ledger.add(outcome, (scorer_id,), agent_name)


def record_dropped(telemetry: Telemetry, scorer_id: str, agent_name: str | None) -> None:
    record_outcome(telemetry, ledger.DROPPED, scorer_id, agent_name)


def record_delayed(telemetry: Telemetry, result: ScoreResult) -> None:
    """An attempt that will be tried again: counted apart, since its run has not ended."""
    telemetry.instruments.delayed.add(1, _scorer_attributes(result))


def record_usage(telemetry: Telemetry, result: ScoreResult) -> None:
    """What the judge of one attempt (final or delayed) spent: requests, tokens and cost, per
    scorer and judge model. An attempt that sent nothing (the local judge, a cache hit)
    records nothing."""
    usage = result.judge_usage
    if not (usage.calls or usage.input_tokens or usage.output_tokens):
        return
    instruments = telemetry.instruments
    attributes = _scorer_attributes(result)
    attributes[semconv.REQUEST_MODEL] = result.judge_model or ""
    instruments.judge_requests.add(usage.calls, attributes)
    for kind, tokens in (("input", usage.input_tokens), ("output", usage.output_tokens)):
        instruments.judge_tokens.add(tokens, {**attributes, semconv.TOKEN_TYPE: kind})
    if result.cost is not None:
        instruments.judge_cost.add(result.cost, attributes)


def evaluation_attributes(result: ScoreResult, capture_content: bool) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        semconv.EVALUATION_NAME: result.scorer_id,
        STATUS_ATTRIBUTE: result.status.value,
        "agentscore.run.id": result.run_id,
        "agentscore.judge.model": result.judge_model or "",
        "agentscore.judge.calls": result.judge_usage.calls,
        "agentscore.judge.cache_hits": result.judge_usage.cache_hits,
        "agentscore.judge.input_tokens": result.judge_usage.input_tokens,
        "agentscore.judge.output_tokens": result.judge_usage.output_tokens,
    }
    if result.cost is not None:
        attributes[semconv.JUDGE_COST] = result.cost
    if averaged_score(result) is not None:
        attributes[semconv.EVALUATION_SCORE_VALUE] = result.score
    label = label_for(result)
    if label is not None:
        attributes[semconv.EVALUATION_SCORE_LABEL] = label
    explanation = explanation_for(result, capture_content)
    if explanation:
        attributes[semconv.EVALUATION_EXPLANATION] = explanation
    claims = claims_for(result) if capture_content else []
    if claims:
        attributes[CLAIMS_ATTRIBUTE] = json.dumps(claims, ensure_ascii=False)
    # What a backend shows as the span's input and output (instead of the response id): the
    # evaluated answer, which is content, and the verdict with its explanation.
    answer = assistant_text(result.output) if capture_content else ""
    if answer:
        attributes[semconv.INPUT_VALUE] = answer
        attributes[semconv.INPUT_MIME_TYPE] = "text/plain"
    verdict = {"label": label, "score": averaged_score(result), "explanation": explanation}
    attributes[semconv.OUTPUT_VALUE] = json.dumps(verdict, ensure_ascii=False)
    attributes[semconv.OUTPUT_MIME_TYPE] = "application/json"
    if result.response_id:
        attributes[semconv.RESPONSE_ID] = result.response_id
    if result.agent_name:
        attributes[semconv.AGENT_NAME] = result.agent_name
    if result.error is not None:
        attributes[semconv.ERROR_TYPE] = result.error.type
    return attributes


def averaged_score(result: ScoreResult) -> float | None:
    """The score a backend may average: none for a run with nothing to judge, whose 0 is a
    placeholder that would drag every mean down."""
    return result.score if result.status is ScoreStatus.SCORED else None


def label_for(result: ScoreResult) -> str | None:
    """pass / fail; the status ("no_claims", "no_context", "undecided") for a run that neither
    passes nor fails."""
    if result.status in (ScoreStatus.NO_CLAIMS, ScoreStatus.NO_CONTEXT, ScoreStatus.UNDECIDED):
        return result.status.value
    return result.label


def claims_for(result: ScoreResult) -> list[dict[str, str]]:
    """Each claim with its verdict and reason, from a claim scorer's verdicts; [] otherwise.
    They quote the answer, so exporters send them only with content capture on."""
    verdicts = (
        result.analyze_step_result.get("verdicts")
        if isinstance(result.analyze_step_result, dict)
        else None
    )
    if not isinstance(verdicts, list):
        return []
    return [
        {key: str(item.get(key, "")) for key in ("claim", "verdict", "reason")}
        for item in verdicts
        if isinstance(item, dict)
    ]


def explanation_for(result: ScoreResult, capture_content: bool) -> str:
    """The reason when content may be captured; else counts of verdicts, because the reason
    quotes the answer's claims."""
    if capture_content and result.reason:
        return result.reason
    if result.error is not None:
        return f"failed: {result.error.type}"
    if result.status is ScoreStatus.NO_CONTEXT:
        return "no context to check the output against"
    verdicts = (
        result.analyze_step_result.get("verdicts")
        if isinstance(result.analyze_step_result, dict)
        else None
    )
    if not isinstance(verdicts, list):
        return ""
    if not verdicts:
        return "no claims to check"
    counts = Counter(item.get("verdict") for item in verdicts if isinstance(item, dict))
    return (
        f"{len(verdicts)} claim{'' if len(verdicts) == 1 else 's'}: "
        f"{counts.get('yes', 0)} supported, "
        f"{counts.get('no', 0)} contradicted, {counts.get('unsure', 0)} unverifiable"
    )


def _record_metrics(telemetry: Telemetry, result: ScoreResult) -> None:
    # no_context and undecided are outcomes of their own: neither scored nor failed.
    outcome = {
        ScoreStatus.FAILED: ledger.FAILED,
        ScoreStatus.NO_CONTEXT: ledger.NO_CONTEXT,
        ScoreStatus.UNDECIDED: ledger.UNDECIDED,
    }.get(result.status, ledger.SCORED)
    # pass / fail (or no_claims) beside the outcome: a pass rate is a ratio of one counter.
    label = label_for(result) if outcome == ledger.SCORED else None
    telemetry.ledger.add(outcome, (result.scorer_id,), result.agent_name, label)
    score = averaged_score(result)
    if score is not None:
        telemetry.instruments.scores.record(score, _scorer_attributes(result))


def _scorer_attributes(result: ScoreResult) -> dict[str, str]:
    attributes = {semconv.EVALUATION_NAME: result.scorer_id}
    if result.agent_name:
        attributes[semconv.AGENT_NAME] = result.agent_name
    return attributes
