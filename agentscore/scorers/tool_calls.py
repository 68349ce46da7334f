"""Tool-call accuracy: did the agent call tools it had, with valid arguments, and the
expected ones in the expected order. Deterministic; an LLM judge only when asked to judge
whether each tool was the right choice for the question."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from agentscore._runtime.callbacks import on_loop
from agentscore.errors import ConfigurationError, MissingInputError
from agentscore.judges.base import JudgeRequest
from agentscore.judges.resolve import JudgeLike
from agentscore.messages import ToolCall
from agentscore.protocol import prompts
from agentscore.protocol.protocol import ItemVerdicts, Task, ToolChoicePayload, Verdict
from agentscore.scorers._verdicts import question_of, require_llm
from agentscore.scorers.base import Score, Scorer, StepParams
from agentscore.scorers.options import ScorerOptions, built_in
from agentscore.tools import Tool

__all__ = ["DEFAULT_THRESHOLD", "ExpectedTool", "ToolLike", "create_tool_call_accuracy_scorer"]

# Every call valid and every expected tool called, in order.
DEFAULT_THRESHOLD = 1.0

ToolLike = Tool | Mapping[str, Any]
ExpectedTool = str | Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class _Expected:
    name: str
    arguments: Mapping[str, Any] | None


@dataclass(slots=True)
class _Checked:
    call: ToolCall
    problem: str | None  # None: a known tool with valid arguments

    def shape(self) -> dict[str, Any]:
        return {"tool": self.call.name, "arguments": self.call.arguments, "problem": self.problem}


def create_tool_call_accuracy_scorer(
    model: JudgeLike = None,
    *,
    tools: Sequence[ToolLike] | None = None,
    expected_tools: Sequence[ExpectedTool] | None = None,
    judge_choice: bool = False,
    id: str = "tool_call_accuracy",
    **options: Unpack[ScorerOptions],
) -> Scorer:
    """Score = valid calls / calls x expected coverage x `scale` (higher is better).

    A call is valid when it names a tool the agent had and its arguments are a JSON object
    that validates against that tool's JSON schema. The agent's tools are those recorded in
    the run (`ScorerRun.tools`, set by `agentscore.Agent`), else `tools=` (`Tool`s or Chat
    Completions tool definitions). `expected_tools` (names, or `{"name": ..., "arguments":
    {...}}` whose arguments must appear in the call) makes coverage the share of them called
    in that order by valid calls (the longest common subsequence); without it coverage is 1.
    A run with no calls and nothing expected scores 0 ("no_claims"). No judge request is made,
    unless `judge_choice=True`: then one request asks an LLM judge whether each valid call was
    a right tool for the question, and a call it answers "no" counts as invalid (needs an LLM
    `model`; with the local judge it raises `ConfigurationError`).
    Options: `ScorerOptions`.
    """
    definitions = _definitions(tools or ())
    expected = [_expected(item) for item in expected_tools or ()]

    async def preprocess(params: StepParams) -> dict[str, Any]:
        known = {**definitions, **_definitions(params.run.tools)}
        if not known and not expected:
            raise MissingInputError(
                "the run records no tools and none were given: pass tools= or expected_tools= "
                "to create_tool_call_accuracy_scorer"
            )
        calls = [call for message in params.run.output for call in message.tool_calls]
        checked = [_Checked(call, _problem(call, known)) for call in calls]
        if judge_choice and calls:
            await _judge_choice(params, checked, known)
        params.state["checked"] = checked
        return {"calls": [item.shape() for item in checked]}

    @on_loop
    def generate_score(params: StepParams) -> Score:
        checked: list[_Checked] = params.state["checked"]
        if not checked and not expected:
            return Score(0.0, status="no_claims")
        valid = [item.call for item in checked if item.problem is None]
        validity = len(valid) / len(checked) if checked else 1.0
        coverage = _in_order(expected, valid) / len(expected) if expected else 1.0
        params.state["coverage"] = coverage
        return Score(round(validity * coverage * params.scale, 2))

    @on_loop
    def generate_reason(params: StepParams) -> str:
        checked: list[_Checked] = params.state["checked"]
        if not checked and not expected:
            return "Not scored: the agent made no tool calls and none were expected."
        wrong = [item for item in checked if item.problem is not None]
        parts = [
            f"The score is {params.score:g} because {len(checked) - len(wrong)} of "
            f"{len(checked)} tool calls are valid"
        ]
        if expected:
            names = ", ".join(item.name for item in expected)
            found = round(params.state["coverage"] * len(expected))
            parts[0] += (
                f" and {found} of {len(expected)} expected calls ({names}) were made in order"
            )
        parts[0] += "."
        parts.extend(f"{item.call.name}: {item.problem}." for item in wrong[:3])
        if len(wrong) > 3:
            parts.append(f"And {len(wrong) - 3} more invalid calls.")
        return " ".join(parts)

    scorer = Scorer(
        id=id,
        description="Calls to tools the agent had, with valid arguments, as expected.",
        judge=model,
        preprocess=preprocess,
        generate_score=generate_score,
        generate_reason=generate_reason,
        **built_in(options, DEFAULT_THRESHOLD),
    )
    if judge_choice:
        require_llm(scorer.judge, "judge_choice", "whether a tool suits a question is semantic")
    return scorer


def _definitions(tools: Sequence[ToolLike]) -> dict[str, dict[str, Any]]:
    """Tool name -> JSON schema of its arguments, from any supported tool shape."""
    found: dict[str, dict[str, Any]] = {}
    for item in tools:
        spec = item.definition() if isinstance(item, Tool) else item
        if not isinstance(spec, Mapping):
            raise ConfigurationError(f"a tool must be a Tool or a mapping, got {spec!r}")
        function = spec.get("function", spec)
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"a tool definition needs a name: {spec!r}")
        schema = function.get("parameters", function.get("input_schema", {})) or {}
        if not isinstance(schema, Mapping):
            raise ConfigurationError(f"tool {name!r}: parameters must be a JSON schema object")
        found[name] = dict(schema)
    return found


def _expected(item: ExpectedTool) -> _Expected:
    if isinstance(item, str) and item:
        return _Expected(item, None)
    if isinstance(item, Mapping) and isinstance(item.get("name"), str):
        arguments = item.get("arguments")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise ConfigurationError(f"expected arguments must be a mapping, got {arguments!r}")
        return _Expected(item["name"], arguments)
    raise ConfigurationError(
        f"expected_tools entries are tool names or {{'name': ..., 'arguments': ...}}: {item!r}"
    )


def _problem(call: ToolCall, known: Mapping[str, dict[str, Any]]) -> str | None:
    schema = known.get(call.name)
    if schema is None:
        return "not a tool the agent had" if known else None
    try:
        arguments = json.loads(call.arguments or "{}")
    except (ValueError, RecursionError):
        return "arguments are not valid JSON"
    if not isinstance(arguments, dict):
        return "arguments are not a JSON object"
    # Imported on first use: jsonschema brings some 4,000 objects that every full garbage
    # collection of the host process would walk, whether or not it checks tool calls.
    import jsonschema

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(arguments)
    )
    if error is None:
        return None
    where = ".".join(str(part) for part in error.absolute_path)
    return f"arguments violate the tool's schema ({where + ': ' if where else ''}{error.message})"


def _arguments(call: ToolCall) -> Any:
    try:
        return json.loads(call.arguments or "{}")
    except (ValueError, RecursionError):
        return None


def _matches(expected: _Expected, call: ToolCall) -> bool:
    if expected.name != call.name:
        return False
    if expected.arguments is None:
        return True
    given = _arguments(call)
    return isinstance(given, dict) and all(
        key in given and given[key] == value for key, value in expected.arguments.items()
    )


def _in_order(expected: Sequence[_Expected], calls: Sequence[ToolCall]) -> int:
    """How many expected calls were made in the expected order (longest common subsequence)."""
    previous = [0] * (len(calls) + 1)
    for want in expected:
        current = [0]
        for j, call in enumerate(calls, start=1):
            best = previous[j - 1] + 1 if _matches(want, call) else 0
            current.append(max(best, previous[j], current[j - 1]))
        previous = current
    return previous[-1]


async def _judge_choice(
    params: StepParams, checked: list[_Checked], known: Mapping[str, dict[str, Any]]
) -> None:
    question = question_of(params, "judge_choice")
    calls = tuple(f"{item.call.name}({item.call.arguments})" for item in checked)
    tools = tuple(f"{name}: {json.dumps(schema, sort_keys=True)}" for name, schema in known.items())
    reply = await params.ask(
        JudgeRequest(
            task=Task.TOOL_CHOICE,
            system=prompts.EVALUATOR_SYSTEM,
            prompt=prompts.tool_choice_prompt(question, calls, tools),
            output_type=ItemVerdicts,
            payload=ToolChoicePayload(question=question, calls=calls, tools=tools),
            validate=prompts.one_item_per(len(calls)),
        )
    )
    for item, verdict in zip(checked, reply.items, strict=True):
        if item.problem is None and verdict.verdict is Verdict.NO:
            item.problem = f"not the right tool for the question ({verdict.reason.strip()})"
