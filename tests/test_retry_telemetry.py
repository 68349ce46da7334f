"""What a judge outage that passes shows, in process: a try that will be tried again is not a
failure. Its evaluation span says delayed (status unset, the attempt's number, the passing
cause), and nothing an alert or a person reads as failed (an ERROR status, a `fail` label, a
"failed" explanation, a `scorer_failed` log line, a failed outcome metric) appears until a
run has failed for good.

A real runner with a retry policy scores through `OpenAIJudge` over sockets against a
scripted endpoint that drops the connection N times, then answers; spans, log records and
metrics go to the SDK's in-memory exporters."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from structlog.testing import capture_logs

from agentscore import Telemetry
from agentscore.judges import OpenAIJudge
from agentscore.pipeline.retry import RetryPolicy
from agentscore.pipeline.runner import Runner, ScoreJob
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.run import ScorerRun
from agentscore.scorers import create_faithfulness_scorer
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion, network_failure
from tests.support.otel import new_log_exporter, number_point

JOBS = 3


def answer(index: int) -> str:
    return f"Order {40 + index} shipped on May 2."


@dataclass
class Exported:
    spans: InMemorySpanExporter
    logs: InMemoryLogRecordExporter
    metrics: InMemoryMetricReader
    telemetry: Telemetry

    def evaluation_spans(self) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name.startswith("evaluation ")]

    def outcomes(self) -> dict[str, int]:
        """agentscore.evaluation.runs by outcome."""
        counted: dict[str, int] = {}
        data = self.metrics.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name != "agentscore.evaluation.runs":
                        continue
                    for point in metric.data.data_points:
                        outcome = str((point.attributes or {}).get("agentscore.outcome"))
                        counted[outcome] = counted.get(outcome, 0) + int(number_point(point).value)
        return counted


@pytest.fixture
def exported() -> Exported:
    spans, logs, metrics = InMemorySpanExporter(), new_log_exporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    telemetry = Telemetry(
        tracer_provider=tracer_provider,
        logger_provider=logger_provider,
        meter_provider=MeterProvider(metric_readers=[metrics]),
    )
    return Exported(spans, logs, metrics, telemetry)


@contextmanager
def judge_down_for(failures: int | None) -> Iterator[str]:
    """A judge endpoint over sockets that drops the connection of the first `failures`
    requests of each prompt (None: of all), then answers that the claim is supported;
    yields its base URL. Counted per prompt (each run's own), so each run meets the outage
    however the runs' tries interleave."""
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def respond(body: dict[str, Any]) -> ScriptedReply:
        prompt = json.dumps(body["messages"])
        with lock:
            seen[prompt] = tried = seen.get(prompt, 0) + 1
        if failures is None or tried <= failures:
            return network_failure("connect")
        claim = {"claim": "The order shipped.", "verdict": "yes", "reason": "order record"}
        return chat_completion({"claims": [claim]})

    with ScriptedEndpoint(respond).serve() as url:
        yield url


def score_through_outage(
    exported: Exported, url: str, retry: RetryPolicy
) -> tuple[list[ScoreResult], list[MutableMapping[str, Any]]]:
    judge = OpenAIJudge("judge-model", base_url=url, api_key="sk-test", max_retries=0)
    scorer = create_faithfulness_scorer(judge, context=[answer(i) for i in range(JOBS)])
    runner = Runner(retry=retry)
    results: list[ScoreResult] = []
    runs = [
        ScorerRun(
            run_id=f"run-{index}",
            output=[{"role": "assistant", "content": answer(index)}],
            trace_id=f"{index + 1:032x}",
            span_id=f"{index + 1:016x}",
        )
        for index in range(JOBS)
    ]
    with capture_logs() as logs:
        for run in runs:
            job = ScoreJob(scorer, run, telemetry=exported.telemetry, on_result=results.append)
            assert runner.submit(job)
        assert runner.flush(timeout=30)
    runner.shutdown()
    return results, logs


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def reads_as_failed(span: ReadableSpan) -> list[str]:
    """What on `span` says failed: its name, an ERROR status, a `fail` label, a value that
    says "failed"."""
    found = []
    if "fail" in span.name.lower():
        found.append(f"name {span.name!r}")
    if span.status.status_code is StatusCode.ERROR:
        found.append(f"status {span.status.description}")
    for key, value in (span.attributes or {}).items():
        if key == "gen_ai.evaluation.score.label" and value == "fail":
            found.append("label fail")
        if isinstance(value, str) and "failed" in value.lower():
            found.append(f"{key}={value!r}")
    return found


def test_retried_attempts_say_delayed_and_only_the_final_result_is_counted(
    exported: Exported,
) -> None:
    with judge_down_for(2) as url:
        results, logs = score_through_outage(
            exported, url, RetryPolicy(first_delay=0.05, max_delay=0.1, window=30)
        )
    assert sorted(result.run_id for result in results) == [f"run-{i}" for i in range(JOBS)]
    assert {result.status for result in results} == {ScoreStatus.SCORED}

    evaluations = exported.evaluation_spans()
    assert len(evaluations) == 3 * JOBS  # two delayed tries and the final one, per job
    delayed = [s for s in evaluations if attrs(s)["agentscore.score.status"] == "delayed"]
    final = [s for s in evaluations if s not in delayed]
    # Exactly one final result per job, each scored on its third attempt.
    assert sorted(str(attrs(s)["agentscore.run.id"]) for s in final) == [
        f"run-{i}" for i in range(JOBS)
    ]
    assert {attrs(s)["gen_ai.evaluation.score.label"] for s in final} == {"pass"}
    assert {attrs(s)["agentscore.attempt"] for s in final} == {3}
    assert sorted(attrs(s)["agentscore.attempt"] for s in delayed) == [1] * JOBS + [2] * JOBS
    for span in delayed:
        assert span.status.status_code is StatusCode.UNSET
        assert attrs(span)["gen_ai.evaluation.score.label"] == "delayed"
        assert attrs(span)["agentscore.delay.cause"] == "JudgeConnectionError"
        assert "error.type" not in attrs(span)
    assert [(span.name, problem) for span in evaluations for problem in reads_as_failed(span)] == []

    # The judge's chat spans are client spans of single requests: a refused one says so,
    # as an HTTP client span would; the evaluation above it says what became of the run.
    others = [s for s in exported.spans.get_finished_spans() if s not in evaluations]
    assert {s.name for s in others if reads_as_failed(s)} <= {"chat judge-model"}

    # One gen_ai.evaluation.result record and one outcome count per job: the final ones.
    records = [item.log_record for item in exported.logs.get_finished_logs()]
    assert len(records) == JOBS
    assert {(r.attributes or {})["agentscore.score.status"] for r in records} == {"scored"}
    assert exported.outcomes() == {"scored": JOBS}
    events = [entry["event"] for entry in logs]
    assert "scorer_failed" not in events
    assert events.count("scorer_attempt_delayed") == 2 * JOBS


def test_a_run_that_fails_for_good_says_so_once_after_its_delayed_attempts(
    exported: Exported,
) -> None:
    with judge_down_for(None) as url:
        results, logs = score_through_outage(
            exported, url, RetryPolicy(first_delay=0.05, max_delay=0.05, window=0.5)
        )
    assert {result.status for result in results} == {ScoreStatus.FAILED}
    evaluations = exported.evaluation_spans()
    failed = [span for span in evaluations if reads_as_failed(span)]
    # One failed span per job, its last attempt's; every earlier one said delayed.
    assert sorted(str(attrs(s)["agentscore.run.id"]) for s in failed) == [
        f"run-{i}" for i in range(JOBS)
    ]
    for span in failed:
        assert span.status.status_code is StatusCode.ERROR
        assert attrs(span)["error.type"] == "JudgeConnectionError"
        attempts = [
            attrs(s)["agentscore.attempt"]
            for s in evaluations
            if attrs(s)["agentscore.run.id"] == attrs(span)["agentscore.run.id"]
        ]
        assert attrs(span)["agentscore.attempt"] == max(attempts) >= 2
    assert all(
        attrs(s)["agentscore.score.status"] == "delayed" for s in evaluations if s not in failed
    )
    assert exported.outcomes() == {"failed": JOBS}
    assert len(exported.logs.get_finished_logs()) == JOBS
    assert [entry["event"] for entry in logs].count("scorer_failed") == JOBS
