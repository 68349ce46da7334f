"""`agentscore eval --traces`: stored traces in, the generations in them scored, resumable."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from agentscore.cli import main
from agentscore.telemetry.setup import JsonlExporter
from tests.serve_support import ANSWER, WRONG, recorded_generations


def _agent_ids(spans: list[ReadableSpan]) -> list[str]:
    return [
        f"{s.get_span_context().trace_id:032x}{s.get_span_context().span_id:016x}"
        for s in spans
        if s.name.startswith("invoke_agent")
    ]


def _otlp_json_lines(spans: list[ReadableSpan], path: Path) -> None:
    with path.open("w") as out:
        for index in range(0, len(spans), 2):  # one request per trace, as a Collector writes
            request = json_format.MessageToDict(encode_spans(spans[index : index + 2]))
            for resource in request["resourceSpans"]:
                for scope in resource["scopeSpans"]:
                    for span in scope["spans"]:
                        for key in ("traceId", "spanId", "parentSpanId"):
                            if key in span:
                                span[key] = base64.b64decode(span[key]).hex()
            out.write(json.dumps(request) + "\n")


def _scores(out: Path) -> dict[str, float]:
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {row["id"]: row["scores"]["faithfulness"]["score"] for row in rows}


@pytest.mark.parametrize("shape", ["otlp-json", "agentscore-jsonl"])
def test_generations_in_stored_traces_are_scored_and_resumed(
    shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spans = recorded_generations([ANSWER, WRONG])
    traces = tmp_path / "traces.jsonl"
    if shape == "otlp-json":
        _otlp_json_lines(spans, traces)
    else:
        exporter = JsonlExporter(traces)
        exporter.export(spans)
        exporter.shutdown()
    out = tmp_path / "scores.jsonl"
    argv = ["eval", "--traces", str(traces), "--scorer", "faithfulness", "--out", str(out)]
    assert main(argv) == 0
    right, wrong = _agent_ids(spans)
    scores = _scores(out)
    assert set(scores) == {right, wrong}
    assert scores[right] == 1.0
    assert scores[wrong] < 0.5
    assert "faithfulness" in capsys.readouterr().out
    assert main(argv) == 0  # again: both found done, nothing scored twice
    assert "resuming: 2 records already scored" in capsys.readouterr().out
    assert len(out.read_text().splitlines()) == 2


def test_unreadable_lines_are_reported_and_the_rest_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = tmp_path / "traces.jsonl"
    exporter = JsonlExporter(traces)
    exporter.export(recorded_generations([ANSWER]))
    exporter.shutdown()
    with traces.open("a") as file:
        file.write('{"context": {"trace_id": "zz"}, "name": "x"}\n')
    argv = ["eval", "--traces", str(traces), "--scorer", "faithfulness", "--max-skip-rate", "0.5"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "traces.jsonl:3: skipped: not an OTLP/JSON request or span" in captured.err
    assert "1.000" in captured.out  # the mean of the one generation read


def test_eval_takes_a_runs_file_or_traces_not_both(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "--traces", "a.jsonl", "b.jsonl"])
    with pytest.raises(SystemExit):
        main(["eval"])
