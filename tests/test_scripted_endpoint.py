"""`ScriptedEndpoint` counts what it answers, and keeps the bodies only when asked to."""

from __future__ import annotations

from typing import Any

import pytest

from agentscore.testing import ScriptedEndpoint, chat_completion


def answer(body: dict[str, Any]) -> Any:
    return chat_completion(f"{len(body['messages'])} messages")


@pytest.mark.anyio
@pytest.mark.parametrize("keep", [True, False])
async def test_every_request_is_counted_and_kept_only_if_asked(keep: bool) -> None:
    endpoint = ScriptedEndpoint(answer, keep_requests=keep)
    client = endpoint.client(max_retries=0)
    for question in ("one", "two"):
        reply = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": question}]
        )
        assert reply.choices[0].message.content == "1 messages"
    assert endpoint.request_count == 2
    kept = [body["messages"][0]["content"] for body in endpoint.requests]
    assert kept == (["one", "two"] if keep else [])
