"""Score a hand-written `openai` tool loop: one `evals.submit(...)` call, no agentscore.Agent.

The loop below is the usual Chat Completions tool loop. When it has its answer it hands the
question and the messages it added to `evals.submit`, which returns at once; the faithfulness
scorer judges the answer against the loop's own tool results, in the background, and the
evaluation is parented to the loop's current span. Offline by default (scripted model, local
judge); with OPENAI_API_KEY set it uses a real model for both.

    python examples/openai_loop.py
"""

from __future__ import annotations

import json
import os
from typing import Any

from openai import OpenAI
from opentelemetry import trace

from agentscore import Evals, Runner, ScoreResult
from agentscore.scorers import create_faithfulness_scorer
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion

ORDERS = {
    "1042": {"order_id": "1042", "status": "shipped", "carrier": "UPS", "shipped_on": "2026-11-18"}
}
TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order by its id.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
]


def lookup_order(order_id: str) -> dict[str, Any]:
    return ORDERS.get(order_id, {"error": "order not found"})


def answer(client: OpenAI, question: str) -> list[Any]:
    """The tool loop. Returns the messages it added: assistant turns and tool results."""
    messages: list[Any] = [{"role": "user", "content": question}]
    while True:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            return messages[1:]
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
            result = json.dumps(lookup_order(**arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def scripted_model(body: dict[str, Any]) -> ScriptedReply:
    """Offline stand-in for the model: look the order up, then answer from the result."""
    if body["messages"][-1]["role"] == "user":
        return chat_completion(None, tool_calls=[("lookup_order", {"order_id": "1042"})])
    return chat_completion("Order 1042 was shipped with UPS on 2026-11-18.")


def print_score(result: ScoreResult) -> None:
    verdict = result.label or result.status.value  # no label when the run was not scored
    print(f"{result.scorer_id} {result.score} ({verdict}): {result.reason}")


def main() -> None:
    live = bool(os.environ.get("OPENAI_API_KEY"))
    client = OpenAI() if live else ScriptedEndpoint(scripted_model).sync_client()
    runner = Runner()
    evals = Evals(
        scorers=[create_faithfulness_scorer("gpt-4o-mini" if live else "local")],
        runner=runner,
        on_score=print_score,
    )
    question = "Where is my order 1042?"
    with trace.get_tracer("my-app").start_as_current_span("support turn"):
        output = answer(client, question)
        evals.submit(question, output, agent_name="support")  # returns at once
    print(f"Q: {question}\nA: {output[-1].content}")
    runner.flush(timeout=60)


if __name__ == "__main__":
    main()
