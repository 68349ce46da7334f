"""Nothing fails silently: `agentscore eval` exits 2 when every judge request is refused,
whatever the reason; `Evals.check()`, `agentscore check` and `agentscore serve` at start send
each judge one small request and say what is wrong in plain words. Against a real HTTP server
(tests/support/http_server.py) through the real `openai` client."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from agentscore import Evals
from agentscore.cli import main
from agentscore.judges import CascadeJudge, LocalJudge, OpenAIJudge
from agentscore.scorers import create_faithfulness_scorer, create_hallucination_scorer
from agentscore.serve.service import load_evals, log_judge_checks
from tests.support.chat import echo_key_401, judge_reply
from tests.support.http_server import Reply, Request, Script, http_server, json_reply

KEY = "sk-check-test-0123456789abcdef"
RUNS = [
    {
        "id": f"r{n}",
        "input": "Where is order 1042?",
        "output": f"Order 1042 shipped with UPS. Members get {n} free returns.",
        "context": ["Order 1042 shipped with UPS on 2026-11-18."],
    }
    for n in range(3)
]


def not_found(request: Request) -> Reply:
    model = request.json().get("model")
    message = f"The model `{model}` does not exist or you do not have access to it."
    return json_reply({"error": {"message": message, "type": "invalid_request_error"}}, 404)


def bad_request(request: Request) -> Reply:
    return json_reply({"error": {"message": "max_tokens is too large", "type": "invalid"}}, 400)


def pong(request: Request) -> Reply:
    return judge_reply({"ok": True})


@pytest.fixture
def openai_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
    return monkeypatch


def write_runs(tmp_path: Path) -> Path:
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(run) + "\n" for run in RUNS))
    return path


@pytest.mark.parametrize(
    ("responder", "says"),
    [
        (not_found, "does not know the model 'judge-modle' (404)"),
        (bad_request, "rejected the request for 'judge-modle' (4xx)"),
        (echo_key_401, "refused the API key (401/403)"),
    ],
)
def test_eval_exits_2_when_every_judge_request_is_refused(
    responder: Script,
    says: str,
    tmp_path: Path,
    openai_env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with http_server(responder) as server:
        openai_env.setenv("OPENAI_BASE_URL", server.base_url)
        code = main(["eval", str(write_runs(tmp_path)), "--judge", "judge-modle"])
    assert code == 2
    # Every run asked and was refused: faithfulness and hallucination share one request.
    assert len(server.requests) == 3
    err = capsys.readouterr().err
    assert "every judge request failed" in err
    assert says in err
    assert "agentscore check" in err
    assert KEY not in err


def test_eval_exits_0_when_the_judge_answers(
    tmp_path: Path, openai_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def supported(request: Request) -> Reply:
        # The two scorers of a run share one request: the claims, then a section each.
        verdict = {"items": [{"verdict": "yes", "reason": "stated"}]}
        return judge_reply(
            {"claims": ["Order 1042 shipped with UPS."], "s1": verdict, "s2": verdict}
        )

    with http_server(supported) as server:
        openai_env.setenv("OPENAI_BASE_URL", server.base_url)
        code = main(["eval", str(write_runs(tmp_path)), "--judge", "judge-model"])
    assert code == 0
    assert "every judge request failed" not in capsys.readouterr().err


def scorers_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str) -> str:
    (tmp_path / "check_scorers.py").write_text(
        textwrap.dedent(
            f"""
            from agentscore import Evals
            from agentscore.scorers import create_faithfulness_scorer
            evals = Evals(scorers=[create_faithfulness_scorer({model!r})])
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("check_scorers", None)
    return "check_scorers:evals"


def test_evals_check_reports_a_misspelled_model_in_plain_words(
    openai_env: pytest.MonkeyPatch,
) -> None:
    with http_server(not_found) as server:
        judge = OpenAIJudge("judge-modle", base_url=server.base_url, max_retries=0)
        evals = Evals(
            scorers=[
                create_faithfulness_scorer(judge),
                create_hallucination_scorer(judge),  # the same judge: asked once
                create_hallucination_scorer("local", threshold=0.1),
            ]
        )
        checks = evals.check()
    assert len(server.requests) == 1
    by_model = {check.model: check for check in checks}
    assert by_model["local"].ok and by_model["local"].endpoint is None
    problem = by_model["judge-modle"]
    assert not problem.ok
    assert problem.error_type == "JudgeRequestError"
    assert problem.endpoint == server.base_url
    assert problem.problem is not None
    assert "does not know the model 'judge-modle' (404)" in problem.problem


