"""Tool efficiency: calls the agent made in vain. Repeated identical calls, loops, tool errors
never recovered, and more tool calls than a budget. A trace scorer, deterministic: no judge
request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Unpack

from agentscore._options import check_number
from agentscore._runtime.callbacks import on_loop
from agentscore.scorers._tool_steps import Call, calls_of, counted, shown
from agentscore.scorers.base import Score, Scorer, StepParams
from agentscore.scorers.options import ScorerOptions, built_in

__all__ = ["DEFAULT_MAX_REPEATS", "PENALTY", "create_tool_efficiency_scorer"]

# One repeat is allowed by default: a second try of the same call is ordinary, a third is not.
DEFAULT_MAX_REPEATS = 1
# What each problem takes off a clean run's score (a share of `scale`): four sink it.
PENALTY = 0.25
# A clean run passes; any problem fails.
DEFAULT_THRESHOLD = 1.0
# The longest cycle looked for: longer ones are rare, and the search grows with it.
_MAX_CYCLE = 8
_SHOWN_PROBLEMS = 5

ProblemKind = Literal["over_budget", "loop", "repeat", "unrecovered_error"]


@dataclass(frozen=True, slots=True)
class _Problem:
    kind: ProblemKind
    message: str
    calls: list[int] = field(default_factory=list)  # the call numbers at fault

    def shape(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "calls": self.calls}


def create_tool_efficiency_scorer(
    *,
    max_repeats: int = DEFAULT_MAX_REPEATS,
    max_steps: int | None = None,
    id: str = "tool_efficiency",
    **options: Unpack[ScorerOptions],
) -> Scorer:
    """Problems in the run's tool calls. A trace scorer (a generation is scored on the
    trajectory its messages tell); no judge request. Two calls are the same call when they
    name the same tool with the same arguments as JSON (key order and spacing aside).

    - repeat: the same call made more than 1 + `max_repeats` times (default 1: a second try
      passes): "lookup_order called 4 times with the same arguments".
    - loop: a cycle of 2 to 8 calls made back to back more than 1 + `max_repeats` times:
      "search -> fetch repeated 3 times" (its calls are not reported again as repeats). A
      cycle whose calls differ in their arguments is not a loop: that is work on other items.
    - unrecovered error: a tool call that failed with no later successful call of that tool:
      "refund_order failed (timeout) and was never retried". A trace records errors (a tool
      span's error status); a generation's messages do not, so this needs a trace.
    - over budget: more tool calls than `max_steps` (None, the default: no budget): "12 tool
      calls, budget 8". Tool calls, not model calls: how many model calls a step takes
      depends on the framework, the tool calls are what the agent chose to do.

    Score = 1 - 0.25 per problem (0 from four on), times `scale`; a run with no tool call is
    clean. The default threshold, 1.0, fails a run with any problem. The reason names each
    problem. Options: `ScorerOptions`.
    """
    check_number("max_repeats", max_repeats, low=0, integer=True)
    if max_steps is not None:
        check_number("max_steps", max_steps, low=1, integer=True)

    @on_loop
    def preprocess(params: StepParams) -> dict[str, Any]:
        calls = calls_of(params)
        problems = _problems(calls, max_repeats, max_steps)
        params.state["efficiency"] = (len(calls), problems)
        return {"calls": len(calls), "problems": [problem.shape() for problem in problems]}

    @on_loop
    def generate_score(params: StepParams) -> Score:
        problems: list[_Problem] = params.state["efficiency"][1]
        return Score(round(max(0.0, 1.0 - PENALTY * len(problems)) * params.scale, 2))

    @on_loop
    def generate_reason(params: StepParams) -> str:
        count, problems = params.state["efficiency"]
        head = f"The score is {params.score:g}. {counted(count, 'tool call')}"
        if not problems:
            return f"{head}: no repeated call, loop, unrecovered error or call over budget."
        shown_problems = [problem.message for problem in problems[:_SHOWN_PROBLEMS]]
        if len(problems) > _SHOWN_PROBLEMS:
            shown_problems.append(f"and {len(problems) - _SHOWN_PROBLEMS} more")
        return f"{head}, {counted(len(problems), 'problem')}: {'; '.join(shown_problems)}."

    return Scorer(
        id=id,
        description="The tool calls make progress: no repeats, loops, unrecovered errors.",
        preprocess=preprocess,
        generate_score=generate_score,
        generate_reason=generate_reason,
        level="trace",
        **built_in(options, DEFAULT_THRESHOLD),
    )


def _problems(calls: list[Call], max_repeats: int, max_steps: int | None) -> list[_Problem]:
    problems: list[_Problem] = []
    if max_steps is not None and len(calls) > max_steps:
        problems.append(
            _Problem(
                "over_budget",
                f"{counted(len(calls), 'tool call')}, budget {max_steps}",
                [call.number for call in calls[max_steps:]],
            )
        )
    loops = _loops(calls, max_repeats)
    problems.extend(loops)
    in_loops = {calls[number - 1].key for loop in loops for number in loop.calls}
    problems.extend(_repeats(calls, max_repeats, in_loops))
    problems.extend(_unrecovered(calls))
    return problems


def _loops(calls: list[Call], max_repeats: int) -> list[_Problem]:
    """Each stretch where a cycle of calls comes back to back more than
    1 + `max_repeats` times, shortest cycles first; a stretch is reported once."""
    keys = [call.key for call in calls]
    covered: set[int] = set()
    found: list[tuple[int, _Problem]] = []
    for length in range(2, min(_MAX_CYCLE, len(keys) // 2) + 1):
        index = 0
        while index + length < len(keys):
            if keys[index] != keys[index + length]:
                index += 1
                continue
            start = index
            while index + length < len(keys) and keys[index] == keys[index + length]:
                index += 1
            times = (index + length - start) // length
            stretch = range(start, start + times * length)
            cycle = keys[start : start + length]
            if times > 1 + max_repeats and _primitive(cycle) and covered.isdisjoint(stretch):
                covered.update(stretch)
                names = " -> ".join(name for name, _ in cycle)
                message = f"{names} repeated {times} times"
                found.append((start, _Problem("loop", message, [i + 1 for i in stretch])))
    return [problem for _, problem in sorted(found, key=lambda item: item[0])]


def _primitive(cycle: Sequence[object]) -> bool:
    """Not itself a shorter cycle repeated (A A, A B A B): that one is reported instead."""
    size = len(cycle)
    return not any(
        size % period == 0 and all(cycle[i] == cycle[i % period] for i in range(size))
        for period in range(1, size)
    )


def _repeats(calls: list[Call], max_repeats: int, in_loops: set[tuple[str, str]]) -> list[_Problem]:
    by_key: dict[tuple[str, str], list[Call]] = {}
    for call in calls:
        by_key.setdefault(call.key, []).append(call)
    problems: list[_Problem] = []
    for key, same in by_key.items():  # in order of first call
        if len(same) <= 1 + max_repeats or key in in_loops:
            continue
        failed = sum(1 for call in same if call.error is not None)
        note = f" ({failed} failed)" if failed else ""
        problems.append(
            _Problem(
                "repeat",
                f"{key[0]} called {len(same)} times with the same arguments{note}",
                [call.number for call in same],
            )
        )
    return problems


def _unrecovered(calls: list[Call]) -> list[_Problem]:
    """Per tool, in order of its first call: the failures after its last success."""
    problems: list[_Problem] = []
    by_tool: dict[str, list[Call]] = {}
    for call in calls:
        by_tool.setdefault(call.name, []).append(call)
    for name, own in by_tool.items():
        last_success = max((i for i, call in enumerate(own) if call.error is None), default=-1)
        failures = own[last_success + 1 :]
        if not failures:
            continue
        error = shown(failures[-1].error)
        if len(failures) == 1:
            message = f"{name} failed ({error}) and was never retried"
        else:
            message = f"{name} failed {len(failures)} times ({error}), no later call succeeded"
        problems.append(_Problem("unrecovered_error", message, [call.number for call in failures]))
    return problems
