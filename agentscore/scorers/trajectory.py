"""Trajectory: did the agent make the tool calls expected of it, in the expected order, with
the expected arguments? A trace scorer, deterministic: no judge request."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Unpack

from agentscore._runtime.callbacks import on_loop
from agentscore.errors import ConfigurationError
from agentscore.scorers._tool_steps import Call, calls_of, counted, json_equal, json_subset, shown
from agentscore.scorers.base import Score, Scorer, StepParams
from agentscore.scorers.options import ScorerOptions, built_in

__all__ = [
    "ArgumentsMatch",
    "ExpectedStep",
    "ExpectedStepLike",
    "TrajectoryOrder",
    "create_trajectory_scorer",
]

TrajectoryOrder = Literal["strict", "in_order", "any_order", "subset"]
ArgumentsMatch = Literal["exact", "subset"]
_ORDERS: tuple[TrajectoryOrder, ...] = ("strict", "in_order", "any_order", "subset")
_ARGS: tuple[ArgumentsMatch | None, ...] = ("exact", "subset", None)
# Only the trajectory asked for passes; lower it to allow a share of the expected steps.
DEFAULT_THRESHOLD = 1.0
# How many faults a reason names; the rest are counted.
_SHOWN_FAULTS = 3


@dataclass(frozen=True, slots=True)
class ExpectedStep:
    """One expected tool call: the tool's `name`, and the `arguments` (a JSON object) it must
    be called with, compared as the scorer's `args` says; None: any arguments."""

    name: str
    arguments: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigurationError(f"an expected step needs a tool name, got {self.name!r}")
        if self.arguments is None:
            return
        if not isinstance(self.arguments, Mapping):
            raise ConfigurationError(
                f"expected arguments of {self.name} must be a JSON object (a mapping), "
                f"not {type(self.arguments).__name__}"
            )
        try:
            # A plain copy: compared as JSON, and safe from the caller changing theirs.
            plain = json.loads(json.dumps(self.arguments, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"expected arguments of {self.name} must be JSON: {exc}"
            ) from None
        object.__setattr__(self, "arguments", plain)

    def matches(self, call: Call, args: ArgumentsMatch | None) -> bool:
        if call.name != self.name:
            return False
        if args is None or self.arguments is None:
            return True
        if not call.parsed:
            return False
        compare = json_equal if args == "exact" else json_subset
        return compare(self.arguments, call.arguments)


ExpectedStepLike = str | Mapping[str, Any] | ExpectedStep


def create_trajectory_scorer(
    expected: Sequence[ExpectedStepLike],
    *,
    order: TrajectoryOrder = "in_order",
    args: ArgumentsMatch | None = "subset",
    id: str = "trajectory",
    **options: Unpack[ScorerOptions],
) -> Scorer:
    """The run's tool calls against `expected` steps: tool names, `{"name": ...,
    "arguments": {...}}` or `ExpectedStep`s. A trace scorer (a generation is scored on the
    trajectory its messages tell); no judge request.

    `order`: `"strict"`, exactly the expected calls in sequence, nothing else;
    `"in_order"` (default), the expected calls in that order, other calls allowed between;
    `"any_order"`, every expected call made, in any order, other calls allowed; `"subset"`,
    every call the run made is one of the expected (no other tool), not all of them needed.
    `args`: `"subset"` (default), a step's arguments must be found in the call's (an object
    may have more keys, at any depth); `"exact"`, equal as JSON; None, not compared. A step
    given as a bare name matches any arguments. Each call counts for one step.

    Score = the share matched, so a dashboard shows how far a run strayed: strict, the
    expected steps matched in sequence / the larger of steps and calls (an extra call costs
    as a missing one does); in_order, the steps matched in order (the longest common
    subsequence) / steps; any_order, the steps matched by a call / steps; subset, the calls
    among the expected / calls (1 with no call). The default threshold, 1.0, passes only the
    whole trajectory. The reason names the faults: "expected lookup_order at step 2, got
    cancel_order", "refund_order never called", "refund_order called out of order: step 3
    before step 1 (lookup_order)"; steps numbered from 1 as expected, calls as made.
    Options: `ScorerOptions`.
    """
    if order not in _ORDERS:
        raise ConfigurationError(f"order must be one of {', '.join(_ORDERS)}, got {order!r}")
    if args not in _ARGS:
        raise ConfigurationError(f"args must be 'exact', 'subset' or None, got {args!r}")
    steps = _expected_steps(expected, order)

    @on_loop
    def preprocess(params: StepParams) -> dict[str, Any]:
        calls = calls_of(params)
        verdict = _follow(steps, calls, order, args)
        params.state["trajectory"] = verdict
        return {
            "order": order,
            "expected": [step.name for step in steps],
            "calls": [call.name for call in calls],
            "matched": [[step + 1, call] for step, call in verdict.matched],
            "faults": verdict.faults,
        }

    @on_loop
    def generate_score(params: StepParams) -> Score:
        share: float = params.state["trajectory"].share
        value = share * params.scale
        rounded = round(value, 2)
        # Never round a flaw up to a perfect score: the default pass line is perfection.
        return Score(value if share < 1 and rounded >= params.scale else rounded)

    @on_loop
    def generate_reason(params: StepParams) -> str:
        verdict: _Verdict = params.state["trajectory"]
        faults = verdict.faults[:_SHOWN_FAULTS]
        more = len(verdict.faults) - len(faults)
        if more:
            faults.append(f"and {more} more")
        detail = f": {'; '.join(faults)}" if faults else ""
        return f"The score is {params.score:g}. {verdict.summary}{detail}."

    return Scorer(
        id=id,
        description=f"The tool calls follow the expected trajectory ({order}).",
        preprocess=preprocess,
        generate_score=generate_score,
        generate_reason=generate_reason,
        level="trace",
        **built_in(options, DEFAULT_THRESHOLD),
    )


def _expected_steps(expected: Sequence[ExpectedStepLike], order: str) -> list[ExpectedStep]:
    if isinstance(expected, str | bytes | Mapping) or not isinstance(expected, Sequence):
        raise ConfigurationError(
            "expected must be a list of steps: tool names, {'name': ..., 'arguments': {...}} "
            "or ExpectedStep"
        )
    steps = [_expected_step(item, number) for number, item in enumerate(expected, start=1)]
    if not steps and order in ("in_order", "any_order"):
        raise ConfigurationError(
            f"expected is empty: with order={order!r} every run would pass; use "
            "order='strict' or 'subset' to expect no tool call"
        )
    return steps


def _expected_step(item: ExpectedStepLike, number: int) -> ExpectedStep:
    if isinstance(item, ExpectedStep):
        return item
    try:
        if isinstance(item, str):
            return ExpectedStep(item)
        if isinstance(item, Mapping):
            unknown = sorted(str(key) for key in item if key not in ("name", "arguments"))
            if unknown:
                raise ConfigurationError(
                    f"unknown key {unknown[0]!r}; a step has 'name' and 'arguments'"
                )
            return ExpectedStep(item.get("name", ""), item.get("arguments"))
    except ConfigurationError as exc:
        raise ConfigurationError(f"expected step {number}: {exc}") from None
    raise ConfigurationError(
        f"expected step {number} must be a tool name, {{'name': ..., 'arguments': {{...}}}} "
        f"or ExpectedStep, not {type(item).__name__}"
    )


@dataclass(slots=True)
class _Verdict:
    share: float
    summary: str
    faults: list[str]
    matched: list[tuple[int, int]]  # (expected step, call number), steps from 0


def _follow(
    steps: list[ExpectedStep], calls: list[Call], order: str, args: ArgumentsMatch | None
) -> _Verdict:
    if order == "strict":
        return _strict(steps, calls, args)
    if order == "in_order":
        return _in_order(steps, calls, args)
    if order == "any_order":
        return _any_order(steps, calls, args)
    return _subset(steps, calls, args)


def _strict(steps: list[ExpectedStep], calls: list[Call], args: ArgumentsMatch | None) -> _Verdict:
    matched = _aligned(steps, calls, args)
    longest = max(len(steps), len(calls))
    summary = (
        f"{len(matched)} of {len(steps)} expected steps matched in sequence by "
        f"{counted(len(calls), 'tool call')}"
    )
    faults: list[str] = []
    for place in range(longest):
        step = steps[place] if place < len(steps) else None
        call = calls[place] if place < len(calls) else None
        if step is not None and call is not None and step.matches(call, args):
            continue
        faults.append(_divergence(place + 1, step, call, len(steps), len(calls)))
        break
    return _Verdict(len(matched) / longest if longest else 1.0, summary, faults, matched)


def _divergence(
    number: int, step: ExpectedStep | None, call: Call | None, steps: int, calls: int
) -> str:
    if step is None and call is not None:
        return f"unexpected {call.name} at step {number}: {counted(steps, 'step')} expected"
    assert step is not None
    if call is None:
        return f"expected {step.name} at step {number}, the run made only {counted(calls, 'call')}"
    if call.name != step.name:
        return f"expected {step.name} at step {number}, got {call.name}"
    return _other_arguments(step, number, call)


def _in_order(
    steps: list[ExpectedStep], calls: list[Call], args: ArgumentsMatch | None
) -> _Verdict:
    matched = _aligned(steps, calls, args)
    used = {call for _, call in matched}
    done = {step for step, _ in matched}
    faults: list[str] = []
    for index, step in enumerate(steps):
        if index in done:
            continue
        late = next(
            (c for c in calls if c.number not in used and step.matches(c, args)),
            None,
        )
        if late is not None:
            faults.append(_out_of_order(index, step, late.number, steps, matched))
        else:
            faults.append(_missing(index, step, calls, used))
    summary = f"{len(matched)} of {len(steps)} expected steps made in order"
    return _Verdict(len(matched) / len(steps), summary, faults, matched)


def _out_of_order(
    index: int,
    step: ExpectedStep,
    call: int,
    steps: list[ExpectedStep],
    matched: list[tuple[int, int]],
) -> str:
    """The last matched later step made before `call`, else the first matched earlier step
    made after it: how far out of place the call is."""
    head = f"{step.name} called out of order: step {index + 1}"
    after = [other for other, at in matched if other > index and at < call]
    if after:
        last = max(after)
        return f"{head} after step {last + 1} ({steps[last].name})"
    before = [other for other, at in matched if other < index and at > call]
    if before:
        first = min(before)
        return f"{head} before step {first + 1} ({steps[first].name})"
    return head


def _any_order(
    steps: list[ExpectedStep], calls: list[Call], args: ArgumentsMatch | None
) -> _Verdict:
    matched = _paired(steps, calls, args)
    used = {call for _, call in matched}
    done = {step for step, _ in matched}
    faults = [_missing(i, step, calls, used) for i, step in enumerate(steps) if i not in done]
    summary = f"{len(matched)} of {len(steps)} expected steps made"
    return _Verdict(len(matched) / len(steps), summary, faults, matched)


def _subset(steps: list[ExpectedStep], calls: list[Call], args: ArgumentsMatch | None) -> _Verdict:
    matched: list[tuple[int, int]] = []
    faults: list[str] = []
    names = {step.name for step in steps}
    for call in calls:
        found = next((i for i, step in enumerate(steps) if step.matches(call, args)), None)
        if found is not None:
            matched.append((found, call.number))
        elif call.name in names:
            faults.append(
                f"{call.name} at call {call.number} with unexpected arguments: {_arguments(call)}"
            )
        else:
            faults.append(f"unexpected {call.name} at call {call.number}")
    summary = f"{len(matched)} of {counted(len(calls), 'tool call')} among the expected steps"
    return _Verdict(len(matched) / len(calls) if calls else 1.0, summary, faults, matched)


def _missing(index: int, step: ExpectedStep, calls: list[Call], used: set[int]) -> str:
    """Why no call matched `step`: another call of the tool had other arguments, every call
    of it went to other steps, or it was never called."""
    same = [call for call in calls if call.name == step.name]
    other = next((call for call in same if call.number not in used), None)
    if other is not None:
        return _other_arguments(step, index + 1, other)
    if same:
        return (
            f"{step.name} called {counted(len(same), 'time')}, fewer than expected: "
            f"step {index + 1} is not matched"
        )
    return f"{step.name} never called"


def _other_arguments(step: ExpectedStep, number: int, call: Call) -> str:
    return (
        f"{step.name} at step {number} called with other arguments: expected "
        f"{shown(step.arguments)}, got {_arguments(call)}"
    )


def _arguments(call: Call) -> str:
    if call.raw is None:
        return "none recorded"
    return shown(call.arguments) if call.parsed else f"{shown(call.raw)} (not JSON)"


def _aligned(
    steps: list[ExpectedStep], calls: list[Call], args: ArgumentsMatch | None
) -> list[tuple[int, int]]:
    """The longest common subsequence of steps and calls, as (step index, call number)."""
    rows, columns = len(steps), len(calls)
    table = [[0] * (columns + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(columns - 1, -1, -1):
            if steps[i].matches(calls[j], args):
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < rows and j < columns:
        if steps[i].matches(calls[j], args) and table[i][j] == table[i + 1][j + 1] + 1:
            pairs.append((i, calls[j].number))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _paired(
    steps: list[ExpectedStep], calls: list[Call], args: ArgumentsMatch | None
) -> list[tuple[int, int]]:
    """A largest matching of steps to calls, each call for one step (augmenting paths): a
    greedy one could give a bare-name step the only call a step with arguments matches."""
    fits = [[j for j, call in enumerate(calls) if step.matches(call, args)] for step in steps]
    owner: dict[int, int] = {}  # call index -> step index

    def place(step: int, seen: set[int]) -> bool:
        for j in fits[step]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or place(owner[j], seen):
                owner[j] = step
                return True
        return False

    for step in range(len(steps)):
        place(step, set())
    return sorted((step, calls[j].number) for j, step in owner.items())
