"""A whole run and a conversation as the text a judge reads: a trace's steps one line each,
a conversation's turns one block each, and the user's request.

Long fields are clipped (a tool result of a megabyte would crowd out the rest, and the judge
needs its gist, not every byte), and a whole rendering over its bound is refused
(`InputTooLargeError`), as an answer over its bound is in the other scorers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agentscore.errors import InputTooLargeError, MissingInputError
from agentscore.messages import Message, assistant_text, pair_tool_calls
from agentscore.run import ConversationRun, ScorerRun, TraceRun, TraceStep, Turn

__all__ = [
    "FIELD_CHARS",
    "MAX_CHARS",
    "answer_of",
    "bounded",
    "request_of",
    "step_lines",
    "turn_texts",
    "turns_of",
]

# A field (a tool's arguments or result, a message) beyond this is clipped, saying how much.
FIELD_CHARS = 4_000
# The whole of what one scorer sends as data, as the claim scorers bound their context.
MAX_CHARS = 400_000


def clip(text: str, limit: int = FIELD_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def bounded(texts: Sequence[str], what: str, scorer: str) -> tuple[str, ...]:
    """`texts` as they are, or `InputTooLargeError` when together they exceed `MAX_CHARS`."""
    size = sum(len(text) for text in texts)
    if size > MAX_CHARS:
        raise InputTooLargeError(
            f"the {what} take {size} characters, more than the {MAX_CHARS} {scorer} judges"
        )
    return tuple(texts)


def step_lines(run: TraceRun) -> list[str]:
    """One line per step, in order; every value JSON-quoted, so no step's text (a tool
    result with line breaks) can pass for another step."""
    return [_step_line(step) for step in run.steps]


def _step_line(step: TraceStep) -> str:
    parts = [f"{step.kind} {json.dumps(step.name, ensure_ascii=False)}"]
    fields = (
        ("arguments", step.arguments),
        ("result", step.result),
        ("error", step.error),
    )
    parts.extend(
        f"{label}={json.dumps(clip(value), ensure_ascii=False)}" for label, value in fields if value
    )
    if step.documents:
        documents = [clip(document) for document in step.documents]
        parts.append(f"documents={json.dumps(documents, ensure_ascii=False)}")
    return " ".join(parts)


def turns_of(run: ScorerRun) -> list[Turn]:
    """A conversation's turns; for a generation or a trace, the turns its message history
    tells (a turn starts at each user message that follows the agent's)."""
    if isinstance(run, ConversationRun):
        return list(run.turns)
    turns: list[Turn] = []
    asked: list[Message] = []
    answered: list[Message] = []
    for message in [*run.input, *run.output]:
        if message.role == "system":
            continue
        if message.role == "user" and answered:
            turns.append(Turn(input=asked, output=answered))
            asked, answered = [], []
        (asked if message.role == "user" else answered).append(message)
    if asked or answered:
        turns.append(Turn(input=asked, output=answered))
    return turns


def turn_texts(turns: Sequence[Turn]) -> list[str]:
    """Each turn as the judge reads it: the user's messages, the tool calls with their
    results or errors, and the answer."""
    return [_turn_text(turn) for turn in turns]


def _turn_text(turn: Turn) -> str:
    messages = [*turn.input, *turn.output]
    lines: list[str] = []
    for message, call in zip(messages, pair_tool_calls(messages), strict=True):
        if message.role == "user" and message.content:
            lines.append(f"user: {clip(message.content)}")
        elif message.role == "tool":
            name = call.name if call is not None else (message.name or "tool")
            lines.append(f"tool {name} returned: {clip(message.content or '')}")
        elif message.role == "assistant":
            lines.extend(
                f"assistant called {call.name}({clip(call.arguments)})"
                for call in message.tool_calls
            )
            if message.content and message.content.strip():
                lines.append(f"assistant: {clip(message.content.strip())}")
    return "\n".join(lines) or "(empty turn)"


def request_of(run: ScorerRun, scorer: str) -> str:
    """What the user asked of the run: for a conversation, every turn's user messages,
    named by turn; else the user's messages since the agent last spoke."""
    if isinstance(run, ConversationRun):
        lines = [
            f"turn {number}: {clip(text)}"
            for number, turn in enumerate(run.turns, start=1)
            if (text := _user_text(turn.input))
        ]
        request = "\n".join(lines)
    else:
        request = clip(_user_text(Turn.of(run).input) or run.input_text.strip())
    if not request:
        raise MissingInputError(
            f"the run has no user message: {scorer} judges the run against what the user asked"
        )
    return request


def answer_of(run: ScorerRun) -> str:
    """The run's final answer (a conversation's: its last turn's)."""
    return assistant_text(run.output).strip()


def _user_text(messages: Sequence[Message]) -> str:
    return "\n".join(
        message.content.strip()
        for message in messages
        if message.role == "user" and message.content and message.content.strip()
    )
