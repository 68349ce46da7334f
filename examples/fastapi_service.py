"""A FastAPI service whose agent is scored live on a sample of its traffic.

POST /chat answers at once; half the conversations (chosen on the trace id) are scored in
the background. GET /scores shows recent scores. The lifespan flushes pending scores on
shutdown. Offline by default (scripted model, local judge); with OPENAI_API_KEY set it uses
a real model.

    python examples/fastapi_service.py        # serves on http://127.0.0.1:8000
    curl -s localhost:8000/chat -H 'content-type: application/json' \
         -d '{"message": "Where is order 1042?"}'
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

from agentscore import Agent, tool
from agentscore.scorers import create_faithfulness_scorer
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion

LIVE = bool(os.environ.get("OPENAI_API_KEY"))


@tool
def lookup_order(order_id: int) -> dict[str, Any]:
    """Look up an order by its number."""
    return {"order_id": order_id, "status": "shipped", "shipped_on": "2026-11-18"}


def scripted_model(body: dict[str, Any]) -> ScriptedReply:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return chat_completion("Order 1042 was shipped on 2026-11-18.")
    return chat_completion(None, tool_calls=[("lookup_order", {"order_id": 1042})])


agent = Agent(
    name="support",
    model="gpt-4o-mini",
    instructions="Answer from the order tool.",
    tools=[lookup_order],
    client=None if LIVE else ScriptedEndpoint(scripted_model).client(),
    evals={
        "scorers": [create_faithfulness_scorer("gpt-4o-mini" if LIVE else "local")],
        "sampling": 0.5,
    },
)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    yield
    await agent.aflush(timeout=10)  # let in-flight scores land before the process stops


app = FastAPI(lifespan=lifespan)


class ChatRequest(BaseModel):
    message: str


@app.post("/chat")
async def chat(request: ChatRequest) -> dict[str, Any]:
    result = await agent.generate(request.message)
    return {"answer": result.text, "trace_id": result.trace_id}


@app.get("/scores")
async def scores() -> list[dict[str, Any]]:
    return [
        {"scorer": s.scorer_id, "score": s.score, "label": s.label, "trace_id": s.trace_id}
        for s in agent.scores[-20:]
    ]


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=8000)
