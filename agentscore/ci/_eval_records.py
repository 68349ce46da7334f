"""The records file of `agentscore eval`: one JSON object a line, each a run or a conversation.

A run record has `input` and `output` (or `messages`, split after the last user message),
and optional `id`, `context`, `documents` and `ground_truth`: one generation. Its own
trajectory (the tool calls and results its output tells, `TraceRun.of`) is what trace
scorers judge. A conversation record has `turns`, a list of `{"input": ..., "output": ...}`
in order (each in any message shape a run takes), and the same optional fields, which hold for
every turn: conversation scorers judge it whole; generation scorers each turn, with the turns
before it as its input's history; trace scorers each turn's own trajectory (that turn's tool
calls, not the history's, which earlier turns are judged on). The kind is told line by line,
so one file may hold both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentscore.adapters import coerce_messages
from agentscore.ci._eval_targets import EvalTarget, renamed, unique_ids
from agentscore.ci._jsonl import read_lines
from agentscore.ci.batch import split_messages
from agentscore.messages import Message
from agentscore.run import ConversationRun, Level, ScorerRun, TraceRun, Turn

__all__ = ["RecordTargets", "missing_in_records", "read_record_targets"]

_KINDS = "a run ('input' and 'output', or 'messages') or a conversation ('turns')"


@dataclass(slots=True)
class RecordTargets:
    """What a records file holds: the targets to score, how many records were read, the lines
    that cannot be read and why, and the ids renamed because another record had them."""

    targets: list[EvalTarget] = field(default_factory=list)
    records: int = 0
    malformed: list[tuple[int, str]] = field(default_factory=list)
    renamed: list[tuple[int, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Record:
    id: str
    line: int
    common: dict[str, Any]  # the run fields every run of the record shares
    turns: list[Turn] | None  # None: a run record
    run: ScorerRun | None = None


def read_record_targets(path: Path, levels: frozenset[Level]) -> RecordTargets:
    """The targets of the chosen scorers' levels in the file at `path`."""
    found = RecordTargets()
    records: list[_Record] = []
    for line in read_lines(path):
        try:
            records.append(_record(json.loads(line.text), line.number))
        except json.JSONDecodeError as exc:
            found.malformed.append((line.number, f"not valid JSON ({exc.msg})"))
        except (TypeError, ValueError, RecursionError) as exc:
            found.malformed.append((line.number, str(exc) or type(exc).__name__))
    found.records = len(records)
    ids, found.renamed = unique_ids([(record.id, record.line) for record in records])
    targets = [
        t for record, i in zip(records, ids, strict=True) for t in _targets(record, i, levels)
    ]
    # A turn's id ("c/turn-2") may be one another record gives itself.
    found.targets, collisions = renamed(targets)
    found.renamed += collisions
    return found


def missing_in_records(level: Level, data: str) -> str:
    """Why the file gave no target of `level`, for the scorers of that level."""
    if level == "conversation":
        return (
            f"no conversation record in {data!r} for the conversation scorers: a conversation "
            'is a line {"id": ..., "turns": [{"input": ..., "output": ...}, ...]}'
        )
    return f"no run record or turn in {data!r} for the {level} scorers"


def _record(record: object, line: int) -> _Record:
    if not isinstance(record, Mapping):
        raise ValueError(f"a record must be a JSON object: {_KINDS}")
    record_id = str(record.get("id") or f"line-{line}")
    common = _common(record)
    if "turns" in record:
        mixed = sorted(key for key in ("input", "output", "messages") if key in record)
        if mixed:
            raise ValueError(
                f"a record has either 'turns' (a conversation) or {'/'.join(mixed)} (a run), "
                "not both"
            )
        return _Record(record_id, line, common, _turns(record["turns"]))
    record = split_messages(record)
    if "input" not in record or "output" not in record:
        raise ValueError(f"a record needs 'input' and 'output': {_KINDS}")
    run = ScorerRun(
        input=coerce_messages(record["input"], default_role="user"),
        output=coerce_messages(record["output"], default_role="assistant"),
        run_id=record_id,
        **common,
    )
    return _Record(record_id, line, common, None, run)


def _common(record: Mapping[str, Any]) -> dict[str, Any]:
    context = record.get("context")
    if context is not None and not (
        isinstance(context, str)
        or (isinstance(context, list) and all(isinstance(c, str) for c in context))
    ):
        raise ValueError("'context' must be a string or a list of strings")
    documents = record.get("documents")
    if documents is not None and not (
        isinstance(documents, list) and all(isinstance(d, str) for d in documents)
    ):
        raise ValueError("'documents' must be a list of strings")
    return {
        "ground_truth": record.get("ground_truth"),
        # Where `agentscore.context.run_context` reads it.
        "request_context": {"context": context} if context is not None else {},
        "documents": documents or [],
    }


def _turns(turns: object) -> list[Turn]:
    if not isinstance(turns, list) or not turns:
        raise ValueError('\'turns\' must be a non-empty list of {"input": ..., "output": ...}')
    read: list[Turn] = []
    for number, turn in enumerate(turns, start=1):
        if not isinstance(turn, Mapping) or "input" not in turn or "output" not in turn:
            raise ValueError(f"turn {number} must be an object with 'input' and 'output'")
        try:
            said = coerce_messages(turn["input"], default_role="user")
            answered = coerce_messages(turn["output"], default_role="assistant")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"turn {number}: {exc}") from None
        read.append(Turn(input=said, output=answered))
    return read


def _targets(record: _Record, record_id: str, levels: frozenset[Level]) -> list[EvalTarget]:
    if record.turns is None:
        assert record.run is not None
        run = (
            record.run
            if record_id == record.id
            else record.run.model_copy(update={"run_id": record_id})
        )
        runs = _generation_runs(run, levels)
        return [EvalTarget(record_id, "generation", runs, record.line)] if runs else []
    targets: list[EvalTarget] = []
    history: list[Message] = []
    turns: list[Turn] = []
    for number, turn in enumerate(record.turns, start=1):
        turn_id = f"{record_id}/turn-{number}"
        run = ScorerRun.unchecked(
            run_id=turn_id,
            input=[*history, *turn.input],
            output=turn.output,
            conversation_id=record_id,
            **record.common,
        )
        runs = _generation_runs(run, levels)
        if runs:
            targets.append(EvalTarget(turn_id, "generation", runs, record.line))
        history += [*turn.input, *turn.output]
        turns.append(turn.model_copy(update={"run_id": turn_id}))
    if "conversation" in levels:
        conversation = ConversationRun.from_turns(
            record_id, turns, run_id=record_id, **record.common
        )
        targets.append(
            EvalTarget(record_id, "conversation", {"conversation": conversation}, record.line)
        )
    return targets


def _generation_runs(run: ScorerRun, levels: frozenset[Level]) -> dict[Level, ScorerRun]:
    """What a generation's scorers judge (`run`), and its trace scorers: its own trajectory,
    the steps its output tells (a turn's history holds other turns' steps, judged there)."""
    runs: dict[Level, ScorerRun] = {}
    if "generation" in levels:
        runs["generation"] = run
    if "trace" in levels:
        runs["trace"] = TraceRun.of(run)
    return runs
