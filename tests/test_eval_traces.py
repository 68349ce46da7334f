"""`agentscore eval --traces`: stored traces in, the generations in them scored, resumable."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from agentscore.cli import main
from agentscore.telemetry.setup import JsonlExporter
from tests.support.eval_cli import offline_env
from tests.support.otel import span_context
from tests.support.serve import ANSWER, WRONG, recorded_generations


def _agent_ids(spans: list[ReadableSpan]) -> list[str]:
    return [
        f"{span_context(s).trace_id:032x}{span_context(s).span_id:016x}"
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


def _demo_traces(tmp_path: Path, **env: str) -> Path:
    completed = subprocess.run(
        [sys.executable, "-m", "agentscore.cli", "demo"],
        cwd=tmp_path,
        env={**offline_env(), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    return tmp_path / "agentscore-traces.jsonl"


def test_the_demos_trace_file_is_scored_again_as_the_demo_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = _demo_traces(tmp_path)
    out = tmp_path / "scores.jsonl"
    assert main(["eval", "--traces", str(traces), "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6  # the demo's six answers
    statuses = sorted(row["scores"]["faithfulness"]["status"] for row in rows)
    assert statuses == ["no_context", *["scored"] * 5]  # "Hi there!" called no tool
    faithfulness = sorted(
        row["scores"]["faithfulness"]["score"]
        for row in rows
        if row["scores"]["faithfulness"]["status"] == "scored"
    )
    assert faithfulness[-1] == 1.0 and faithfulness[0] == 0.0
    assert "skipped" not in capsys.readouterr().err


def test_traces_without_message_content_name_the_variable_that_captures_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = _demo_traces(tmp_path, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="false")
    assert main(["eval", "--traces", str(traces)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2, err  # one line for all six generations, one for the verdict
    assert err[0].startswith(f"agentscore eval: {traces}: 6 generations skipped: span ")
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true where the agent runs" in err[0]
    assert err[1] == f"agentscore eval: no generation in {str(traces)!r} can be scored (why: above)"


def test_a_file_without_generations_says_what_it_expected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = tmp_path / "logs.jsonl"
    traces.write_text('{"body": "a log record", "severity_text": "INFO"}\n')
    assert main(["eval", "--traces", str(traces)]) == 2
    err = capsys.readouterr().err
    assert "no generation found in" in err and "holding model spans" in err
    assert "one JSON object per line with input and output" not in err
