"""Context for scorers: a run's tool results and retrieved documents, and the `get_context`
callback contract."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agentscore._memo import RecentValues
from agentscore.adapters import coerce_messages
from agentscore.messages import Message, pair_tool_calls
from agentscore.run import ScorerRun

__all__ = [
    "ContextParams",
    "GetContext",
    "ToolResult",
    "extract_tool_results",
    "format_tool_result",
    "found_context",
    "run_context",
]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One tool invocation of a run and what it returned.

    `result` is the parsed JSON value when the tool message holds JSON, else its text.
    `args` is the parsed argument object (or the raw text when it was not valid JSON).
    """

    tool_name: str
    tool_call_id: str
    args: Any
    result: Any


def extract_tool_results(output: object) -> list[ToolResult]:
    """Tool calls paired with their results, from a run's output messages in any supported shape.

    Accepts a `ScorerRun`'s output, OpenAI chat messages (assistant `tool_calls` followed by
    `role="tool"` messages) or the agent's `Message`s. Calls that never got a result are left out.
    """
    messages: Sequence[Message] = coerce_messages(output)
    results: list[ToolResult] = []
    for message, call in zip(messages, pair_tool_calls(messages), strict=True):
        if message.role != "tool":
            continue
        results.append(
            ToolResult(
                tool_name=message.name or (call.name if call else "") or "tool",
                tool_call_id=message.tool_call_id or "",
                args=_parse_json(call.arguments) if call else None,
                result=_parse_json(message.content or ""),
            )
        )
    return results


def format_tool_result(result: ToolResult) -> str:
    """One context chunk per tool result, as JSON naming the tool."""
    return json.dumps({"tool": result.tool_name, "result": result.result}, ensure_ascii=False)


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # nested deeper than the parser goes: keep the text
        return text


@dataclass(frozen=True, slots=True)
class ContextParams:
    """What a `get_context` callback receives.

    `step` says which step asks ("analyze" or "generate_reason"); `score` is set only for
    "generate_reason"; `results` holds the earlier steps' results by step name.
    """

    run: ScorerRun
    step: Literal["analyze", "generate_reason"]
    results: dict[str, Any] = field(default_factory=dict)
    score: float | None = None


GetContext = Callable[[ContextParams], Sequence[str] | Awaitable[Sequence[str]]]


def found_context(run: ScorerRun) -> list[str]:
    """The context a run brings by itself: its tool results (those of earlier turns in its
    input history first, then its output's), then its retrieved documents. What the built-in
    scorers judge against when given no `context` or `get_context`: an answer may restate
    what a tool said turns ago.

    Read once per run: every scorer of a run asks, and a tool result is parsed and written
    again as one JSON chunk, which is slow for a large result. The runs found lately are kept by
    content (their tool messages and documents; a run's copy in another job is the same
    key), within a bound on entries and characters."""
    messages = [*run.input, *run.output]
    key = (
        tuple(m for m in messages if m.role == "tool" or m.tool_calls),
        tuple(run.documents),
    )
    kept = _found.get(key)
    if kept is None:
        tools = [format_tool_result(result) for result in extract_tool_results(messages)]
        kept = tools + list(run.documents)
        _found.put(key, kept, sum(len(chunk) for chunk in kept))
    return list(kept)


# The keys keep the runs' own text too: 16 runs, 4 million characters of chunks.
_found: RecentValues[list[str]] = RecentValues(entries=16, size=4_000_000)


def run_context(params: ContextParams) -> list[str]:
    """A `get_context` for per-run context: the run's `request_context["context"]` when set
    (batch items carry their own), else its tool results and retrieved documents."""
    own = params.run.request_context.get("context")
    if own is not None:
        return [own] if isinstance(own, str) else list(own)
    return found_context(params.run)
