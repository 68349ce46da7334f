"""A support agent's parts, scripted: a model that calls one tool then answers from it, and a
judge that finds the answer grounded in that tool's result (ungrounded without it)."""

from __future__ import annotations

import json
from typing import Any

from agentscore import tool
from agentscore.context import ContextParams
from agentscore.scorers import extract_tool_results
from agentscore.testing import ScriptedEndpoint, chat_completion

ORDER_ANSWER = "Order 42 shipped on May 2 and arrives on May 5."


@tool
def lookup_order(order_id: int) -> dict[str, Any]:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "shipped", "shipped": "May 2", "eta": "May 5"}


def agent_endpoint() -> ScriptedEndpoint:
    """A model that calls lookup_order once, then answers from its result."""

    def respond(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "tool":
            return chat_completion(ORDER_ANSWER)
        return chat_completion(None, tool_calls=[("lookup_order", {"order_id": 42})])

    return ScriptedEndpoint(respond)


def judge_endpoint(delay: float = 0.0) -> ScriptedEndpoint:
    def respond(body: dict[str, Any]) -> Any:
        prompt = body["messages"][1]["content"]
        grounded = '"status": "shipped"' in prompt
        verdict = "yes" if grounded else "unsure"
        claims = [
            {"claim": "Order 42 shipped on May 2.", "verdict": verdict, "reason": "tool result"},
            {"claim": "Order 42 arrives on May 5.", "verdict": verdict, "reason": "tool result"},
        ]
        return chat_completion({"claims": claims}, delay=delay)

    return ScriptedEndpoint(respond)


def tool_context(params: ContextParams) -> list[str]:
    return [
        json.dumps({"tool": t.tool_name, "result": t.result})
        for t in extract_tool_results(params.run.output)
    ]
