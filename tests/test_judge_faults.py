"""The fault matrix: every way a judge can fail ends as a failed result, with bounded requests."""

from __future__ import annotations

import time

import pytest

from agentscore.judges import OpenAIJudge
from agentscore.result import ScoreResult
from agentscore.run import ScorerRun
from agentscore.scorers import ScoreStatus, create_faithfulness_scorer
from agentscore.testing import (
    ScriptedEndpoint,
    ScriptedReply,
    chat_completion,
    http_error,
    network_failure,
)
from tests.support.http_server import Reply, http_server, json_reply
from tests.support.seeds import PYTHON, verify_reply

pytestmark = pytest.mark.anyio

FAST_RETRY = {"retry-after-ms": "5"}
KEY = "sk-test-not-a-real-key"
RUN = ScorerRun(input=PYTHON.query, output=PYTHON.response)
GOOD = chat_completion(verify_reply(PYTHON))


@pytest.fixture(params=["sdk", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    """Each fault through both clients a judge sends with: one the user passed in (an SDK
    client on a mock transport) and the judge's own (the SDK on agentscore's HTTP client, a
    judge configured by URL), over sockets."""
    return str(request.param)


async def score_with(
    script: list[ScriptedReply], transport: str, *, retries: int = 2, stepwise: bool = False
) -> tuple[ScoreResult, ScriptedEndpoint]:
    endpoint = ScriptedEndpoint(script)
    if transport == "sdk":
        judge = OpenAIJudge("judge-model", client=endpoint.client(max_retries=retries))
        scorer = create_faithfulness_scorer(judge, context=PYTHON.context, stepwise=stepwise)
        return await scorer.run(RUN), endpoint
    with endpoint.serve() as url:
        judge = OpenAIJudge(
            "judge-model", base_url=url, api_key=KEY, max_retries=retries, timeout=0.5
        )
        scorer = create_faithfulness_scorer(judge, context=PYTHON.context, stepwise=stepwise)
        return await scorer.run(RUN), endpoint


@pytest.mark.parametrize(
    "bad_reply",
    [
        chat_completion("this is not json"),
        chat_completion('{"claims": [{"claim": "Python was created'),
        chat_completion('{"claims": [{"claim": "x", "verdict": "maybe", "reason": "r"}]}'),
        chat_completion('{"claims": [{"claim": "x", "verdict": "yes"}]}'),
        chat_completion('{"claims": [{"claim": "", "verdict": "yes", "reason": "r"}]}'),
        chat_completion(
            '{"claims": [{"claim": "x", "verdict": "yes", "reason": "r"', finish_reason="length"
        ),
        chat_completion(None),
    ],
    ids=[
        "prose",
        "truncated",
        "unknown-verdict",
        "missing-field",
        "empty-claim",
        "length",
        "empty",
    ],
)
async def test_invalid_reply_is_repaired_once(bad_reply: ScriptedReply, transport: str) -> None:
    result, endpoint = await score_with([bad_reply, GOOD], transport)
    assert result.status is ScoreStatus.SCORED
    assert result.score == 0.5
    assert len(endpoint.requests) == 2
    assert result.judge_usage.calls == 2
    repair = endpoint.requests[1]["messages"]
    assert repair[-1]["role"] == "user"
    assert "could not be used" in repair[-1]["content"]


async def test_invalid_twice_is_a_failed_result_never_a_score(transport: str) -> None:
    bad = chat_completion('{"claims": "nope"}')
    result, endpoint = await score_with([bad, bad, GOOD], transport)
    assert result.status is ScoreStatus.FAILED
    assert result.score is None
    assert result.passed is None
    assert result.error is not None
    assert result.error.type == "JudgeOutputError"
    assert "after one repair attempt" in result.error.message
    assert len(endpoint.requests) == 2


async def test_wrong_verdict_count_in_stepwise_mode_is_repaired_then_fails(transport: str) -> None:
    claims = [claim for claim, _ in PYTHON.verdicts]
    short = chat_completion({"verdicts": [{"claim": "x", "verdict": "yes", "reason": "r"}]})
    result, endpoint = await score_with(
        [chat_completion({"claims": claims}), short, short], transport, stepwise=True
    )
    assert result.status is ScoreStatus.FAILED
    assert result.error is not None and result.error.type == "JudgeOutputError"
    assert "expected exactly 4 verdicts" in result.error.message
    assert len(endpoint.requests) == 3
    assert result.preprocess_step_result == claims  # what was done before the failure is kept


async def test_code_fenced_json_is_accepted_without_repair(transport: str) -> None:
    assert GOOD.body is not None
    fenced = chat_completion("```json\n" + GOOD.body["choices"][0]["message"]["content"] + "\n```")
    result, endpoint = await score_with([fenced], transport)
    assert result.score == 0.5
    assert len(endpoint.requests) == 1


async def test_rate_limit_is_retried_honouring_retry_after(transport: str) -> None:
    result, endpoint = await score_with([http_error(429, headers=FAST_RETRY), GOOD], transport)
    assert result.status is ScoreStatus.SCORED
    assert len(endpoint.requests) == 2


@pytest.mark.parametrize(
    ("reply", "error_type"),
    [
        (http_error(429, headers=FAST_RETRY), "JudgeRateLimitError"),
        (http_error(503, headers=FAST_RETRY), "JudgeServerError"),
        (network_failure("timeout"), "JudgeTimeoutError"),
        (network_failure("connect"), "JudgeConnectionError"),
    ],
)
async def test_persistent_transient_errors_fail_after_bounded_retries(
    reply: ScriptedReply, error_type: str, transport: str
) -> None:
    started = time.perf_counter()
    result, endpoint = await score_with([reply] * 10, transport, retries=2)
    assert result.status is ScoreStatus.FAILED
    assert result.error is not None and result.error.type == error_type
    assert len(endpoint.requests) == 3  # the first try and two retries
    assert time.perf_counter() - started < 60  # the replies' short Retry-After, no long wait


async def test_auth_failure_is_not_retried_and_leaks_no_key(transport: str) -> None:
    result, endpoint = await score_with(
        [http_error(401, "Incorrect API key provided: sk-test-not-a-real-key")], transport
    )
    assert result.error is not None and result.error.type == "JudgeAuthError"
    assert len(endpoint.requests) == 1
    assert "sk-test" not in result.error.message
    assert "sk-test" not in result.model_dump_json()


async def test_unsupported_response_format_falls_back_and_is_remembered(transport: str) -> None:
    def server(body: dict[str, object]) -> ScriptedReply:
        response_format = body.get("response_format")
        if response_format is not None:
            return http_error(400, f"response_format {response_format} is not supported")
        return GOOD

    endpoint = ScriptedEndpoint(server)
    with endpoint.serve() as url:
        if transport == "sdk":
            judge = OpenAIJudge(
                "judge-model", client=endpoint.client(max_retries=0), use_cache=False
            )
        else:
            judge = OpenAIJudge(
                "judge-model", base_url=url, api_key=KEY, max_retries=0, use_cache=False
            )
        scorer = create_faithfulness_scorer(judge, context=PYTHON.context)

        first = await scorer.run(RUN)
        assert first.score == 0.5
        assert [r.get("response_format", {}).get("type") for r in endpoint.requests] == [
            "json_schema",
            "json_object",
            None,
        ]
        assert judge.output_mode == "prompt"
        assert '"verdict"' in endpoint.requests[2]["messages"][0]["content"]  # schema in prompt

        judge_again = await scorer.run(RUN)
    assert judge_again.score == 0.5
    assert len(endpoint.requests) == 4  # straight to the mode that works


async def test_other_bad_requests_are_not_mistaken_for_format_support(transport: str) -> None:
    result, endpoint = await score_with(
        [http_error(400, "model 'judge-model' does not exist")], transport
    )
    assert result.error is not None and result.error.type == "JudgeRequestError"
    assert len(endpoint.requests) == 1


# --- a 200 whose body is not a chat completion ----------------------------------------------

HTML_PAGE = Reply(
    body=b"<html><body><h1>502 Bad Gateway</h1></body></html>",
    headers={"Content-Type": "text/html"},
)
GOOD_BODY = json_reply(GOOD.body)
CUT_BODY = Reply(body=GOOD_BODY.body[: len(GOOD_BODY.body) // 2])
NOT_A_COMPLETION = json_reply({"detail": "upstream unavailable"})
EMPTY = Reply(body=b"")


@pytest.mark.parametrize(
    "bad",
    [HTML_PAGE, CUT_BODY, NOT_A_COMPLETION, EMPTY],
    ids=["html", "cut-json", "other-json", "empty"],
)
async def test_a_bad_200_body_is_retried_and_counted(bad: Reply) -> None:
    with http_server([bad, GOOD_BODY]) as server:
        judge = OpenAIJudge("m", base_url=server.base_url, api_key="sk-raw-test", max_retries=2)
        result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
    assert result.status is ScoreStatus.SCORED, result.error
    assert result.score == 0.5
    assert len(server.requests) == 2
    assert result.judge_usage.calls == 2  # both requests, the bad one too
    assert result.judge_usage.input_tokens == 100  # only the good reply reported tokens


@pytest.mark.parametrize("bad", [HTML_PAGE, CUT_BODY], ids=["html", "cut-json"])
async def test_a_bad_200_body_that_persists_is_a_typed_failure(bad: Reply) -> None:
    with http_server([bad]) as server:
        judge = OpenAIJudge("m", base_url=server.base_url, api_key="sk-raw-test", max_retries=1)
        result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
    assert result.status is ScoreStatus.FAILED
    assert result.error is not None and result.error.type == "JudgeResponseError"
    assert "answered 200 with a body that is not" in result.error.message
    assert len(server.requests) == 2  # the first try and one retry, as max_retries says
    assert result.judge_usage.calls == 2
    assert "sk-raw-test" not in result.model_dump_json()


async def test_a_fence_with_thousands_of_spaces_is_repaired_not_backtracked_on(
    transport: str,
) -> None:
    # A regex for the fence backtracked quadratically here: a minute for 4,000 spaces.
    runaway = chat_completion("```" + " " * 60_000 + "x")
    result, endpoint = await score_with([runaway, GOOD], transport)
    assert result.status is ScoreStatus.SCORED
    assert result.score == 0.5
    assert len(endpoint.requests) == 2


async def test_bad_bodies_and_5xx_share_one_retry_budget() -> None:
    # A proxy that fails twice, then answers 200 with its error page, again and again: the
    # bad body spends the judge's retries like a 5xx, so the requests stay bounded by them.
    server_error = json_reply({"error": {"message": "upstream down"}}, 500)
    cycle = [server_error, server_error, HTML_PAGE]
    with http_server(cycle * 5) as server:
        judge = OpenAIJudge("m", base_url=server.base_url, api_key="sk-raw-test", max_retries=2)
        result = await create_faithfulness_scorer(judge, context=PYTHON.context).run(RUN)
    assert result.status is ScoreStatus.FAILED
    assert result.error is not None
    assert result.error.type == "JudgeResponseError"  # the last answer: the error page
    # One attempt and max_retries retries in all, whatever failed: 500, 500, page (the SDK's
    # retries inside ours made 9, then 5 with a shared budget).
    assert len(server.requests) == 3
