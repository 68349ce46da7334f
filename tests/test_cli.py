"""The command line: the offline demo and resumable batch evaluation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentscore.cli import main

ROOT = Path(__file__).resolve().parents[1]

GROUNDED = {
    "id": "grounded",
    "input": "When was Python first released?",
    "output": "Python was first released in 1991.",
    "context": ["The first version of Python was released in 1991."],
}
WRONG = {
    "id": "wrong",
    "input": "When was Python first released?",
    "output": "Python was first released in 2005.",
    "context": ["The first version of Python was released in 1991."],
}
TOOLS = {
    "id": "tools",
    "messages": [
        {"role": "user", "content": "Where is order 42?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup_order", "arguments": '{"order_id": 42}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"order_id": 42, "status": "shipped"}'},
        {"role": "assistant", "content": "Order 42 has shipped."},
    ],
}


def offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OTEL_"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


def write_jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_demo_runs_offline_and_prints_the_score_table(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "agentscore.cli", "demo"],
        cwd=tmp_path,
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    assert "replayed from a recording" in out
    assert "offline local judge" in out
    assert "faithfulness (higher=better)" in out
    assert "12 scored, 0 failed, 0 dropped, 0 pending" in out
    # The local judge's scores of the recorded answers: a grounded one, a half-invented one
    # and an invented one (the tool found no such order).
    rows = {line[:48].strip(): line[48:].split() for line in out.splitlines() if "  " in line}
    assert rows["Where is my order 1042?"] == ["1.00", "pass", "0.00", "pass"]
    assert rows["Is shipping free?"] == ["0.67", "pass", "0.33", "pass"]
    assert rows["What happened to order 3003?"] == ["0.00", "fail", "1.00", "fail"]
    traces = (tmp_path / "agentscore-traces.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in traces if "gen_ai.evaluation.result" in line]
    assert len(events) == 12


def test_eval_scores_a_file_and_resumes_without_rescoring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED, WRONG, TOOLS])
    out = tmp_path / "results.jsonl"

    assert main(["eval", str(data), "--out", str(out)]) == 0
    rows = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == {"grounded", "wrong", "tools"}
    assert rows["grounded"]["scores"]["faithfulness"]["score"] == 1.0
    assert rows["wrong"]["scores"]["faithfulness"]["score"] == 0.0
    assert rows["wrong"]["scores"]["hallucination"]["score"] == 1.0
    assert rows["tools"]["scores"]["faithfulness"]["score"] == 1.0
    table = capsys.readouterr().out
    assert "faithfulness" in table and "66.7%" in table

    # An interruption left a half-written line and one record unscored: rerun picks up.
    lines = out.read_text().splitlines()
    kept = [line for line in lines if '"id": "tools"' not in line]
    out.write_text("\n".join(kept) + '\n{"id": "tools", "scor')
    assert main(["eval", str(data), "--out", str(out)]) == 0
    assert "resuming: 2 records already scored" in capsys.readouterr().out
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines() if line.endswith("}")]
    assert sorted(ids) == ["grounded", "tools", "wrong"]


def test_malformed_records_are_reported_with_line_numbers_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "runs.jsonl"
    data.write_text(
        json.dumps(GROUNDED)
        + "\n{not json\n"
        + json.dumps({"input": "no output"})
        + "\n\n"
        + json.dumps({"input": "q", "output": "a", "context": [1, 2]})
        + "\n[1, 2]\n"
    )
    assert main(["eval", str(data), "--scorer", "faithfulness"]) == 0
    err = capsys.readouterr().err
    assert f"{data}:2: skipped: not valid JSON" in err
    assert f"{data}:3: skipped: a record needs 'input' and 'output'" in err
    assert f"{data}:5: skipped: 'context' must be a string or a list of strings" in err
    assert f"{data}:6: skipped: a record must be a JSON object" in err


def test_fail_under_gates_on_pass_rate(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED, WRONG])
    assert main(["eval", str(data), "--scorer", "faithfulness", "--fail-under", "0.5"]) == 0
    assert main(["eval", str(data), "--scorer", "faithfulness", "--fail-under", "0.9"]) == 1


def test_clear_errors_for_bad_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert main(["eval", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED])
    assert main(["eval", str(data), "--scorer", "toxicity"]) == 2
    assert "unknown scorer" in capsys.readouterr().err
    assert main(["eval", str(data), "--judge", "gpt-4o-mini"]) == 2
    assert "needs OPENAI_API_KEY" in capsys.readouterr().err


def test_unreachable_judge_endpoint_is_explained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-for-this-test-123456")
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED])
    assert main(["eval", str(data), "--judge", "judge-model", "--scorer", "faithfulness"]) == 0
    err = capsys.readouterr().err
    assert "every judge call failed (JudgeConnectionError)" in err
    assert "sk-unused" not in err
