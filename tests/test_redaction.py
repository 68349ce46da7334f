"""Keys never leave the library: whatever their shape, wherever the text goes.

A real HTTP server quotes the key it was sent, as some providers do in their 401 body.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from agentscore import Agent
from agentscore._redact import redact, register_secret
from agentscore._runtime.loop import background_loop
from agentscore.ci.batch import run_evals_sync
from agentscore.cli import main
from agentscore.judges.openai import OpenAIJudge
from agentscore.pipeline.evaluate import evaluate
from agentscore.result import ScoreResult
from agentscore.run import ScorerRun
from agentscore.scorers import create_hallucination_scorer
from agentscore.telemetry.core import Telemetry
from tests.support.chat import echo_key_401, judge_reply
from tests.support.http_server import Reply, Request, http_server
from tests.support.otel import Otel

# Shapes the old patterns missed: a `gsk_` key, and a base64-style key with `/` and `+`.
GROQ_KEY = "gsk_Q3xv9LmT0pZk7Rw2Yh5NcB8dFj4Ga6Es"
SLASH_KEY = "sk-proj-Ab12/Cd34+Ef56/Gh78+Ij90=Kl12Mn34"

RUN = {"output": "Order 1042 shipped on Monday.", "request_context": {}}


def test_env_key_of_any_shape_is_redacted_from_result_and_log_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", GROQ_KEY)
    with http_server(echo_key_401) as server:
        judge = OpenAIJudge("judge-model", base_url=server.base_url, max_retries=0)
        scorer = create_hallucination_scorer(judge, context=["Order 1042 shipped."])
        with capture_logs() as logs:
            result = scorer.run_sync(RUN)
    # The server did get the key and echoed it: the leak was real, the redaction is ours.
    assert server.requests[0].headers["authorization"] == f"Bearer {GROQ_KEY}"
    assert result.error is not None and result.error.type == "JudgeAuthError"
    assert "Incorrect API key provided: [REDACTED]" in result.error.message
    assert GROQ_KEY not in result.model_dump_json()
    failed = [entry for entry in logs if entry["event"] == "scorer_failed"]
    assert failed and GROQ_KEY not in repr(failed)
    assert "[REDACTED]" in failed[0]["error_message"]


def test_eval_command_keeps_the_key_out_of_results_file_and_output(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", GROQ_KEY)
    data = tmp_path / "runs.jsonl"
    record = {"id": "a", "input": "Where?", "output": RUN["output"], "context": ["Shipped."]}
    data.write_text(json.dumps(record) + "\n")
    out = tmp_path / "results.jsonl"
    with http_server(echo_key_401) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        status = main(["eval", str(data), "--judge", "judge-model", "--out", str(out)])
    captured = capfd.readouterr()
    row = json.loads(out.read_text())
    assert status == 2 and len(server.requests) >= 1  # every judge call failed: an error exit
    assert row["scores"]["faithfulness"]["error"]["type"] == "JudgeAuthError"
    assert "[REDACTED]" in row["scores"]["faithfulness"]["error"]["message"]
    assert GROQ_KEY not in out.read_text()
    assert GROQ_KEY not in captured.out + captured.err
    # Failures are summed up per error type, with a (redacted) example.
    assert "2 failed with JudgeAuthError (first: a " in captured.err
    assert "[REDACTED]" in captured.err


def test_agent_target_error_in_run_evals_is_redacted() -> None:
    with http_server(echo_key_401) as server:
        agent = Agent("support", "agent-model", base_url=server.base_url, api_key=SLASH_KEY)
        scorer = create_hallucination_scorer("local")
        report = run_evals_sync([{"id": "1", "input": "Where is order 1042?"}], [scorer], agent)
    error = report.items[0].error
    assert server.requests[0].headers["authorization"] == f"Bearer {SLASH_KEY}"
    assert error is not None and error.startswith("AuthenticationError")
    assert "[REDACTED]" in error
    # Not even the tail after the first "/" survives.
    for fragment in SLASH_KEY.split("/"):
        assert fragment not in error


def test_repair_request_does_not_resend_a_quoted_key(otel: Otel) -> None:
    register_secret(SLASH_KEY)
    verdicts = {"claims": [{"claim": RUN["output"], "verdict": "yes", "reason": "stated"}]}

    def reply(request: Request) -> Reply:
        if len(request.json()["messages"]) == 2:  # the first request: a reply quoting the key
            return judge_reply(f"Sure! Your key is {SLASH_KEY}, verdict: yes")
        return judge_reply(verdicts)

    with http_server(reply) as server:
        judge = OpenAIJudge("judge-model", base_url=server.base_url, api_key=SLASH_KEY)
        scorer = create_hallucination_scorer(judge, context=["Order 1042 shipped on Monday."])
        telemetry = Telemetry(capture_content=True)
        result = background_loop.call(_evaluate, telemetry, scorer)
    assert result.status.value == "scored" and result.score == 0.0
    assert result.judge_usage.calls == 2
    repair = json.dumps(server.requests[1].json()["messages"])
    assert "[REDACTED]" in repair and "Sure! Your key is" in repair
    chat_spans = [s for s in otel.spans.get_finished_spans() if s.name.startswith("chat")]
    assert len(chat_spans) == 2
    for span in chat_spans:
        text = json.dumps(dict(span.attributes or {}))
        for fragment in SLASH_KEY.split("/"):
            assert fragment not in text
    assert "Your key is [REDACTED]" in json.dumps(dict(chat_spans[1].attributes or {}))


async def _evaluate(telemetry: Telemetry, scorer: object) -> ScoreResult:
    from agentscore.scorers.base import Scorer

    assert isinstance(scorer, Scorer)
    return await evaluate(telemetry, scorer, ScorerRun.model_validate(RUN), timeout=None)


def test_pattern_covers_whole_base64_keys_and_env_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    assert redact("auth failed: Bearer xyzABC12/def+GHI=") == "auth failed: Bearer [REDACTED]"
    assert redact(f"key {SLASH_KEY[:-1]}!") == "key [REDACTED]!"
    monkeypatch.setenv("MY_PROXY_TOKEN", "tok.9f8e7d6c5b4a")
    monkeypatch.setenv("FEATURE_TOKEN", "1")  # too short to be a key: left alone
    assert redact("proxy said tok.9f8e7d6c5b4a, retry 1") == "proxy said [REDACTED], retry 1"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("connect to https://admin:hunter2hunter2@proxy.internal:8443/v1 failed", "hunter2hunter2"),
        ("GET /v1?access_token=q8Zt2vLmN4xK&page=2 failed", "q8Zt2vLmN4xK"),
        ("client_secret=q8Zt2vLmN4xK", "q8Zt2vLmN4xK"),
        ("password: correct-horse-battery", "correct-horse-battery"),
        ('{"refresh_token": "rt-q8Zt2vLmN4xK"}', "rt-q8Zt2vLmN4xK"),
        ("X-Api-Key: q8Zt2vLmN4xK", "q8Zt2vLmN4xK"),
    ],
)
def test_credentials_of_unknown_value_are_redacted_by_where_they_stand(
    text: str, secret: str
) -> None:
    assert secret not in redact(text)


@pytest.mark.parametrize(
    "text",
    ["tokens: 1234567 used", "the secret garden is lovely", "http://example.com/v1/items"],
)
def test_ordinary_text_about_keys_and_tokens_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_a_malformed_otlp_headers_variable_is_not_logged_whole(tmp_path: Path) -> None:
    # OpenTelemetry's own parser logs a value it cannot parse, credential and all.
    import os
    import subprocess
    import sys

    token = "Bearer s3cr3tvalue123456"
    script = "import agentscore.telemetry.otlp as otlp\notlp.spans(); otlp.logs(); otlp.metrics()\n"
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_HEADERS": token,
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert "Header format invalid" in done.stderr  # the warning itself still reaches the user
    assert "s3cr3tvalue123456" not in done.stderr + done.stdout


@pytest.mark.parametrize(
    "text",
    [
        "use sk-proj-abcdef1234567890 here",
        "xai_abcdefgh12345678",
        "Authorization: BEARER abcdefgh12345678",
        "API-KEY = 'k3yvalue99'",
        "the client_secret=abcdef1234",
        "PASSWD:hunter22222",
        "proxy https://bob:pa55word@proxy.test",
        "paſsword=hunter22222",  # "ſ" is "s" to a case-insensitive pattern
        "authorİzation: tokenvalue1234",
    ],
)
def test_the_substring_gate_never_skips_a_pattern_that_matches(text: str) -> None:
    # The gate is only a shortcut: scrubbing with it and with every pattern agree.
    from agentscore import _redact

    everything = text
    for pattern, replacement in _redact._SECRET_PATTERNS:
        everything = pattern.sub(replacement, everything)
    assert everything != text
    assert _redact.scrub(text, known=()) == everything
    assert _redact.scrub_data({"reason": [text]}) == {"reason": [everything]}


def test_the_substring_gate_agrees_with_every_pattern_on_random_text() -> None:
    import random

    from agentscore import _redact

    pieces = ["sk", "-", "_", "PK", "rk", "xai", "Bearer", " ", "api", "KEY", "token", "Secret",
              "pass", "word", "pwd", "credential", ":", "=", "'", '"', "https://", "u", "@",
              "abcdefgh", "12345678", "ſ", "İ", "K", "\n", "/", "."]  # fmt: skip
    generator = random.Random(23)
    for _ in range(3000):
        text = "".join(generator.choice(pieces) for _ in range(generator.randint(1, 14)))
        everything = text
        for pattern, replacement in _redact._SECRET_PATTERNS:
            everything = pattern.sub(replacement, everything)
        assert _redact.scrub(text, known=()) == everything, text
        assert _redact._needs_scrubbing(text, ()) == (everything != text), text
