"""What a user sees of the service's scores in a real Phoenix, read through Phoenix's own REST
API: the app exports over OTLP/gRPC to `agentscore serve`, which forwards its spans to Phoenix
and adds its evaluations there."""

from __future__ import annotations

import json
import re
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.e2e.phoenix import PROJECT_NAME_ATTRIBUTE, PhoenixServer, Span, spans_named
from tests.support.serve import ANSWER, WRONG, ServeProcess, serving, traced_generation

pytestmark = pytest.mark.e2e


def serve_into_phoenix(
    phoenix: PhoenixServer, tmp_path: Path, project: str, *args: str
) -> AbstractContextManager[ServeProcess]:
    otel = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": phoenix.otlp_traces_endpoint,
        "OTEL_RESOURCE_ATTRIBUTES": f"{PROJECT_NAME_ATTRIBUTE}={project}",
    }
    forward = ("--forward", phoenix.otlp_traces_endpoint)
    return serving(tmp_path, phoenix.base_url, *forward, *args, otel=otel)


def send_over_grpc(target: str, project: str, answers: list[str]) -> list[tuple[int, int]]:
    app = Resource.create({PROJECT_NAME_ATTRIBUTE: project, "service.name": "support-app"})
    provider = TracerProvider(resource=app)
    exporter = OTLPSpanExporter(endpoint=f"http://{target}", insecure=True)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sent = [traced_generation(provider, answer, request=i) for i, answer in enumerate(answers)]
    provider.shutdown()
    return sent


def evaluations_arrived(count: int) -> Any:
    def arrived(spans: list[Span]) -> bool:
        return len(spans_named(spans, "evaluation faithfulness")) == count

    return arrived


def test_the_evaluation_span_shows_the_verdict_as_its_output_and_no_answer_by_default(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    project = f"agentscore-glance-{uuid.uuid4().hex[:8]}"
    with serve_into_phoenix(phoenix, tmp_path, project) as serve:
        [(_, span_id)] = send_over_grpc(serve.grpc_target, project, [WRONG])
        spans = phoenix.wait_for_spans(project, evaluations_arrived(1), timeout=60)
    [evaluation] = spans_named(spans, "evaluation faithfulness")
    assert evaluation["parent_id"] == f"{span_id:016x}"
    attributes = evaluation["attributes"]
    output = json.loads(attributes["output.value"])
    assert output["label"] == "fail"
    assert output["score"] == attributes["gen_ai.evaluation.score.value"] < 0.5
    # Without content capture: counts, never the answer's text.
    assert re.fullmatch(
        r"1 claim: 0 supported, \d contradicted, \d unverifiable", output["explanation"]
    )
    assert "input.value" not in attributes
    assert "FedEx" not in json.dumps(evaluation)


def test_with_capture_content_the_evaluation_span_shows_the_answer_as_its_input(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    project = f"agentscore-glance-{uuid.uuid4().hex[:8]}"
    with serve_into_phoenix(phoenix, tmp_path, project, "--capture-content") as serve:
        send_over_grpc(serve.grpc_target, project, [ANSWER])
        spans = phoenix.wait_for_spans(project, evaluations_arrived(1), timeout=60)
    [evaluation] = spans_named(spans, "evaluation faithfulness")
    attributes = evaluation["attributes"]
    assert attributes["input.value"] == ANSWER
    output = json.loads(attributes["output.value"])
    assert (output["label"], output["score"]) == ("pass", 1.0)
    # The scorer's reason, not the content-free count.
    assert output["explanation"] == attributes["gen_ai.evaluation.explanation"]
    assert not output["explanation"].endswith("unverifiable")
