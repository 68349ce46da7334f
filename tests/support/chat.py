"""OpenAI chat-completion replies for `http_server` (tests/support/http_server.py), which then
serves as an OpenAI-compatible judge: point the client at its `base_url`.

Unlike `agentscore.testing.ScriptedEndpoint` (a mock transport), it goes through sockets, so
it serves other processes too (subprocess tests) and the SDK's real transport.
"""

from __future__ import annotations

from typing import Any

from agentscore.testing import chat_completion
from tests.support.http_server import Reply, Request, json_reply


def judge_reply(content: dict[str, Any] | str, delay: float = 0.0) -> Reply:
    """A 200 whose assistant message is `content` (a dict is sent as its JSON text)."""
    return json_reply(chat_completion(content).body, delay=delay)


def echo_key_401(request: Request) -> Reply:
    """What some providers do: quote the rejected key back in the error message."""
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    message = f"Incorrect API key provided: {key}. Authorization: Bearer {key}"
    return json_reply({"error": {"message": message, "type": "invalid_request_error"}}, 401)
