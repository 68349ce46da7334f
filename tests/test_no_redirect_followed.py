"""No outbound request follows a redirect: the judge, the Phoenix sink and the Langfuse sink,
each answered by a redirect to a second server on 127.0.0.1 (another origin, the one a
credential must not reach). The second server records every request, of any method; it must
receive nothing. A 302 turns a POST into a GET without its body; a 307 resends the POST."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest

from agentscore._wire.http import http_module
from agentscore.judges import OpenAIJudge
from agentscore.result import ScoreResult, ScoreStatus
from agentscore.run import ScorerRun
from agentscore.scorers import create_faithfulness_scorer
from agentscore.sinks import LangfuseScores, PhoenixAnnotations
from tests.support.http_server import HttpServer, Reply, http_server
from tests.support.seeds import PYTHON

pytestmark = pytest.mark.anyio

JUDGE_KEY = "sk-judge-redirect-0123456789"
PHOENIX_KEY = "px-phoenix-redirect-0123456789"
LANGFUSE_SECRET = "sk-lf-redirect-0123456789"
RESULT = ScoreResult(
    scorer_id="faithfulness",
    run_id="run-redirect",
    status=ScoreStatus.SCORED,
    score=1.0,
    passed=True,
    label="pass",
    trace_id="0af7651916cd43dd8448eb211c80319c",
    span_id="b7ad6b7169203331",
)


@contextmanager
def redirected(status: int) -> Iterator[tuple[HttpServer, HttpServer]]:
    """(first, elsewhere): `first` answers every request with `status` and a Location on
    `elsewhere`, which answers 200 to anything."""
    with http_server() as elsewhere:
        moved = Reply(status, b"", {"Location": f"{elsewhere.base_url}/collect?to=here"})
        with http_server(moved) as first:
            yield first, elsewhere


def received(server: HttpServer) -> list[dict[str, str]]:
    """The headers of every request `server` was sent, POST or GET, names lower-cased."""
    return [request.headers for request in server.requests]


STATUSES = pytest.mark.parametrize("status", [302, 307])


async def test_the_harness_a_client_that_follows_redirects_reaches_the_other_server() -> None:
    # What the tests below rule out, shown possible: without the policy, the key goes along.
    with redirected(307) as (first, elsewhere):
        async with http_module().AsyncClient(follow_redirects=True) as client:
            await client.post(first.base_url, content=b"{}", headers={"X-Api-Key": JUDGE_KEY})
    [headers] = received(elsewhere)
    assert headers["x-api-key"] == JUDGE_KEY


@STATUSES
async def test_the_judge_does_not_follow_a_redirect(status: int) -> None:
    with redirected(status) as (first, elsewhere):
        judge = OpenAIJudge(
            "judge-model", base_url=first.base_url, api_key=JUDGE_KEY, max_retries=2
        )
        scorer = create_faithfulness_scorer(judge, context=PYTHON.context)
        result = await scorer.run(ScorerRun(input=PYTHON.query, output=PYTHON.response))
    assert received(elsewhere) == []
    assert len(first.requests) == 1  # a redirect is an answer: not retried either
    assert received(first)[0]["authorization"] == f"Bearer {JUDGE_KEY}"  # it was sent, there
    assert result.status is ScoreStatus.FAILED
    assert result.error is not None and result.error.type == "JudgeRequestError"
    assert result.error.message == (
        f"judge request rejected: Error code: {status} - redirected to {elsewhere.base_url}/collect"
    )
    assert JUDGE_KEY not in result.model_dump_json()


@STATUSES
async def test_the_phoenix_sink_does_not_follow_a_redirect(
    status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    with redirected(status) as (first, elsewhere):
        sink = PhoenixAnnotations(first.url, api_key=PHOENIX_KEY)
        await sink(RESULT)
        assert await anyio.to_thread.run_sync(sink.flush, 30)
    assert received(elsewhere) == []
    assert sorted(r.path for r in first.requests) == [
        "/v1/span_annotations",
        "/v1/trace_annotations",
    ]
    for headers in received(first):
        assert headers["authorization"] == f"Bearer {PHOENIX_KEY}"
    out = capsys.readouterr().out
    assert "score_backend_rejected" in out and f"status={status}" in out
    assert PHOENIX_KEY not in out


@STATUSES
async def test_the_langfuse_sink_does_not_follow_a_redirect(
    status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    with redirected(status) as (first, elsewhere):
        sink = LangfuseScores(first.url, public_key="pk-lf", secret_key=LANGFUSE_SECRET)
        await sink(RESULT)
        assert await anyio.to_thread.run_sync(sink.flush, 30)
    assert received(elsewhere) == []
    assert [r.path for r in first.requests] == ["/api/public/ingestion"]
    basic = base64.b64encode(f"pk-lf:{LANGFUSE_SECRET}".encode()).decode()
    assert received(first)[0]["authorization"] == f"Basic {basic}"
    out = capsys.readouterr().out
    assert "score_backend_rejected" in out and f"status={status}" in out
    assert LANGFUSE_SECRET not in out and basic not in out