@pytest.mark.parametrize(
    ("responder", "says"),
    [(echo_key_401, "refused the API key"), (pong, None)],
)
def test_evals_check_of_a_cascade_asks_its_llm_stage(
    responder: Script, says: str | None, openai_env: pytest.MonkeyPatch
) -> None:
    with http_server(responder) as server:
        llm = OpenAIJudge("judge-llm", base_url=server.base_url, max_retries=0)
        cascade = CascadeJudge(LocalJudge(), llm)
        checks = Evals(scorers=[create_faithfulness_scorer(cascade)]).check()
    assert [check.model for check in checks] == ["local", "judge-llm"]
    llm_check = checks[1]
    assert llm_check.ok is (says is None)
    if says is not None:
        assert llm_check.problem is not None and says in llm_check.problem
        assert KEY not in llm_check.problem


def test_each_check_asks_the_endpoint_not_the_reply_cache(openai_env: pytest.MonkeyPatch) -> None:
    with http_server(pong) as server:
        judge = OpenAIJudge("judge-model", base_url=server.base_url, max_retries=0)
        evals = Evals(scorers=[create_faithfulness_scorer(judge)])
        assert [check.ok for check in evals.check()] == [True]
        assert [check.ok for check in evals.check()] == [True]
    assert len(server.requests) == 2  # a key revoked in between would be found


def test_an_unreachable_endpoint_is_reported_not_raised(openai_env: pytest.MonkeyPatch) -> None:
    judge = OpenAIJudge("judge-model", base_url="http://127.0.0.1:9/v1", max_retries=0)
    [check] = Evals(scorers=[create_faithfulness_scorer(judge)]).check()
    assert check.error_type == "JudgeConnectionError"
    assert check.problem is not None and "cannot be reached" in check.problem


def test_agentscore_check_exits_2_on_a_problem_and_0_when_all_answer(
    tmp_path: Path, openai_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = scorers_module(tmp_path, openai_env, "judge-modle")
    with http_server(not_found) as server:
        openai_env.setenv("OPENAI_BASE_URL", server.base_url)
        assert main(["check", "--scorers", spec]) == 2
    out = capsys.readouterr().out
    assert "PROBLEM judge-modle at" in out
    assert "does not know the model 'judge-modle' (404)" in out
    with http_server(pong) as server:
        openai_env.setenv("OPENAI_BASE_URL", server.base_url)
        assert main(["check", "--scorers", spec]) == 0
    assert "ok      judge-modle at" in capsys.readouterr().out


def test_agentscore_check_of_a_bad_spec_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--scorers", "no_such_module_here:evals"]) == 2
    assert "agentscore check:" in capsys.readouterr().err


def test_serve_logs_the_check_of_each_judge_at_start(
    tmp_path: Path, openai_env: pytest.MonkeyPatch
) -> None:
    spec = scorers_module(tmp_path, openai_env, "judge-modle")
    with http_server(not_found) as server:
        openai_env.setenv("OPENAI_BASE_URL", server.base_url)
        with capture_logs() as logs:
            log_judge_checks(load_evals(spec))
    [line] = [entry for entry in logs if entry["event"].startswith("judge_check")]
    assert line["event"] == "judge_check_failed"
    assert line["log_level"] == "warning"
    assert line["model"] == "judge-modle"
    assert "(404)" in line["problem"]


@contextmanager
def silent_server() -> Iterator[tuple[str, list[bytes]]]:
    """A real HTTP server on 127.0.0.1 that accepts, reads each request and never answers."""
    received: list[bytes] = []
    release = threading.Event()

    class Silent(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(self.rfile.read(int(self.headers.get("content-length", 0))))
            release.wait()  # hold the connection open, send nothing

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Silent)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", received
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def test_agentscore_check_ends_at_its_deadline_against_a_server_that_never_answers(
    tmp_path: Path, openai_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "two_scorers.py").write_text(
        "from agentscore.scorers import create_faithfulness_scorer, create_hallucination_scorer\n"
        "scorers = [create_faithfulness_scorer('judge-model'), "
        "create_hallucination_scorer('judge-model')]\n"
    )
    openai_env.syspath_prepend(str(tmp_path))
    sys.modules.pop("two_scorers", None)
    with silent_server() as (url, received):
        openai_env.setenv("OPENAI_BASE_URL", url)
        code = main(["check", "--scorers", "two_scorers:scorers", "--timeout", "0.5"])
    assert code == 2
    out = capsys.readouterr().out
    assert f"PROBLEM judge-model at {url}" in out
    assert f"{url} did not answer within 0.5 s" in out
    # Two scorers named by one model string are two judge objects and one check: one
    # request, one deadline, not one deadline after the other.
    assert len(received) == 1
    assert out.count("PROBLEM") == 1


def test_agentscore_check_states_its_deadline_and_refuses_a_bad_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "--timeout SECONDS" in shown
    assert "deadline of the whole check" in shown and "(default 10 s)" in shown
    with pytest.raises(SystemExit) as exited:
        main(["check", "--scorers", "x:y", "--timeout", "0"])
    assert exited.value.code == 2
    assert "must be a positive number of seconds" in capsys.readouterr().err
