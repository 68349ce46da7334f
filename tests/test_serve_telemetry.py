"""The service's spans and log records, made by the OTel SDK's providers into the outbox
(agentscore/serve/export.py): ids derived from the job's key, every span sampled, exceptions
by their type only, records under the agent's span. Read back from what the export wrote."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from agentscore.serve.export import Exporters, build_exporters, keyed_ids

AGENT_SPAN = SpanContext(
    trace_id=0x5B8EFFF798038103D269B633813FC60C,
    span_id=0xEEE19B7EC3C1B174,
    is_remote=True,
    trace_flags=TraceFlags(TraceFlags.DEFAULT),  # the app did not sample it: we still do
)
KEY = ("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174", "faithfulness")
SECRET = "sk-live-0123456789abcdef"


@pytest.fixture
def exporters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Exporters]:
    for variable in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")  # the app's, not the service's
    built = build_exporters(tmp_path / "evaluations.jsonl")
    yield built
    built.shutdown()


def exported(exporters: Exporters) -> list[dict[str, Any]]:
    assert exporters.export()
    path = Path(exporters.destination)
    return [json.loads(line) for line in path.read_text().splitlines()]


def evaluate(exporters: Exporters, attempt: int = 0) -> None:
    """What the pipeline does for one job: an evaluation span with a judge span under it,
    and the evaluation event, all under the agent's span."""
    tracer = exporters.tracer_provider.get_tracer("agentscore")
    logger = exporters.logger_provider.get_logger("agentscore")
    parent = trace.set_span_in_context(NonRecordingSpan(AGENT_SPAN))
    with (
        keyed_ids(KEY, attempt),
        tracer.start_as_current_span("evaluation faithfulness", context=parent),
    ):
        tracer.start_span("chat judge").end()
        logger.emit(
            event_name="gen_ai.evaluation.result",
            context=parent,
            attributes={"gen_ai.evaluation.name": "faithfulness"},
        )


def span_ids(records: list[dict[str, Any]]) -> list[str]:
    return [r["context"]["span_id"] for r in records if "context" in r]


def test_the_same_job_exported_again_is_the_same_spans(
    exporters: Exporters, tmp_path: Path
) -> None:
    evaluate(exporters)
    first = span_ids(exported(exporters))
    # As after a crash: a new service, the same job, scored from its stored result again.
    again = build_exporters(tmp_path / "again.jsonl")
    try:
        evaluate(again)
        assert span_ids(exported(again)) == first
        evaluate(again, attempt=1)  # a later attempt is another evaluation
        assert not set(span_ids(exported(again))[2:]) & set(first)
    finally:
        again.shutdown()
    assert len(set(first)) == 2


def test_every_span_is_sampled_under_the_agents_span(exporters: Exporters) -> None:
    evaluate(exporters)
    records = exported(exporters)
    judge, evaluation, event = (
        next(r for r in records if r.get("name") == "chat judge"),
        next(r for r in records if r.get("name") == "evaluation faithfulness"),
        next(r for r in records if r.get("event_name") == "gen_ai.evaluation.result"),
    )
    assert evaluation["parent_id"] == f"0x{AGENT_SPAN.span_id:016x}"
    assert evaluation["context"]["trace_id"] == f"0x{AGENT_SPAN.trace_id:032x}"
    assert judge["parent_id"] == evaluation["context"]["span_id"]
    assert event["span_id"] == f"0x{AGENT_SPAN.span_id:016x}"
    assert event["trace_id"] == f"0x{AGENT_SPAN.trace_id:032x}"


def test_an_exception_is_exported_by_its_type_only(exporters: Exporters) -> None:
    tracer = exporters.tracer_provider.get_tracer("agentscore")
    # Recorded as the SDK does by default (the pipeline itself records none); the status
    # is left alone, as the pipeline's spans ask.
    with (
        pytest.raises(RuntimeError),
        tracer.start_as_current_span("evaluation", set_status_on_exception=False),
    ):
        raise RuntimeError(f"judge said: bad key {SECRET}")
    exporters.logger_provider.get_logger("agentscore").emit(
        body="scoring failed", exception=RuntimeError(f"bad key {SECRET}")
    )
    records = exported(exporters)
    [span] = [r for r in records if r.get("name") == "evaluation"]
    [event] = span["events"]
    assert event["name"] == "exception"
    assert event["attributes"]["exception.type"] == "RuntimeError"
    assert "exception.message" not in event["attributes"]
    [record] = [r for r in records if r.get("body") == "scoring failed"]
    assert record["attributes"] == {"exception.type": "RuntimeError"}
    assert SECRET not in json.dumps(records)
