"""What the deterministic trace scorers share: a run's tool calls, their arguments read as
JSON and compared as JSON, and arguments or errors shown in a reason."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentscore._redact import scrub
from agentscore.run import TraceRun, TraceStep
from agentscore.scorers.base import StepParams

__all__ = [
    "Call",
    "calls_of",
    "canonical",
    "counted",
    "json_equal",
    "json_subset",
    "shown",
]

# How much of an argument list or an error a reason quotes.
_SHOWN_CHARS = 80


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call of a run: its 1-based place among the run's tool calls, its arguments
    parsed (`parsed` False: not recorded, or not JSON), its error if it failed, and `key`,
    what makes two calls the same call (the tool, and its arguments as JSON)."""

    number: int
    name: str
    arguments: Any
    parsed: bool
    raw: str | None
    error: str | None
    key: tuple[str, str]

    @classmethod
    def of(cls, number: int, step: TraceStep) -> Call:
        arguments, parsed = _parsed(step.arguments)
        same = canonical(arguments) if parsed else (step.arguments or "").strip()
        return cls(
            number, step.name, arguments, parsed, step.arguments, step.error, (step.name, same)
        )


def calls_of(params: StepParams) -> list[Call]:
    """The tool calls of the run, in order: a trace's tool steps, or those a generation's
    messages tell (`TraceRun.of`)."""
    steps = TraceRun.of(params.run).tool_steps
    return [Call.of(number, step) for number, step in enumerate(steps, start=1)]


def _parsed(text: str | None) -> tuple[Any, bool]:
    if text is None:
        return None, False
    if not text.strip():
        return {}, True  # some providers send "" for a call without arguments
    try:
        return json.loads(text), True
    except (ValueError, RecursionError):
        return None, False


def json_equal(expected: Any, actual: Any) -> bool:
    """Equal as JSON values: 1 and 1.0 are one number, but true is not 1 (as it is to Python)."""
    if isinstance(expected, Mapping):
        return (
            isinstance(actual, Mapping)
            and expected.keys() == actual.keys()
            and all(json_equal(value, actual[key]) for key, value in expected.items())
        )
    return _same_list_or_scalar(expected, actual, json_equal)


def json_subset(expected: Any, actual: Any) -> bool:
    """`expected` found in `actual`: every key of an object with a value found in the other's
    value under that key, at any depth; lists (same length, in order) and scalars as in
    `json_equal`."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and json_subset(value, actual[key]) for key, value in expected.items()
        )
    return _same_list_or_scalar(expected, actual, json_subset)


def _same_list_or_scalar(expected: Any, actual: Any, inner: Any) -> bool:
    if isinstance(expected, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(expected) == len(actual)
            and all(inner(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return expected == actual
    return type(expected) is type(actual) and bool(expected == actual)


def canonical(value: Any) -> str:
    """One text for equal JSON values: keys sorted, integral numbers written as integers."""
    return json.dumps(_integral(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(key): _integral(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_integral(item) for item in value]
    return value


def shown(value: Any) -> str:
    """A value quoted in a reason: compact JSON, bounded, with any secret in it scrubbed."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    # Scrubbed whole, then cut: a secret cut first could be too short to be recognised.
    text = scrub(" ".join(text.split()))
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def counted(number: int, noun: str) -> str:
    """ "1 tool call", "3 tool calls"."""
    return f"{number} {noun}{'' if number == 1 else 's'}"
