"""`agentscore serve` exports to a real Phoenix: the evaluation shows under the app's span."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Literal

import pytest
from opentelemetry.sdk.resources import Resource

from tests.e2e.phoenix import PROJECT_NAME_ATTRIBUTE, PhoenixServer, Span, spans_named
from tests.support.serve import ANSWER, send_generations, serving

pytestmark = pytest.mark.e2e


def test_the_services_evaluation_lands_under_the_apps_span_in_phoenix(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    project = f"agentscore-serve-{uuid.uuid4().hex[:8]}"
    # Phoenix takes traces only, and files spans by their resource's project name: the
    # service names the app's project too, else its evaluations land in another project.
    otel = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": phoenix.otlp_traces_endpoint,
        "OTEL_RESOURCE_ATTRIBUTES": f"{PROJECT_NAME_ATTRIBUTE}={project}",
    }
    app = Resource.create({PROJECT_NAME_ATTRIBUTE: project, "service.name": "support-app"})
    # Inline: the service forwards the app's spans to Phoenix and adds its evaluations.
    forward = ("--forward", phoenix.otlp_traces_endpoint)
    with serving(tmp_path, phoenix.base_url, *forward, otel=otel) as serve:
        [(trace_id, span_id)] = send_generations(serve.url, [ANSWER], app)

        def arrived(spans: list[Span]) -> bool:
            return bool(spans_named(spans, "evaluation faithfulness")) and bool(
                spans_named(spans, "invoke_agent support")
            )

        spans = phoenix.wait_for_spans(project, arrived, timeout=60)
    [agent] = spans_named(spans, "invoke_agent support")
    [evaluation] = spans_named(spans, "evaluation faithfulness")
    assert agent["context"]["span_id"] == f"{span_id:016x}"
    assert evaluation["context"]["trace_id"] == f"{trace_id:032x}"
    assert evaluation["parent_id"] == f"{span_id:016x}"
    assert evaluation["span_kind"] == "EVALUATOR"
    assert evaluation["attributes"]["gen_ai.evaluation.score.value"] == 1.0
    assert evaluation["attributes"]["gen_ai.evaluation.score.label"] == "pass"


def test_an_async_sink_runs_under_serve_and_annotates_the_span_in_phoenix(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    # The scorers module gives `Evals(on_score=PhoenixAnnotations())`, an async sink: the
    # service awaits it for every result, so the annotation lands on the app's agent span.
    project = f"agentscore-serve-sink-{uuid.uuid4().hex[:8]}"
    otel = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": phoenix.otlp_traces_endpoint,
        "OTEL_RESOURCE_ATTRIBUTES": f"{PROJECT_NAME_ATTRIBUTE}={project}",
    }
    env = {"SERVE_TEST_SINK": "phoenix", "PHOENIX_COLLECTOR_ENDPOINT": phoenix.base_url}
    app = Resource.create({PROJECT_NAME_ATTRIBUTE: project, "service.name": "support-app"})
    forward = ("--forward", phoenix.otlp_traces_endpoint)
    with serving(tmp_path, phoenix.base_url, *forward, otel=otel, env=env) as serve:
        [(_, span_id)] = send_generations(serve.url, [ANSWER], app)
        annotations = phoenix.wait_for_annotations(project, "span", f"{span_id:016x}")
        log = serve.log.read_text()
    [annotation] = [item for item in annotations if item["name"] == "faithfulness"]
    assert annotation["span_id"] == f"{span_id:016x}"
    assert annotation["result"]["score"] == 1.0
    assert annotation["result"]["label"] == "pass"
    assert "never awaited" not in log


@pytest.mark.parametrize("compression", ["gzip", "deflate", "none"])
def test_phoenix_reads_the_services_export_in_each_compression(
    phoenix: PhoenixServer, compression: Literal["gzip", "deflate", "none"]
) -> None:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentscore._wire.otlp_out import OtlpSender, encode_spans
    from agentscore._wire.otlp_settings import OtlpSettings

    project = f"agentscore-encode-{compression}-{uuid.uuid4().hex[:8]}"
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({PROJECT_NAME_ATTRIBUTE: project}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agentscore.test")
    with tracer.start_as_current_span("evaluation faithfulness") as parent:
        parent.set_attributes({"gen_ai.evaluation.score.value": 0.5, "agentscore.tags": ("a", "b")})
        with tracer.start_as_current_span("chat judge-llm") as child:
            child.set_attribute("gen_ai.usage.input_tokens", 120)
    spans: list[ReadableSpan] = list(memory.get_finished_spans())
    sender = OtlpSender(OtlpSettings(phoenix.otlp_traces_endpoint, compression=compression))
    assert sender.deliver(spans, encode_spans).done
    seen = phoenix.wait_for_spans(project, lambda found: len(found) == 2)
    by_name = {span["name"]: span for span in seen}
    evaluation = by_name["evaluation faithfulness"]["attributes"]
    assert evaluation["gen_ai.evaluation.score.value"] == 0.5
    assert by_name["chat judge-llm"]["attributes"]["gen_ai.usage.input_tokens"] == 120
    assert (
        by_name["chat judge-llm"]["parent_id"]
        == by_name["evaluation faithfulness"]["context"]["span_id"]
    )
