"""How a judge's request reaches the endpoint: always through the openai SDK; a judge
configured by URL (or by the SDK's environment) gives it agentscore's HTTP client (no
redirect followed, deadlines, a bounded body), a client the user passes in is used as it is.
Against real HTTP servers on 127.0.0.1; the fault matrix of both is in
tests/test_judge_faults.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import socket
import ssl
import sys
import threading
from collections.abc import Callable

import pytest
from openai import AsyncOpenAI

from agentscore._wire.http import http_module
from agentscore.judges import OpenAIJudge
from agentscore.run import ScorerRun
from agentscore.scorers import ScoreStatus, create_faithfulness_scorer
from tests.support.chat import judge_reply
from tests.support.http_server import Reply, Request, http_server, json_reply
from tests.support.raw_tcp import Conn, reply, tcp_server
from tests.support.seeds import PYTHON, verify_reply

pytestmark = pytest.mark.anyio

KEY = "sk-transport-test-0123456789"
RUN = ScorerRun(input=PYTHON.query, output=PYTHON.response)


def good(_: Request) -> Reply:
    return judge_reply(verify_reply(PYTHON))


async def test_a_judge_configured_by_url_sends_the_sdks_headers_through_agentscores_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-test")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-test")
    with http_server(good) as server:
        judge = OpenAIJudge("judge-model", base_url=server.base_url, api_key=KEY, use_cache=False)
        scorer = create_faithfulness_scorer(judge, context=PYTHON.context)
        results = [await scorer.run(RUN) for _ in range(3)]
    assert [result.score for result in results] == [0.5, 0.5, 0.5]
    headers = server.requests[0].headers
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["openai-organization"] == "org-test"
    assert headers["openai-project"] == "proj-test"
    assert headers["user-agent"].startswith("AsyncOpenAI/Python")
    assert headers["content-type"] == "application/json"
    assert headers["accept-encoding"] == "gzip, deflate"  # those decoded under the bound
    body = server.requests[0].json()
    assert body["model"] == "judge-model"
    assert body["response_format"]["type"] == "json_schema"
    assert len(server.requests) == 3


async def test_a_client_the_user_passes_is_used_as_it_is() -> None:
    with http_server(good) as server:
        mine = http_module().AsyncClient(headers={"X-Mine": "yes"})
        client = AsyncOpenAI(api_key=KEY, base_url=server.base_url, http_client=mine)
        judge = OpenAIJudge("judge-model", client=client)
        result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
        assert not client.is_closed()  # the user's to close
        await client.close()
    assert result.score == 0.5
    assert server.requests[0].headers["x-mine"] == "yes"


async def test_a_proxy_in_the_environment_is_honoured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The "proxy" is the judge's server itself: a request reaches it only through the proxy,
    # since the judge's own host does not resolve.
    with http_server(good) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        judge = OpenAIJudge("judge-model", base_url="http://judge.invalid/v1", api_key=KEY)
        result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
    assert result.status is ScoreStatus.SCORED, result.error
    assert result.score == 0.5
    assert len(proxy.requests) == 1


async def test_an_error_status_is_worded_as_the_sdk_words_it_and_bounded() -> None:
    page = "x" * 100_000

    def huge_error(_: Request) -> Reply:
        return json_reply({"error": {"message": page, "type": "invalid_request_error"}}, 400)

    with http_server(huge_error) as server:
        judge = OpenAIJudge("judge-model", base_url=server.base_url, api_key=KEY, max_retries=0)
        result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
    assert result.error is not None and result.error.type == "JudgeRequestError"
    assert result.error.message.startswith("judge request rejected: Error code: 400 - ")
    assert "bytes)" in result.error.message  # the body's size, not the body
    assert len(result.error.message) < 1_000


async def test_an_unreachable_endpoint_is_a_connection_error_naming_it() -> None:
    with http_server(good) as server:
        url = server.base_url
    judge = OpenAIJudge("judge-model", base_url=url, api_key=KEY, max_retries=0)
    result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
    assert result.error is not None and result.error.type == "JudgeConnectionError"
    assert url.removesuffix("/v1") in result.error.message
    assert KEY not in result.model_dump_json()


async def test_a_redirect_is_not_followed_and_is_named_without_its_credentials() -> None:
    moved = "https://user:hunter2@judge.example:8443/v2/chat/completions?token=s3cret#x"
    with http_server(Reply(308, b"", {"Location": moved})) as server:
        judge = OpenAIJudge("judge-model", base_url=server.base_url, api_key=KEY, max_retries=2)
        result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
    assert result.error is not None and result.error.type == "JudgeRequestError"
    assert result.error.message == (
        "judge request rejected: Error code: 308 - redirected to "
        "https://judge.example:8443/v2/chat/completions"
    )
    assert len(server.requests) == 1  # not retried, not followed
    for secret in ("hunter2", "s3cret", KEY):
        assert secret not in result.model_dump_json()


async def test_a_base_url_with_a_space_is_sent_encoded_as_the_sdk_encodes_it() -> None:
    with http_server(good) as server:
        judge = OpenAIJudge("judge-model", base_url=server.base_url + "/a b", api_key=KEY)
        result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
    assert result.score == 0.5
    assert [request.path for request in server.requests] == ["/v1/a%20b/chat/completions"]


async def test_https_refuses_a_certificate_no_trusted_store_vouches_for() -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve_one() -> None:
            conn, _ = listener.accept()
            with contextlib.suppress(OSError), server_context.wrap_socket(conn, server_side=True):
                pass

        thread = threading.Thread(target=serve_one, daemon=True)
        thread.start()
        judge = OpenAIJudge(
            "judge-model", base_url=f"https://127.0.0.1:{port}/v1", api_key=KEY, max_retries=0
        )
        result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
        thread.join(5)
    assert result.error is not None and result.error.type == "JudgeConnectionError"
    assert "CERTIFICATE_VERIFY_FAILED" in result.error.message


@pytest.mark.parametrize("status", [200, 400, 503])
async def test_a_key_echoed_where_an_error_quote_is_cut_does_not_leak_in_part(status: int) -> None:
    # A quote of the body is cut at 300 characters; a key echoed across the cut must not
    # leave its first characters behind (redacting after the cut would miss them).
    for padding in (280, 290, 295):
        page = b"<html>" + b"x" * padding + KEY.encode() + b"</html>"
        html = Reply(status, page, {"Content-Type": "text/html"})
        with http_server(html) as server:
            judge = OpenAIJudge(
                "judge-model", base_url=server.base_url, api_key=KEY, max_retries=0, timeout=5
            )
            result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
        assert result.error is not None
        dumped = result.model_dump_json()
        assert KEY[:8] not in dumped, (status, padding, result.error.message)


@pytest.mark.parametrize(
    "moved",
    [
        "http://judge.example/" + "p" * 285 + "/" + KEY + "/chat/completions",
        "http://[judge.example/v1",  # does not parse
        "http://judge.example:port/v1",
    ],
)
async def test_a_redirect_to_a_strange_or_keyed_url_is_a_request_error_that_leaks_nothing(
    moved: str,
) -> None:
    with http_server(Reply(302, b"", {"Location": moved})) as server:
        judge = OpenAIJudge("judge-model", base_url=server.base_url, api_key=KEY, max_retries=0)
        result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
    assert result.error is not None and result.error.type == "JudgeRequestError"
    assert KEY[:8] not in result.model_dump_json()


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_a_forked_child_judges_on_its_own_connections_and_the_parent_keeps_its_own() -> None:
    with http_server(good) as server:
        judge = OpenAIJudge("judge-model", base_url=server.base_url, api_key=KEY, use_cache=False)
        scorer = create_faithfulness_scorer(judge, context=PYTHON.context)
        loop = asyncio.new_event_loop()
        try:
            assert loop.run_until_complete(scorer.run(RUN)).score == 0.5  # a pooled connection
            pid = os.fork()
            if pid == 0:  # the child: a loop of its own, the parent's connection untouched
                os._exit(0 if asyncio.run(scorer.run(RUN)).score == 0.5 else 1)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
            assert loop.run_until_complete(scorer.run(RUN)).score == 0.5
        finally:
            loop.close()
    assert len(server.requests) == 3


# --- the bounds of agentscore's client, as a judge's results show them -----------------------


def answering(data: bytes) -> Callable[[Conn], None]:
    def handler(conn: Conn) -> None:
        conn.read_request()
        conn.sock.sendall(data)
        conn.wait_for_the_client_to_close()

    return handler


@pytest.mark.parametrize(
    "data",
    [
        reply(gzip.compress(b" " * (8 << 20)), headers=("Content-Encoding: gzip",)),
        b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n" + b"x" * 1000,
    ],
    ids=["gzip-bomb", "content-length"],
)
async def test_a_reply_body_over_the_bound_fails_typed(data: bytes) -> None:
    with tcp_server(answering(data)) as server:
        judge = OpenAIJudge("judge-model", base_url=server.url, api_key=KEY, max_retries=2)
        result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
    assert result.error is not None and result.error.type == "JudgeReplyTooLargeError"
    assert result.error.message.startswith(
        "the judge's reply is too large: a reply body over 4,194,304 bytes from http://127.0.0.1:"
    )
    assert len(server.requests) == 1  # not retried: a runaway is not transient


def drip_forever(conn: Conn) -> None:
    conn.read_request()
    conn.sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
    try:
        while not conn.stopping.wait(0.05):  # each read gets a byte in time: only the whole
            conn.sock.sendall(b"b")  # request's deadline ends it
    except OSError:
        conn.closed_by_client.set()


async def test_timeout_bounds_the_whole_request_not_each_read() -> None:
    with tcp_server(drip_forever) as server:
        judge = OpenAIJudge("m", base_url=server.url, api_key=KEY, max_retries=0, timeout=0.5)
        result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
        assert server.conns[0].closed_by_client.wait(60)  # gave up and hung up
    assert result.error is not None and result.error.type == "JudgeTimeoutError"
    assert result.error.message == (
        f"judge request timed out: no reply within 0.5 s from {server.url.removesuffix('/v1')}"
    )
