"""The demo's support agent: real tools over an embedded SQLite table and a policy lookup."""

from __future__ import annotations

import json
import sqlite3
import threading
from functools import cache
from importlib import resources
from typing import Any

from openai import AsyncOpenAI

from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion, http_error
from agentscore.tools import Tool, tool

__all__ = ["INSTRUCTIONS", "QUESTIONS", "RECORDED_MODEL", "replay_client", "support_tools"]

INSTRUCTIONS = (
    "You are the support assistant of an online shoe shop. Use the tools to look up orders and "
    "policies, and answer only from what they return."
)

_ORDERS = [
    (1042, "shipped", "UPS", "2026-11-18", "2026-11-24"),
    (2001, "processing", None, None, "2026-11-28"),
    (2002, "delivered", "DHL", "2026-11-10", "2026-11-14"),
]
_POLICIES = {
    "returns": (
        "Items can be returned within 30 days of delivery for a full refund. "
        "Worn shoes cannot be returned."
    ),
    "shipping": "Standard shipping is free on orders over $50. Express shipping costs $15.",
    "warranty": "All shoes carry a one-year warranty against manufacturing defects.",
}


@cache
def _recording() -> dict[str, Any]:
    text = resources.files("agentscore.demo").joinpath("recording.json").read_text("utf-8")
    recording: dict[str, Any] = json.loads(text)
    return recording


QUESTIONS: list[str] = [entry["question"] for entry in _recording()["questions"]]
RECORDED_MODEL: str = _recording()["model"]


class _OrderBook:
    """An in-memory SQLite table of orders, shared by the tool's worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT, carrier TEXT, "
            "shipped_on TEXT, expected_on TEXT)"
        )
        self._db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", _ORDERS)

    def find(self, order_id: int) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT id, status, carrier, shipped_on, expected_on FROM orders WHERE id = ?",
                (order_id,),
            ).fetchone()
        if row is None:
            return None
        keys = ("order_id", "status", "carrier", "shipped_on", "expected_on")
        return {key: value for key, value in zip(keys, row, strict=True) if value is not None}


def support_tools() -> list[Tool]:
    book = _OrderBook()

    @tool
    def lookup_order(order_id: int) -> dict[str, Any]:
        """Look up an order's status, carrier and dates by its number."""
        return book.find(order_id) or {"order_id": order_id, "error": "order not found"}

    @tool
    def lookup_policy(topic: str) -> str:
        """Read the shop's policy on a topic: returns, shipping or warranty."""
        return _POLICIES.get(topic.lower().strip(), f"No policy found on {topic!r}.")

    return [lookup_order, lookup_policy]


def replay_client() -> AsyncOpenAI:
    """An OpenAI client whose replies are replayed from the recording, matched by question
    and by how far the tool loop has got."""
    replies = {entry["question"]: entry["replies"] for entry in _recording()["questions"]}

    def respond(body: dict[str, Any]) -> ScriptedReply:
        messages = body.get("messages", [])
        question = next((m["content"] for m in messages if m.get("role") == "user"), "")
        step = sum(1 for m in messages if m.get("role") == "assistant")
        recorded = replies.get(question, [])
        if step >= len(recorded):
            return http_error(404, "no recorded reply for this conversation")
        reply = recorded[step]
        calls = [(name, arguments) for name, arguments in reply.get("tool_calls", [])]
        return chat_completion(reply.get("content"), tool_calls=calls, model=RECORDED_MODEL)

    return ScriptedEndpoint(respond).client(max_retries=0)
