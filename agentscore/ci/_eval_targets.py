"""What `agentscore eval` scores: targets of three levels, each with one results line.

A target is a generation (a record of a runs file, a turn of a conversation record, a
generation found in stored traces), a trace (`--traces`) or a conversation (a conversation
record, or the traces sharing a conversation id). It holds the run each level of scorer
judges: a generation's scorers its `ScorerRun`, a trace's its `TraceRun` (for a generation,
the trajectory its own messages tell), a conversation's its `ConversationRun`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import get_args

from agentscore.run import Level, ScorerRun

__all__ = ["LEVELS", "EvalTarget", "levels_of", "renamed", "unique_ids"]

LEVELS: tuple[Level, ...] = get_args(Level)  # in order: generation, trace, conversation


@dataclass(frozen=True, slots=True)
class EvalTarget:
    """`id` names its results line (a resume skips the ids done); `runs` maps each level of
    scorer that judges this target to the run it judges."""

    id: str
    level: Level
    runs: Mapping[Level, ScorerRun]
    line: int = 0  # where a file gives it (0: a trace file's target)


def levels_of(scorers: Sequence[object]) -> frozenset[Level]:
    return frozenset(getattr(scorer, "level", "generation") for scorer in scorers)


def unique_ids(ids: Sequence[tuple[str, int]]) -> tuple[list[str], list[tuple[int, str]]]:
    """Of (id, line) pairs in file order, each after the first of its id gets a new id (`a#2`,
    `a#3`...), so that each keeps its own line in the results and a resume knows which are
    done. A new id is never one the file gives another, and depends on the file alone, so a
    resume gives the same. Returns the ids and a note for each one renamed, by line."""
    taken = {given for given, _ in ids}
    first_line: dict[str, int] = {}
    last_suffix: Counter[str] = Counter()
    unique: list[str] = []
    notes: list[tuple[int, str]] = []
    for given, line in ids:
        if given not in first_line:
            first_line[given] = line
            unique.append(given)
            continue
        suffix = max(last_suffix[given], 1) + 1
        while f"{given}#{suffix}" in taken:
            suffix += 1
        last_suffix[given] = suffix
        new_id = f"{given}#{suffix}"
        taken.add(new_id)
        unique.append(new_id)
        first = f" (first on line {first_line[given]})" if first_line[given] else ""
        notes.append((line, f"duplicate id {given!r}{first}; recorded as {new_id!r}"))
    return unique, notes


def renamed(targets: Sequence[EvalTarget]) -> tuple[list[EvalTarget], list[tuple[int, str]]]:
    """`targets` with ids made unique (`unique_ids`), and the notes."""
    ids, notes = unique_ids([(target.id, target.line) for target in targets])
    return [replace(t, id=i) if i != t.id else t for t, i in zip(targets, ids, strict=True)], notes
