"""Deterministic checks of the answer's text, at no judge cost: a regex, a JSON schema, and
whether given strings appear (all, any or none of them)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Unpack

from agentscore._runtime.callbacks import on_loop
from agentscore.errors import ConfigurationError
from agentscore.scorers._claims import checked_output
from agentscore.scorers.base import Score, Scorer, StepParams
from agentscore.scorers.options import ScorerOptions, built_in

__all__ = [
    "ContainsMode",
    "create_contains_scorer",
    "create_json_schema_scorer",
    "create_regex_scorer",
]

ContainsMode = Literal["all", "any", "none"]
# A deterministic check passes only when it holds in full.
_THRESHOLD = 1.0


def create_regex_scorer(
    pattern: str | re.Pattern[str],
    *,
    flags: int = 0,
    fullmatch: bool = False,
    id: str = "regex",
    **options: Unpack[ScorerOptions],
) -> Scorer:
    """Score = `scale` when the answer matches `pattern` (anywhere, or whole with
    `fullmatch=True`), else 0. No judge request. Options: `ScorerOptions`."""
    try:
        compiled = re.compile(pattern, flags) if isinstance(pattern, str) else pattern
    except re.error as exc:
        raise ConfigurationError(f"invalid regex {pattern!r}: {exc}") from None
    find = compiled.fullmatch if fullmatch else compiled.search

    def check(output: str) -> tuple[float, str, Any]:
        match = find(output)
        shown = f"/{compiled.pattern}/"
        if match is None:
            how = "match" if fullmatch else "contain a match for"
            return 0.0, f"The answer does not {how} {shown}.", None
        how = "matches" if fullmatch else "contains a match for"
        return 1.0, f"The answer {how} {shown}: {match.group()[:100]!r}.", match.group()

    return _check_scorer(id, "The answer matches a regular expression.", check, options)


def create_json_schema_scorer(
    schema: Mapping[str, Any],
    *,
    id: str = "json_schema",
    **options: Unpack[ScorerOptions],
) -> Scorer:
    """Score = `scale` when the answer is JSON (a Markdown code fence around it is allowed)
    that validates against `schema` (JSON Schema draft 2020-12), else 0; the reason names the
    first problem. No judge request. Options: `ScorerOptions`."""
    if not isinstance(schema, Mapping):
        raise ConfigurationError("schema must be a JSON schema object (a mapping)")
    import jsonschema  # on first use: see tool_calls._problem

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ConfigurationError(f"invalid JSON schema: {exc.message}") from None
    validator = jsonschema.Draft202012Validator(schema)

    def check(output: str) -> tuple[float, str, Any]:
        text = _unfenced(output)
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            return 0.0, f"The answer is not JSON ({exc}).", None
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "the document"
            return 0.0, f"The answer's JSON violates the schema at {where}: {error.message}.", None
        return 1.0, "The answer is JSON that matches the schema.", value

    return _check_scorer(id, "The answer is JSON matching a schema.", check, options)


def create_contains_scorer(
    strings: Sequence[str],
    *,
    mode: ContainsMode = "all",
    case_sensitive: bool = False,
    id: str = "contains",
    **options: Unpack[ScorerOptions],
) -> Scorer:
    """Whether the answer contains the given strings. `mode="all"`: score = share of them
    present; `"any"`: `scale` if at least one is, else 0; `"none"`: share of them absent
    (a forbidden string present fails at the default threshold). No judge request.
    Options: `ScorerOptions`."""
    if (
        isinstance(strings, str)
        or not strings
        or not all(isinstance(s, str) and s for s in strings)
    ):
        raise ConfigurationError("strings must be a non-empty list of non-empty strings")
    if mode not in ("all", "any", "none"):
        raise ConfigurationError(f"mode must be 'all', 'any' or 'none', got {mode!r}")
    wanted = list(strings)

    def check(output: str) -> tuple[float, str, Any]:
        haystack = output if case_sensitive else output.lower()
        present = [s for s in wanted if (s if case_sensitive else s.lower()) in haystack]
        missing = [s for s in wanted if s not in present]
        if mode == "any":
            value = 1.0 if present else 0.0
            reason = f"Found {present!r}." if present else f"None of {wanted!r} appears."
        elif mode == "all":
            value = len(present) / len(wanted)
            reason = f"{len(present)} of {len(wanted)} required strings appear" + (
                f"; missing {missing!r}." if missing else "."
            )
        else:
            value = len(missing) / len(wanted)
            reason = f"{len(present)} of {len(wanted)} forbidden strings appear" + (
                f": {present!r}." if present else "."
            )
        return value, reason, {"present": present, "missing": missing}

    description = f"The answer contains {mode} of the given strings."
    return _check_scorer(id, description, check, options)


def _check_scorer(
    id: str,
    description: str,
    check: Callable[[str], tuple[float, str, Any]],
    options: ScorerOptions,
) -> Scorer:
    @on_loop
    def preprocess(params: StepParams) -> Any:
        value, reason, found = check(checked_output(params))
        params.state["check"] = (value, reason)
        return found

    @on_loop
    def generate_score(params: StepParams) -> Score:
        return Score(round(params.state["check"][0] * params.scale, 4))

    @on_loop
    def generate_reason(params: StepParams) -> str:
        reason: str = params.state["check"][1]
        return f"The score is {params.score:g}. {reason}"

    return Scorer(
        id=id,
        description=description,
        preprocess=preprocess,
        generate_score=generate_score,
        generate_reason=generate_reason,
        **built_in(options, _THRESHOLD),
    )


def _unfenced(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and len(stripped) >= 6:
        return stripped[3:-3].removeprefix("json").strip()
    return stripped
