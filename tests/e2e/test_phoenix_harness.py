"""Prove the Phoenix harness with plain OpenTelemetry spans (no agentscore involved)."""

from __future__ import annotations

import uuid

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import format_span_id, format_trace_id

from tests.e2e.phoenix import PROJECT_NAME_ATTRIBUTE, PhoenixServer, Span, spans_named

pytestmark = pytest.mark.e2e

PARENT = "invoke_agent demo"
CHILD = "evaluation faithfulness"


def test_nested_spans_round_trip_through_phoenix(phoenix: PhoenixServer) -> None:
    project = f"agentscore-e2e-{uuid.uuid4().hex[:8]}"
    provider = TracerProvider(
        resource=Resource.create(
            {PROJECT_NAME_ATTRIBUTE: project, "service.name": "agentscore-e2e"}
        )
    )
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=phoenix.otlp_traces_endpoint, timeout=10))
    )
    tracer = provider.get_tracer("agentscore.tests.e2e")
    try:
        with (
            tracer.start_as_current_span(
                PARENT,
                attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "demo"},
            ) as parent,
            tracer.start_as_current_span(
                CHILD,
                attributes={
                    "gen_ai.operation.name": "evaluation",
                    "gen_ai.evaluation.name": "faithfulness",
                    "gen_ai.evaluation.score.value": 0.5,
                    "gen_ai.evaluation.score.label": "partially_faithful",
                    "gen_ai.evaluation.explanation": "one of two claims is supported",
                },
            ) as child,
        ):
            pass
        assert provider.force_flush(timeout_millis=15_000), "OTLP export did not flush"
    finally:
        provider.shutdown()

    trace_id = format_trace_id(parent.get_span_context().trace_id)
    parent_span_id = format_span_id(parent.get_span_context().span_id)
    child_span_id = format_span_id(child.get_span_context().span_id)

    def both_arrived(spans: list[Span]) -> bool:
        return bool(spans_named(spans, PARENT)) and bool(spans_named(spans, CHILD))

    spans = phoenix.wait_for_spans(project, both_arrived, timeout=30)

    assert len(spans) == 2
    [parent_row] = spans_named(spans, PARENT)
    [child_row] = spans_named(spans, CHILD)

    assert parent_row["context"] == {"trace_id": trace_id, "span_id": parent_span_id}
    assert parent_row["parent_id"] is None
    assert child_row["context"] == {"trace_id": trace_id, "span_id": child_span_id}
    assert child_row["parent_id"] == parent_span_id

    # Attributes come back flat, keyed by their dotted OTel names, with their types kept.
    attributes = child_row["attributes"]
    assert attributes["gen_ai.evaluation.name"] == "faithfulness"
    assert attributes["gen_ai.evaluation.score.value"] == pytest.approx(0.5)
    assert isinstance(attributes["gen_ai.evaluation.score.value"], float)
    assert attributes["gen_ai.evaluation.score.label"] == "partially_faithful"
    assert attributes["gen_ai.evaluation.explanation"] == "one of two claims is supported"
    assert parent_row["attributes"]["gen_ai.agent.name"] == "demo"

    # The REST filters narrow server-side: the trace's evaluation span by name and trace id.
    [by_filter] = phoenix.fetch_spans(project, trace_id=trace_id, name=CHILD)
    assert by_filter["context"]["span_id"] == child_span_id


def test_unknown_project_reads_as_empty(phoenix: PhoenixServer) -> None:
    assert phoenix.fetch_spans(f"no-such-project-{uuid.uuid4().hex[:8]}") == []
