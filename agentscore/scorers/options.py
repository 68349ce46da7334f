"""The options scorers take, declared once as typed keywords (`**options:
Unpack[ScorerOptions]`) and checked in one place; the `Scorer` applies them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict, cast

from agentscore._options import check_flag, check_known, check_number
from agentscore.context import GetContext
from agentscore.errors import ConfigurationError

__all__ = [
    "CLAIM_OPTIONS",
    "CONTEXT_OPTIONS",
    "SCORER_OPTIONS",
    "ClaimOptions",
    "ContextOptions",
    "ScorerOptions",
    "built_in",
    "check_options",
]


class ScorerOptions(TypedDict, total=False):
    """What every scorer takes as keywords; one left out keeps the scorer's default.

    `scale` (1.0): the top of the score range. `threshold`: the pass line; for the built-in
    factories a fraction of `scale`, each with its own default, for `create_scorer` on the
    score's own scale (default None: no pass or fail). `strict_mode` (False): the score
    becomes binary, and only a perfect one passes. `include_reason` (True): False skips the
    reason. `verbose` (False): prints each step's result. `timeout` (None): seconds for a
    whole run.
    """

    scale: float
    threshold: float | None
    strict_mode: bool
    include_reason: bool
    verbose: bool
    timeout: float | None


class ContextOptions(ScorerOptions, total=False):
    """`ScorerOptions` of the scorers that judge against context: `get_context(params)` if
    given, else `context`, else the run's tool results and retrieved documents."""

    context: Sequence[str] | None
    get_context: GetContext | None


class ClaimOptions(ContextOptions, total=False):
    """`ContextOptions` of the claim scorers (faithfulness, hallucination).

    `stepwise` (False): Mastra's three judge calls instead of one. `unsure_counts_as_supported`
    (False): deepeval's rule, a claim the context does not mention is not held against the
    answer. `user_facts` (True): what the user stated counts as context.
    """

    stepwise: bool
    unsure_counts_as_supported: bool
    user_facts: bool


SCORER_OPTIONS: tuple[str, ...] = tuple(ScorerOptions.__annotations__)
CONTEXT_OPTIONS: tuple[str, ...] = tuple(ContextOptions.__annotations__)
CLAIM_OPTIONS: tuple[str, ...] = tuple(ClaimOptions.__annotations__)
_FLAGS = (
    "strict_mode",
    "include_reason",
    "verbose",
    "stepwise",
    "unsure_counts_as_supported",
    "user_facts",
)


def check_options(
    options: Mapping[str, object],
    *,
    known: Sequence[str] = SCORER_OPTIONS,
    fraction: bool = False,
) -> None:
    """Raise `ConfigurationError` naming the first option not in `known`, or the first value
    of the wrong type or out of range. `fraction`: `threshold` is a fraction of `scale` (the
    built-ins'), else it is on the score's own scale."""
    check_known(options, known)
    scale = options.get("scale", 1.0)
    check_number("scale", scale, low=0, open_low=True)
    threshold = options.get("threshold")
    if threshold is not None:
        check_number("threshold", threshold, low=0, high=1.0 if fraction else cast(float, scale))
    timeout = options.get("timeout")
    if timeout is not None:
        check_number("timeout", timeout, low=0, open_low=True)
    for flag in _FLAGS:
        if flag in options:
            check_flag(flag, options[flag])
    context = options.get("context")
    if context is not None and (
        isinstance(context, str)
        or not isinstance(context, Sequence)
        or not all(isinstance(c, str) for c in context)
    ):
        raise ConfigurationError("context must be a list of strings")
    get_context = options.get("get_context")
    if get_context is not None and not callable(get_context):
        raise ConfigurationError("get_context must be callable")


def built_in(
    options: ScorerOptions,
    threshold: float | None,
    *,
    known: Sequence[str] = SCORER_OPTIONS,
) -> ScorerOptions:
    """A built-in factory's `options` as `Scorer` takes them: all checked (`known` names the
    factory's own too, which are left out here), `threshold` the factory's default pass line
    where none is given, and the pass line, a fraction of `scale`, on the score's own scale."""
    check_options(options, known=known, fraction=True)
    shared = cast(
        ScorerOptions, {name: value for name, value in options.items() if name in SCORER_OPTIONS}
    )
    fraction = options.get("threshold", threshold)
    shared["threshold"] = None if fraction is None else fraction * options.get("scale", 1.0)
    return shared
