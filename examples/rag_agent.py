"""A retrieval agent scored live for hallucination against its own tool results.

The scorer's `get_context` reads the documents this very run retrieved
(`extract_tool_results(params.run.output)`), so each answer is judged against what the agent
actually saw. Offline by default: the model's replies are scripted and the judge is the local
judge. With OPENAI_API_KEY set, it uses a real model for both.

    python examples/rag_agent.py
"""

from __future__ import annotations

import json
import os
from typing import Any

from agentscore import Agent, tool
from agentscore.context import ContextParams
from agentscore.scorers import create_hallucination_scorer, extract_tool_results
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion

DOCS = {
    "warranty": "All shoes carry a one-year warranty against manufacturing defects.",
    "returns": "Unworn shoes can be returned within 30 days of delivery for a full refund.",
}
ANSWERS = {  # what the scripted model says once it has read the document
    "warranty": "All shoes carry a one-year warranty against manufacturing defects.",
    "returns": "Unworn shoes can be returned within 90 days of delivery for a full refund.",
}


@tool
def search_docs(query: str) -> list[str]:
    """Find the help-centre articles about a topic."""
    return [text for topic, text in DOCS.items() if topic in query.lower()]


def scripted_model(body: dict[str, Any]) -> ScriptedReply:
    """Answers like a model: search first, then answer (one answer invents a 90-day window)."""
    question = body["messages"][-1]["content"] if body["messages"][-1]["role"] == "user" else ""
    topic = next((t for t in DOCS if t in json.dumps(body["messages"]).lower()), "warranty")
    if question:
        return chat_completion(None, tool_calls=[("search_docs", {"query": topic})])
    return chat_completion(ANSWERS[topic])


def retrieved_documents(params: ContextParams) -> list[str]:
    return [json.dumps(t.result) for t in extract_tool_results(params.run.output)]


def main() -> None:
    live = bool(os.environ.get("OPENAI_API_KEY"))
    hallucination = create_hallucination_scorer(
        "gpt-4o-mini" if live else "local", get_context=retrieved_documents
    )
    agent = Agent(
        name="help-centre",
        model="gpt-4o-mini",
        instructions="Answer from the help-centre articles you find.",
        tools=[search_docs],
        client=None if live else ScriptedEndpoint(scripted_model).client(),
        evals={"scorers": [hallucination], "sampling": 1.0},
    )
    runs = {}
    for question in ["What is your warranty?", "How long do I have for returns?"]:
        result = agent.generate_sync(question)  # returns at once; scoring runs in the background
        runs[result.run_id] = question
        print(f"Q: {question}\nA: {result.text}")
    agent.flush(timeout=60)
    for score in agent.scores:
        verdict = score.label or score.status.value  # no label when the run was not scored
        print(f"[{runs[score.run_id]}] hallucination {score.score} ({verdict})")
        print(f"  {score.reason}")


if __name__ == "__main__":
    main()
