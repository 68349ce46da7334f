"""Per-event-loop SDK clients: one per loop, closed on that loop when it ends."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import trio
from openai import AsyncOpenAI

from agentscore._wire.clients import LoopLocalClient, create_chat_completion
from tests.support.chat import judge_reply
from tests.support.http_server import http_server
from tests.support.seeds import PYTHON, verify_reply

ROOT = Path(__file__).resolve().parent.parent
GOOD_BODY = judge_reply(verify_reply(PYTHON))


def test_each_loop_gets_its_own_client_closed_when_the_loop_ends() -> None:
    with http_server([GOOD_BODY]) as server:
        made: list[AsyncOpenAI] = []

        def factory() -> AsyncOpenAI:
            made.append(
                AsyncOpenAI(api_key="sk-loop-test", base_url=server.base_url, max_retries=0)
            )
            return made[-1]

        clients = LoopLocalClient(factory)

        async def use() -> AsyncOpenAI:
            client = clients.get()
            assert clients.get() is client  # reused on the same loop
            # Opens a pooled keep-alive connection, which only that loop can close.
            await create_chat_completion(client, {"model": "m", "messages": []})
            return client

        first = asyncio.run(use())
        assert first.is_closed()
        second = trio.run(use)
        assert second.is_closed()
        third = asyncio.run(use())
        assert third.is_closed()
        assert made == [first, second, third]
        assert len(server.requests) == 3


def test_a_client_given_by_the_user_is_shared_and_left_open() -> None:
    shared = AsyncOpenAI(api_key="sk-loop-test", base_url="http://127.0.0.1:9/v1")
    clients = LoopLocalClient(lambda: AsyncOpenAI(api_key="unused"), shared=shared)

    async def use() -> AsyncOpenAI:
        return clients.get()

    assert asyncio.run(use()) is shared
    assert trio.run(use) is shared
    assert not shared.is_closed()


SCRIPT = """
import asyncio, gc, json, sys
import trio
from agentscore.judges import OpenAIJudge
from agentscore.scorers import create_faithfulness_scorer
from tests.support.chat import judge_reply
from tests.support.http_server import http_server
from tests.support.seeds import PYTHON, verify_reply

run = {"input": PYTHON.query, "output": PYTHON.response}
with http_server(judge_reply(verify_reply(PYTHON))) as server:
    judge = OpenAIJudge("m", base_url=server.base_url, api_key="sk-loop-test", use_cache=False)
    scorer = create_faithfulness_scorer(judge, context=PYTHON.context)

    async def score():
        gc.collect()  # a client left from an earlier loop would be finalised on this one
        return (await scorer.run(run)).score

    async def score_with_own_judge():
        own = OpenAIJudge("m", base_url=server.base_url, api_key="sk-loop-test")
        return (await create_faithfulness_scorer(own, context=PYTHON.context).run(run)).score

    scores = [asyncio.run(score()), trio.run(score), asyncio.run(score()), trio.run(score),
              asyncio.run(score_with_own_judge()), asyncio.run(score())]
    gc.collect()
    print(scores, len(server.requests))
"""


def test_stderr_is_clean_after_asyncio_run_and_trio_run() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", textwrap.dedent(SCRIPT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0.5, 0.5, 0.5, 0.5, 0.5, 0.5] 6"
    assert done.stderr == ""
