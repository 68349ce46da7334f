"""Which scorers `agentscore eval` runs: built-in scorers by name, and your own scorers from a
module (`MODULE:ATTR`, as `agentscore serve --scorers` takes them), of any level.

Each scorer says its level (`Scorer.level`); the command hands it the targets of that level.
A built-in name is made with the run's `--judge` and `--threshold`; a scorer from a module
comes as it was built there (its own judge and pass line).
"""

from __future__ import annotations

import copy
import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence

from agentscore.context import run_context
from agentscore.errors import ConfigurationError
from agentscore.evals import Evals
from agentscore.judges.base import Judge
from agentscore.judges.local import LocalJudge
from agentscore.judges.resolve import JudgeLike, resolve_judge
from agentscore.scorers import (
    create_answer_relevancy_scorer,
    create_completeness_scorer,
    create_context_relevance_scorer,
    create_conversation_completeness_scorer,
    create_faithfulness_scorer,
    create_hallucination_scorer,
    create_knowledge_retention_scorer,
    create_task_completion_scorer,
    create_tool_efficiency_scorer,
)
from agentscore.scorers.base import Scorer
from agentscore.scorers.options import ScorerOptions

__all__ = [
    "NAMED",
    "choose_scorers",
    "estimated_scorers",
    "is_module",
    "load_scorers",
    "unknown_names",
]

# Each built-in scorer by name, from the run's judge and the options `--threshold` gives (none:
# the factory's own pass line); context is each record's own. A scorer of any level plugs in
# here: `eval` reads its level from the scorer it makes.
NAMED: dict[str, Callable[[Judge, ScorerOptions], Scorer]] = {
    "faithfulness": lambda judge, options: create_faithfulness_scorer(
        judge, get_context=run_context, **options
    ),
    "hallucination": lambda judge, options: create_hallucination_scorer(
        judge, get_context=run_context, **options
    ),
    "answer_relevancy": lambda judge, options: create_answer_relevancy_scorer(judge, **options),
    "context_relevance": lambda judge, options: create_context_relevance_scorer(
        judge, get_context=run_context, **options
    ),
    "completeness": lambda judge, options: create_completeness_scorer(judge, **options),
    # Trace and conversation scorers. `trajectory` is not here: its expected steps are the
    # scorer's own, so it comes from a module (MODULE:ATTR).
    "tool_efficiency": lambda judge, options: create_tool_efficiency_scorer(**options),
    "task_completion": lambda judge, options: create_task_completion_scorer(judge, **options),
    "knowledge_retention": lambda judge, options: create_knowledge_retention_scorer(
        judge, **options
    ),
    "conversation_completeness": lambda judge, options: create_conversation_completeness_scorer(
        judge, **options
    ),
}


def is_module(entry: str) -> bool:
    """`MODULE:ATTR` rather than a built-in name."""
    return ":" in entry


def unknown_names(entries: Sequence[str]) -> list[str]:
    return [entry for entry in entries if not is_module(entry) and entry not in NAMED]


def choose_scorers(
    entries: Sequence[str], judge: JudgeLike, thresholds: Mapping[str, float]
) -> list[Scorer]:
    """The scorers the entries name, in their order. Raises `ConfigurationError` (a name
    that needs an LLM judge with `--judge local`, a module that cannot be loaded, two scorers
    with one id)."""
    resolved = resolve_judge(judge)
    scorers: list[Scorer] = []
    for entry in entries:
        if is_module(entry):
            scorers += load_scorers(entry)
            continue
        options: ScorerOptions = {}
        if entry in thresholds:
            options["threshold"] = thresholds[entry]
        scorers.append(NAMED[entry](resolved, options))
    ids = [scorer.id for scorer in scorers]
    repeated = sorted({scorer_id for scorer_id in ids if ids.count(scorer_id) > 1})
    if repeated:
        raise ConfigurationError(
            f"two scorers share the id {', '.join(map(repr, repeated))}: each scorer's "
            "results are kept under its id, so give each its own (id=...)"
        )
    return scorers


def estimated_scorers(
    entries: Sequence[str], judge: Judge, thresholds: Mapping[str, float]
) -> list[Scorer]:
    """`choose_scorers` for `--estimate`, whose `judge` keeps the requests it is asked and
    sends none: a scorer from a module that asks a model of its own asks `judge` instead, so
    that its requests are counted and none is sent."""
    scorers = choose_scorers(entries, judge, thresholds)
    return [
        scorer
        if scorer.judge is judge or isinstance(scorer.judge, LocalJudge)
        else _asking(scorer, judge)
        for scorer in scorers
    ]


def _asking(scorer: Scorer, judge: Judge) -> Scorer:
    clone = copy.copy(scorer)
    clone.judge = judge
    return clone


def load_scorers(spec: str) -> list[Scorer]:
    """`MODULE:ATTR` naming an `Evals`, a list of scorers or one scorer, imported as
    `agentscore serve --scorers` imports it (the current directory searched first). An
    `Evals`' sampling does not apply: a batch run scores every target."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigurationError(f"a scorer module is given as MODULE:ATTR, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: object = importlib.import_module(module_name)
    except Exception as exc:  # the module's own code failed: said, not a traceback
        raise ConfigurationError(
            f"{spec}: importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ConfigurationError(f"{spec}: {module_name!r} has no {attribute!r}")
        target = getattr(target, part)
    if isinstance(target, Evals):
        return [entry.scorer for entry in target.entries]
    if isinstance(target, Scorer):
        return [target]
    if (
        isinstance(target, Sequence)
        and not isinstance(target, str)
        and target
        and all(isinstance(item, Scorer) for item in target)
    ):
        return list(target)
    raise ConfigurationError(f"{spec} is neither an Evals, a scorer nor a list of scorers")
