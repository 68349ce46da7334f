"""`agentscore eval` in CI: JUnit XML, the markdown summary, plain progress, failures summed
up, and the circuit breaker that stops a run whose judge keeps failing."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from agentscore.cli import main
from tests.support.chat import judge_reply
from tests.support.eval_cli import (
    GROUNDED,
    WRONG,
    cases_by_outcome,
    offline_env,
    results_of,
    write_jsonl,
)
from tests.support.http_server import Reply, Request, http_server, json_reply

EMPTY = {"id": "empty", "input": "Hello?", "output": "", "context": ["Python dates from 1991."]}


def twenty_records() -> list[dict[str, Any]]:
    """14 grounded answers, 5 with an invented year, 1 with nothing to judge."""
    records = [{**GROUNDED, "id": f"ok-{n}"} for n in range(14)]
    records += [{**WRONG, "id": f"bad-{n}"} for n in range(5)]
    return [*records, EMPTY]


def test_junit_of_a_run_with_failures_has_one_failure_per_failing_record_and_scorer(
    tmp_path: Path,
) -> None:
    data = write_jsonl(tmp_path / "runs.jsonl", twenty_records())
    junit, out = tmp_path / "report.xml", tmp_path / "results.jsonl"
    assert main(["eval", str(data), "--junit", str(junit), "--out", str(out)]) == 0

    suites = cases_by_outcome(junit)
    assert set(suites) == {"faithfulness", "hallucination"}
    rows = results_of(out)
    for scorer, outcomes in suites.items():
        failing = {name: result for name, result in outcomes["failure"]}
        assert sorted(failing) == [f"bad-{n}" for n in range(5)]
        for name, failure in failing.items():
            reason = rows[name][scorer]["reason"]
            assert reason and reason in failure.message
            # The failing claim and the judge's reason for it are in the body.
            assert "contradicted: 'Python was first released in 2005.'" in failure.text
            assert "why: " in failure.text
        assert [name for name, _ in outcomes["skipped"]] == ["empty"]
        assert "no_claims" in outcomes["skipped"][0][1].message
        assert len(outcomes["passed"]) == 14 and not outcomes["error"]
    root = ElementTree.parse(junit).getroot()
    assert root.tag == "testsuites"
    assert {key: root.get(key) for key in ("tests", "failures", "errors")} == {
        "tests": "40",
        "failures": "10",
        "errors": "0",
    }
    assert [suite.get("skipped") for suite in root] == ["1", "1"]


def test_a_resumed_file_without_a_scorer_is_skipped_for_it(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED, WRONG])
    out, junit = tmp_path / "results.jsonl", tmp_path / "report.xml"
    assert main(["eval", str(data), "--out", str(out), "--scorer", "faithfulness"]) == 0
    assert main(["eval", str(data), "--out", str(out), "--junit", str(junit)]) == 0
    suites = cases_by_outcome(junit)
    assert [name for name, _ in suites["faithfulness"]["failure"]] == ["wrong"]
    skipped = dict(suites["hallucination"]["skipped"])
    assert sorted(skipped) == ["grounded", "wrong"]
    assert "results line has no hallucination score" in skipped["wrong"].message


def test_judge_errors_are_junit_errors_and_text_xml_cannot_hold_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-for-this-test-123456")
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
    odd = {**GROUNDED, "id": "odd\x00id\x1b<&>"}
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED, odd])
    junit = tmp_path / "report.xml"
    argv = ["eval", str(data), "--judge", "m", "--scorer", "faithfulness", "--junit", str(junit)]
    assert main(argv) == 2

    [suite] = cases_by_outcome(junit).values()
    errors = dict(suite["error"])
    assert set(errors) == {"grounded", "odd\ufffdid\ufffd<&>"}
    assert {error.type for error in errors.values()} == {"JudgeConnectionError"}
    assert all("unreachable" in error.message for error in errors.values())
    assert "sk-unused" not in junit.read_text()


def test_markdown_report_goes_to_its_file_and_the_step_summary_with_judge_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def judge(request: Request) -> Reply:
        prompt = json.dumps(request.json()["messages"])
        verdict = "no" if "2005" in prompt else "yes"
        claim = "Python was first released in 2005." if verdict == "no" else "Python, 1991."
        return judge_reply(
            {"claims": [{"claim": claim, "verdict": verdict, "reason": "the context: 1991"}]}
        )

    summary = tmp_path / "step-summary.md"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000")
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED, WRONG])
    report = tmp_path / "report.md"
    with http_server(judge) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        argv = ["eval", str(data), "--judge", "judge-model", "--scorer", "faithfulness"]
        assert main([*argv, "--markdown", str(report), "--judge-price", "1000,2000"]) == 0
        requests = len(server.requests)

    text = report.read_text()
    assert summary.read_text() == "# earlier step\n" + text  # appended, not replaced
    assert "| faithfulness | 0.500 | 50.0% | 2 | 0 |" in text
    # Two requests of 100 prompt and 20 completion tokens, at $1000 / $2000 per million.
    assert requests == 2
    assert "2 requests, 200 input and 40 output tokens, cost $0.2800" in text
    worst = text.split("### Worst records: faithfulness (1 failing)")[1]
    assert "| wrong | 0 |" in worst
    assert "- unverifiable: Python was first released in 2005." not in worst
    assert "- contradicted: Python was first released in 2005." in worst
    assert "grounded" not in worst


def test_offline_markdown_says_no_request_was_sent(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED, WRONG])
    report = tmp_path / "report.md"
    assert main(["eval", str(data), "--markdown", str(report)]) == 0
    text = report.read_text()
    assert "**Judge** `local`: 0 requests, 0 input and 0 output tokens, cost $0" in text
    assert "### Worst records: hallucination (1 failing)" in text


def run_cli(
    args: list[str], env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentscore.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_progress_off_a_terminal_is_plain_lines_without_carriage_returns(tmp_path: Path) -> None:
    records = [{**GROUNDED, "id": f"r{n}"} for n in range(400)]
    data = write_jsonl(tmp_path / "runs.jsonl", records)
    completed = run_cli(
        ["eval", str(data), "--progress-every", "0.01", "--concurrency", "2"],
        offline_env(),
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert "\r" not in completed.stderr
    lines = completed.stderr.splitlines()
    progress = [line for line in lines if line.startswith("scoring: ")]
    assert len(progress) >= 2, completed.stderr
    assert progress[-1].startswith("scoring: 400/400 records (100%), ")
    assert "records/s, took " in progress[-1]
    assert all("records/s, ETA " in line for line in progress[:-1])
    done = [int(line.split()[1].split("/")[0]) for line in progress]
    assert done == sorted(done)


def test_a_terminal_keeps_the_bar_with_rate_and_eta(tmp_path: Path) -> None:
    records = [{**GROUNDED, "id": f"r{n}"} for n in range(40)]
    data = write_jsonl(tmp_path / "runs.jsonl", records)
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "agentscore.cli", "eval", str(data), "--concurrency", "1"],
            env=offline_env(),
            stdout=subprocess.PIPE,
            stderr=follower,
        )
        os.close(follower)
        seen = b""
        while chunk := _read_pty(leader):
            seen += chunk
        assert process.wait(timeout=60) == 0
    finally:
        os.close(leader)
    text = seen.decode()
    assert "\rscoring [" in text
    assert "] 40/40 " in text and "records/s, took " in text


def _read_pty(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except OSError:  # the child closed its end
        return b""


def test_an_unreachable_judge_stops_a_2000_record_run_fast_and_quietly(tmp_path: Path) -> None:
    records = [{**GROUNDED, "id": f"r{n}"} for n in range(2000)]
    data = write_jsonl(tmp_path / "runs.jsonl", records)
    out = tmp_path / "results.jsonl"
    env = {
        **offline_env(),
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",  # nothing listens there
        "OPENAI_API_KEY": "sk-test-not-a-real-key-000",
    }
    started = time.monotonic()
    completed = run_cli(["eval", str(data), "--judge", "m", "--out", str(out)], env, timeout=120)
    took = time.monotonic() - started

    assert completed.returncode == 2, completed.stderr
    assert took < 60
    lines = (completed.stdout + completed.stderr).splitlines()
    assert len(lines) < 20, lines
    assert "scorer_failed" not in completed.stdout
    err = completed.stderr
    assert "stopped: 20 judge calls in a row failed with JudgeConnectionError" in err
    assert "failed with JudgeConnectionError (first: " in err
    saved = len(out.read_text().splitlines())
    assert 0 < saved < 100
    assert f"{saved} of 2000 records done, saved in {out}; rerun to resume" in err
    assert "sk-test" not in completed.stdout + err


def test_the_breaker_limit_is_configurable_and_zero_never_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000")
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
    data = write_jsonl(tmp_path / "runs.jsonl", [{**GROUNDED, "id": f"r{n}"} for n in range(12)])
    argv = ["eval", str(data), "--judge", "m", "--scorer", "faithfulness", "--concurrency", "1"]

    assert main([*argv, "--max-consecutive-failures", "3"]) == 2
    err = capsys.readouterr().err
    assert "stopped: 3 judge calls in a row failed with JudgeConnectionError" in err
    assert "3 of 12 records done, not saved" in err

    assert main([*argv, "--max-consecutive-failures", "0"]) == 2
    err = capsys.readouterr().err
    assert "stopped" not in err
    assert "12 failed with JudgeConnectionError (first: r0 faithfulness: " in err
    assert "every judge request failed" in err and "nothing was judged" in err


def test_a_judge_that_recovers_between_failures_is_not_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def flaky(request: Request) -> Reply:
        if "[down]" in json.dumps(request.json()["messages"]):
            return json_reply({"error": {"message": "overloaded"}}, 503)
        return judge_reply({"claims": [{"claim": "c", "verdict": "yes", "reason": "r"}]})

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000")
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
    # Two records whose judge call keeps failing, then one that is judged, three times over.
    records = [
        {**GROUNDED, "id": f"r{n}", "context": [*GROUNDED["context"], "[down]" if n % 3 else ""]}
        for n in range(1, 10)
    ]
    data = write_jsonl(tmp_path / "runs.jsonl", records)
    with http_server(flaky) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        argv = ["eval", str(data), "--judge", "m", "--scorer", "faithfulness"]
        assert main([*argv, "--concurrency", "1", "--max-consecutive-failures", "3"]) == 0
    err = capsys.readouterr().err
    assert "stopped" not in err
    assert "6 failed with JudgeServerError" in err


def test_many_failures_are_one_line_per_error_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def judge(request: Request) -> Reply:
        if "2005" in json.dumps(request.json()["messages"]):
            return json_reply({"error": {"message": "prompt rejected by policy"}}, 400)
        return judge_reply("this is not JSON")

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000")
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
    records = [{**GROUNDED, "id": f"g{n}"} for n in range(6)]
    records += [{**WRONG, "id": f"w{n}"} for n in range(4)]
    data = write_jsonl(tmp_path / "runs.jsonl", records)
    with http_server(judge) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        # Every judge request failed, for two reasons: an error exit (the trust work), and
        # still one line per error type.
        assert main(["eval", str(data), "--judge", "m", "--scorer", "faithfulness"]) == 2
    captured = capsys.readouterr()
    failures = [line for line in captured.err.splitlines() if " failed with " in line]
    assert len(failures) == 2, captured.err
    assert failures[0].startswith("agentscore eval: 6 failed with JudgeOutputError (first: g")
    assert failures[1].startswith("agentscore eval: 4 failed with JudgeRequestError (first: w")
    assert "scorer_failed" not in captured.out
