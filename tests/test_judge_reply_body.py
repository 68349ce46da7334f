"""The judge reads a 200 body itself (not through the SDK's response model): what it reads
and what it refuses, through the SDK's own client and through a user's legacy `httpx` one."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI

from agentscore.judges._chat import BadBody, read_chat_reply
from agentscore.judges.openai import OpenAIJudge
from agentscore.result import ScoreStatus
from agentscore.run import ScorerRun
from agentscore.scorers import create_faithfulness_scorer
from agentscore.telemetry import semconv
from agentscore.testing import chat_completion
from tests.support.http_server import Reply, http_server
from tests.support.otel import Otel
from tests.support.seeds import PYTHON, verify_reply

RUN = ScorerRun(input=PYTHON.query, output=PYTHON.response)
GOOD = json.dumps(chat_completion(verify_reply(PYTHON)).body).encode()


class ResponseLike:
    """What `read_chat_reply` reads of a response: its body and headers."""

    def __init__(self, body: Any, content_type: str = "application/json") -> None:
        self.content = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.headers = {"content-type": content_type}


def test_a_reply_gives_its_text_finish_reasons_and_usage() -> None:
    body = {
        "id": "c-1",
        "model": "judge-2",
        "choices": [
            {"message": {"content": "{}"}, "finish_reason": "length"},
            {"message": {"content": "other"}, "finish_reason": "stop"},
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3},
    }
    reply = read_chat_reply(ResponseLike(body))
    assert (reply.text, reply.finish_reason) == ("{}", "length")
    assert reply.finish_reasons == ["length", "stop"]
    assert (reply.input_tokens, reply.output_tokens) == (12, 3)
    assert (reply.response_id, reply.model) == ("c-1", "judge-2")


def test_missing_or_mistyped_fields_read_as_missing() -> None:
    reply = read_chat_reply(
        ResponseLike({"choices": [{"message": {"content": 5}, "finish_reason": 1}]})
    )
    assert (reply.text, reply.finish_reason, reply.finish_reasons) == (None, None, [])
    assert (reply.input_tokens, reply.output_tokens) == (None, None)  # no usage reported
    empty = read_chat_reply(ResponseLike({"choices": [], "usage": {"prompt_tokens": True}}))
    assert (empty.text, empty.input_tokens, empty.output_tokens) == (None, 0, 0)


@pytest.mark.parametrize(
    ("body", "content_type", "says"),
    [
        (b"<html>502 Bad Gateway</html>", "text/html", "not a chat completion: '<html>502"),
        (GOOD[: len(GOOD) // 2], "application/json", "not valid JSON"),
        ({"detail": "upstream unavailable"}, "application/json", "not a chat completion"),
        ([1, 2], "application/json", "not a chat completion"),
        (b"\xff\xfe", "application/json; charset=utf-8", "not valid JSON"),
    ],
)
def test_a_body_that_is_no_chat_completion_says_what_it_is(
    body: Any, content_type: str, says: str
) -> None:
    with pytest.raises(BadBody, match=says):
        read_chat_reply(ResponseLike(body, content_type))


@pytest.mark.anyio
async def test_a_users_legacy_httpx_client_is_used_and_read(otel: Otel) -> None:
    with http_server(Reply(body=GOOD)) as server:
        # openai 3 types `http_client` as httpx2's; a legacy httpx client is what this tests.
        legacy: Any = httpx.AsyncClient()
        client = AsyncOpenAI(api_key="sk-legacy-test", base_url=server.base_url, http_client=legacy)
        judge = OpenAIJudge("m", client=client)
        result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
    assert result.status is ScoreStatus.SCORED, result.error
    assert result.judge_usage.calls == 1 and result.judge_usage.input_tokens == 100
    [chat] = [s for s in otel.spans.get_finished_spans() if s.name.startswith("chat")]
    assert chat.attributes is not None
    assert chat.attributes[semconv.USAGE_INPUT_TOKENS] == 100


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "content_type", "says"),
    [
        # Nesting deeper than json goes raised RecursionError, past every handler of a bad body.
        (b"[" * 200_000 + b"]" * 200_000, "application/json", "nested too deep to read"),
        # A proxy's multi-megabyte error page is quoted by its start, not whole.
        (b"<html>" + b"x" * 5_000_000 + b"</html>", "text/html", "of 5,000,013 bytes"),
    ],
)
async def test_a_judge_that_answers_200_with_junk_fails_the_run_with_a_bounded_error(
    body: bytes, content_type: str, says: str
) -> None:
    with http_server(Reply(body=body, headers={"Content-Type": content_type})) as server:
        client = AsyncOpenAI(api_key="sk-junk-test-000000", base_url=server.base_url, max_retries=1)
        judge = OpenAIJudge("m", client=client)
        result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
    assert result.status is ScoreStatus.FAILED
    assert result.error is not None and result.error.type == "JudgeResponseError"
    assert says in result.error.message and len(result.error.message) < 1_000
    assert result.error.transient  # a lying 200 may pass: retried, as a 5xx is
    assert len(server.requests) == 2  # the first try and the one retry, no more
