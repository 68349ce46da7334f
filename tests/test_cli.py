"""The command line: the offline demo and resumable batch evaluation."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentscore.cli import main
from tests.support.eval_cli import GROUNDED, WRONG, offline_env, results_of, write_jsonl

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
    assert "faithfulness ↑" in out and "answer relevancy ↑" in out and "tool calls ↑" in out
    assert "22 scored, 2 no context, 0 failed, 0 dropped, 0 pending" in out
    # The local judge's scores of the recorded answers: a grounded one, a half-invented one
    # and an invented one (the tool found no such order).
    rows = {line[:48].strip(): line[48:].split() for line in out.splitlines() if "  " in line}
    # Then answer relevancy and tool-call accuracy (every recorded call valid).
    grounded = ["1.00", "pass", "0.00", "pass", "1.00", "pass", "1.00", "pass"]
    assert rows["Where is my order 1042?"] == grounded
    # Every answer is on topic, invented or not (faithfulness judges that): "It is expected
    # to arrive ..." continues the statement that names the order.
    answered = [cells for question, cells in rows.items() if question.endswith("?")]
    assert len(answered) == 5
    assert all(cells[4:6] == ["1.00", "pass"] for cells in answered)
    # 2 of 3 claims supported is below the default pass lines (0.8 and 0.2).
    assert rows["Is shipping free?"][:4] == ["0.67", "fail", "0.33", "fail"]
    assert rows["What happened to order 3003?"][:4] == ["0.00", "fail", "1.00", "fail"]
    # A greeting that called no tool has nothing to be checked against: a dash, not a 0.00;
    # nor does it make a statement to judge, or a tool call.
    assert rows["Hi there!"] == ["-", "(no", "context)"] * 2 + ["-", "(no", "claims)"] * 2
    # The user's own "shoes I received 45 days ago" grounds that claim; "outside the return
    # window" (45 > 30) is an inference the local judge leaves unsure.
    assert rows["Can I still return shoes I received 45 days ago?"][:4] == [
        "0.67",
        "fail",
        "0.33",
        "fail",
    ]
    traces = (tmp_path / "agentscore-traces.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in traces if "gen_ai.evaluation.result" in line]
    assert len(events) == 24


def test_demo_reasons_show_every_claim_with_its_verdict_and_whole_words(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "agentscore.cli", "demo", "--reasons"],
        cwd=tmp_path,
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    reasons = completed.stdout.split("Why each answer scored as it did:")[1].split(" answers in ")[
        0
    ]
    block = reasons.split("Q: Is shipping free?")[1].split("\nQ: ")[0]
    lines = block.splitlines()
    assert lines[1] == "  faithfulness 0.67 fail"
    claims = [
        line.split(maxsplit=1)
        for line in lines
        if line.startswith("    ") and not line.startswith("     ")
    ]
    assert claims[:3] == [
        ["supported", "Standard shipping is free on orders over $50."],
        ["supported", "Express shipping costs $15."],
        ["unverifiable", "Members get free express shipping on every order."],
    ]
    # Wrapped, never cut: the reason reads back whole when its lines are joined.
    why = " ".join(
        line.strip()
        for line in lines[
            lines.index(next(line for line in lines if "Members get free" in line)) + 1 :
        ][:2]
    )
    assert why.startswith("why: Not supported by the context: 'every' claims more than")
    assert "…" not in reasons
    assert max(len(line) for line in reasons.splitlines()) <= 100
    assert "Q: Hi there!\n  faithfulness not scored: no context to check against" in reasons


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
    assert all(line == line.rstrip() for line in table.splitlines())

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
    assert main(["eval", str(data), "--scorer", "faithfulness"]) == 2
    err = capsys.readouterr().err
    assert "4 of 5 records skipped (80%), more than --max-skip-rate 10%" in err
    assert main(["eval", str(data), "--scorer", "faithfulness", "--max-skip-rate", "0.8"]) == 0
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
    assert main(["eval", str(data), "--judge", "judge-model", "--scorer", "faithfulness"]) == 2
    captured = capsys.readouterr()
    assert "faithfulness  -     0.0%       0       1" in captured.out
    err = captured.err
    assert "every judge request failed" in err
    assert "cannot be reached: check OPENAI_BASE_URL" in err
    assert "sk-unused" not in err


HALF_INVENTED = {
    "id": "half",
    "input": "When was Python first released?",
    "output": "Python was first released in 1991. It was written at Google in Zurich.",
    "context": ["The first version of Python was released in 1991."],
}


def test_each_scorer_has_its_own_threshold_in_its_own_direction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "runs.jsonl", [HALF_INVENTED])
    strict, lenient = tmp_path / "strict.jsonl", tmp_path / "lenient.jsonl"

    # The defaults (0.8 and 0.2) fail an answer with half its claims invented, in both scorers.
    assert main(["eval", str(data), "--out", str(strict), "--fail-under", "1"]) == 1
    scores = results_of(strict)["half"]
    assert scores["faithfulness"] == {**scores["faithfulness"], "score": 0.5, "label": "fail"}
    assert scores["hallucination"] == {**scores["hallucination"], "score": 0.5, "label": "fail"}
    err = capsys.readouterr().err
    assert "faithfulness pass rate 0.0%, hallucination pass rate 0.0% below --fail-under" in err

    # Loosening means raising hallucination's line and lowering faithfulness's.
    argv = ["--threshold", "faithfulness=0.5", "--threshold", "hallucination=0.5"]
    assert main(["eval", str(data), "--out", str(lenient), "--fail-under", "1", *argv]) == 0
    scores = results_of(lenient)["half"]
    assert scores["faithfulness"]["passed"] is True
    assert scores["hallucination"]["passed"] is True

    # Only one of them loosened: the gate names the scorer that failed.
    assert main(["eval", str(data), "--fail-under", "1", "--threshold", "hallucination=0.5"]) == 1
    err = capsys.readouterr().err
    assert "faithfulness pass rate 0.0% below --fail-under 100.0%" in err
    assert "hallucination pass rate" not in err


def test_an_invented_sentence_in_most_answers_fails_the_ci_gate(tmp_path: Path) -> None:
    invented = {
        **HALF_INVENTED,
        "output": "Python was first released in 1991. "
        "It was released by Microsoft. Its logo is a red snake.",
    }
    records = [{**invented, "id": f"r{n}"} for n in range(18)]
    records += [{**GROUNDED, "id": f"g{n}"} for n in range(2)]
    data = write_jsonl(tmp_path / "runs.jsonl", records)
    assert main(["eval", str(data), "--fail-under", "0.9"]) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--threshold", "0.8"], "expected SCORER=VALUE"),
        (["--threshold", "faithfulness=high"], "expected SCORER=VALUE"),
        (["--judge-price", "0.15"], "expected IN,OUT dollars per million tokens"),
        (["--judge-price", "0.15,-1"], "expected IN,OUT dollars per million tokens"),
    ],
)
def test_malformed_option_values_are_refused_by_the_parser(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED])
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", str(data), *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--fail-under", "90"], "--fail-under 90 must lie in [0, 1]"),
        (["--fail-under", "-0.1"], "--fail-under -0.1 must lie in [0, 1]"),
        (["--threshold", "faithfulness=1.5"], "--threshold faithfulness=1.5 must lie in [0, 1]"),
        (["--threshold", "toxicity=0.5"], "--threshold names an unknown scorer 'toxicity'"),
        (["--max-skip-rate", "2"], "--max-skip-rate 2 must lie in [0, 1]"),
        (["--max-consecutive-failures", "-1"], "--max-consecutive-failures must be 0"),
        (["--progress-every", "0"], "--progress-every must be a positive number of seconds"),
    ],
)
def test_out_of_range_options_are_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED])
    assert main(["eval", str(data), *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "found"),
    [
        (b"", "the file is empty"),
        (b"\n\n", "the file is empty"),
        (b"id,input,output\n1,When?,In 1991.\n2,Where?,Here.\n", "3 lines skipped"),
        (bytes(range(256)) * 4, "lines skipped"),
        (json.dumps([GROUNDED, WRONG]).encode(), "1 lines skipped"),
        (json.dumps([GROUNDED, WRONG], indent=2).encode(), "lines skipped"),
    ],
    ids=["empty", "blank", "csv", "binary", "json-array", "pretty-json-array"],
)
def test_a_file_without_readable_records_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, found: str
) -> None:
    data = tmp_path / "runs.jsonl"
    data.write_bytes(content)
    assert main(["eval", str(data), "--max-skip-rate", "1"]) == 2
    err = capsys.readouterr().err
    assert f"no readable records in {str(data)!r} (" in err
    assert found in err
    assert "expected JSONL: one JSON object per line" in err


def test_a_directory_is_named_as_such(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(tmp_path)]) == 2
    assert "it is a directory" in capsys.readouterr().err


def test_duplicate_ids_are_reported_and_every_record_is_scored_across_a_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [{**GROUNDED, "id": "a"}, {**WRONG, "id": "a"}, {**GROUNDED, "id": "b"}]
    data = write_jsonl(tmp_path / "runs.jsonl", records)
    out = tmp_path / "results.jsonl"
    assert main(["eval", str(data), "--out", str(out), "--scorer", "faithfulness"]) == 0
    err = capsys.readouterr().err
    assert f"{data}:2: duplicate id 'a' (first on line 1); recorded as 'a#2'" in err
    scores = results_of(out)
    assert {key: value["faithfulness"]["score"] for key, value in scores.items()} == {
        "a": 1.0,
        "a#2": 0.0,
        "b": 1.0,
    }

    # Interrupted after the first 'a': the resume scores the second one and counts one done.
    first = out.read_text().splitlines()
    out.write_text(next(line for line in first if '"id": "a"' in line) + "\n")
    assert main(["eval", str(data), "--out", str(out), "--scorer", "faithfulness"]) == 0
    assert "resuming: 1 records already scored" in capsys.readouterr().out
    assert sorted(results_of(out)) == ["a", "a#2", "b"]


def test_ctrl_c_ends_cleanly_with_the_resume_hint(tmp_path: Path) -> None:
    received = threading.Event()

    class Hanging(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # a judge that never answers
            received.set()
            time.sleep(30)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hanging)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED, WRONG])
    env = {
        **offline_env(),
        "OPENAI_BASE_URL": f"http://127.0.0.1:{server.server_port}/v1",
        "OPENAI_API_KEY": "sk-test-not-a-real-key-000",
    }
    out = tmp_path / "results.jsonl"
    # Python ignores SIGINT when it starts with it ignored, as every job a script puts in
    # the background does: the CLI gets the default handler back, as in a terminal.
    with_ctrl_c = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from agentscore.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            with_ctrl_c,
            "eval",
            str(data),
            "--judge",
            "judge-model",
            "--out",
            str(out),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert received.wait(60), "the judge got no request"
        process.send_signal(signal.SIGINT)
        _stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
        server.shutdown()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert (
        f"agentscore eval: interrupted: 0 of 2 records scored and saved in {out}; "
        "run the same command again to resume" in stderr
    )


def test_an_out_file_with_a_malformed_line_is_refused_before_anything_is_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED, WRONG])
    entry = {"score": "high", "passed": True, "status": "scored"}
    rows = [{"id": "grounded", "scores": {}}, {"id": "wrong", "scores": {"faithfulness": entry}}]
    out = write_jsonl(tmp_path / "results.jsonl", rows)
    before = out.read_text()
    argv = ["eval", str(data), "--out", str(out), "--scorer", "faithfulness", "--fail-under", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert (
        f"agentscore eval: --out {out}:2: the 'faithfulness' score: 'score' is a string "
        '"high"; expected a number' in err
    )
    assert out.read_text() == before
