"""JSON schemas for structured output, and tolerant parsing of what judges reply."""

from __future__ import annotations

import functools
import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

__all__ = ["parse_reply", "strict_schema"]

T = TypeVar("T", bound=BaseModel)


@functools.cache
def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema in the form OpenAI's strict structured outputs accept.

    Memoised: building it costs more CPU than the rest of a judge request. Treat the returned
    dict as read-only.
    """
    schema: dict[str, Any] = _tighten(model.model_json_schema())
    return schema


def _tighten(node: Any) -> Any:
    if isinstance(node, dict):
        tightened = {
            key: _tighten(value) for key, value in node.items() if key not in ("default", "title")
        }
        if tightened.get("type") == "object" and "properties" in tightened:
            tightened["additionalProperties"] = False
            tightened["required"] = list(tightened["properties"])
        return tightened
    if isinstance(node, list):
        return [_tighten(item) for item in node]
    return node


def _unfence(text: str) -> str | None:
    """The body of a reply wrapped in a Markdown code fence (```json ... ```), else None.

    Not a regex: a lazy body before a trailing fence backtracks quadratically, and a reply of
    "```" and a few thousand spaces held the scoring loop for a minute."""
    if len(text) < 6 or not (text.startswith("```") and text.endswith("```")):
        return None
    return text[3:-3].removeprefix("json").strip()


def parse_reply(text: str | None, output_type: type[T]) -> T:
    """Parse a judge's reply into `output_type`.

    Tolerates a Markdown code fence and prose around a single JSON object, because many
    OpenAI-compatible servers add them. Raises `ValueError` with a message the judge can act on.
    """
    if not text or not text.strip():
        raise ValueError("the reply was empty; expected a JSON object")
    candidate = text.strip()
    fenced = _unfence(candidate)
    if fenced is not None:
        candidate = fenced
    elif not candidate.startswith("{"):
        start, end = candidate.find("{"), candidate.rfind("}")
        if start != -1 and end > start:
            candidate = candidate[start : end + 1]
    try:
        data = json.loads(candidate)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply is not valid JSON ({exc.msg} at char {exc.pos})") from exc
    try:
        return output_type.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'reply'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        raise ValueError(f"the JSON does not match the schema ({problems})") from exc
