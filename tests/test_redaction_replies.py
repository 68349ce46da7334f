"""Keys in what comes back: a judge's valid reply quoting the API key, and the agent's own
model answering 401 with the key it refused. The key must appear in no result, span, log
record, log line or exception text. A real HTTP server (tests/support/http_server.py) quotes it."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from structlog.testing import capture_logs

from agentscore import Agent
from agentscore._redact import redact_exception, scrub_data
from agentscore._runtime.loop import background_loop
from agentscore.judges.openai import OpenAIJudge
from agentscore.pipeline.evaluate import evaluate
from agentscore.run import ScorerRun
from agentscore.scorers import create_faithfulness_scorer, create_hallucination_scorer
from agentscore.telemetry.core import Telemetry
from tests.support.chat import echo_key_401, judge_reply
from tests.support.http_server import Reply, Request, http_server
from tests.support.otel import Otel

KEY = "sk-live-Zq81/Pw+Hd73xKmN5vT2cR9bLs4"
ANSWER = "Order 1042 shipped on Monday."


def quoting_the_key(request: Request) -> Reply:
    """A judge that does its job, and quotes the key it was sent in its claim and reason."""
    sent = request.headers["authorization"].removeprefix("Bearer ")
    claim = {"claim": f"{ANSWER} (key {sent})", "verdict": "yes", "reason": f"Stated; {sent}"}
    return judge_reply({"claims": [claim]})


def everything_emitted(otel: Otel) -> str:
    spans = [dict(span.attributes or {}) for span in otel.spans.get_finished_spans()]
    records = [
        {"body": str(item.log_record.body), **dict(item.log_record.attributes or {})}
        for item in otel.logs.get_finished_logs()
    ]
    return json.dumps([spans, records], default=str)


async def scored(telemetry: Telemetry, scorer: Any) -> Any:
    run = ScorerRun(output=ANSWER, request_context={})
    return await evaluate(telemetry, scorer, run, timeout=None)


@pytest.mark.parametrize("factory", [create_faithfulness_scorer, create_hallucination_scorer])
def test_a_judge_reply_quoting_the_key_leaves_it_nowhere(otel: Otel, factory: Any) -> None:
    with http_server(quoting_the_key) as server:
        judge = OpenAIJudge("judge-model", base_url=server.base_url, api_key=KEY)
        scorer = factory(judge, context=["Order 1042 shipped on Monday."])
        # Content capture on: explanations and verdicts go onto spans and log records.
        with capture_logs() as logs:
            result = background_loop.call(scored, Telemetry(capture_content=True), scorer)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent
    assert result.status.value == "scored"
    verdict = result.analyze_step_result["verdicts"][0]
    assert verdict["reason"] == "Stated; [REDACTED]"
    assert "[REDACTED]" in verdict["claim"]
    dumped = result.model_dump_json()
    emitted = everything_emitted(otel)
    assert "[REDACTED]" in emitted  # the reason did reach the spans, scrubbed
    for text in (dumped, emitted, repr(logs)):
        for fragment in KEY.split("/"):
            assert fragment not in text


def test_a_401_from_the_agents_model_quoting_the_key_leaves_it_nowhere(otel: Otel) -> None:
    with http_server(echo_key_401) as server:
        agent = Agent("support", "agent-model", base_url=server.base_url, api_key=KEY)
        with capture_logs() as logs, pytest.raises(openai.AuthenticationError) as raised:
            agent.generate_sync("Where is order 1042?")
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was echoed
    error = raised.value
    assert "Incorrect API key provided: [REDACTED]" in str(error)
    texts = [str(error), repr(error.args), json.dumps(error.body), error.message]
    texts += [everything_emitted(otel), repr(logs)]
    for text in texts:
        for fragment in KEY.split("/"):
            assert fragment not in text


def test_a_401_while_streaming_quoting_the_key_leaves_it_out_of_the_error() -> None:
    with http_server(echo_key_401) as server:
        agent = Agent("support", "agent-model", base_url=server.base_url, api_key=KEY)
        with pytest.raises(openai.AuthenticationError) as raised:
            list(agent.stream_sync("Where is order 1042?"))
    assert server.requests
    assert "[REDACTED]" in str(raised.value)
    assert KEY not in str(raised.value) + json.dumps(raised.value.body)


def test_redacting_an_exception_keeps_its_type_and_scrubs_its_chain() -> None:
    exc = RuntimeError("token=abcdef123456 failed", {"key": KEY})
    exc.__cause__ = KeyError(f"lookup with {KEY}")
    same = redact_exception(exc)
    assert same is exc and type(same) is RuntimeError
    assert exc.args == ("token=[REDACTED] failed", {"key": "[REDACTED]"})
    assert exc.__cause__ is not None and KEY not in str(exc.__cause__)


def test_scrubbing_data_leaves_what_is_not_a_secret() -> None:
    data = {"n": 3, "items": [f"a {KEY} b", None, 1.5], "nested": {"x": "plain text"}}
    assert scrub_data(data) == {
        "n": 3,
        "items": ["a [REDACTED] b", None, 1.5],
        "nested": {"x": "plain text"},
    }
