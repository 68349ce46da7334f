"""`agentscore eval --traces`: stored traces in, their generations, traces and conversations
out, as `agentscore eval` targets.

Reads OTLP/JSON lines (one `ExportTraceServiceRequest` a line, as the Collector's file
exporter writes them) and agentscore's own JSONL export (one span a line, log records
skipped). Generations are found with the same span reading as the live paths, each with id
= trace id + span id; each trace holding an agent or model span is one `TraceRun` (id = the
trace id); the traces sharing a conversation id (`gen_ai.conversation.id`, OpenInference
`session.id`) are one conversation, a turn per trace in the order they started (id = the
conversation id). Only the levels of the chosen scorers are read. Resuming with `--out`
skips the ids done.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from agentscore.ci._eval_targets import EvalTarget, renamed
from agentscore.ci._jsonl import read_lines
from agentscore.run import ConversationRun, Level, TraceRun, Turn
from agentscore.spans.assembler import TraceAssembler
from agentscore.spans.records import SpanRecord
from agentscore.spans.trajectory import trace_run

__all__ = ["TraceItems", "read_trace_items"]

_MAX_LINE = 64 * 1024 * 1024
_PLURAL = {"generation": "generations", "trace": "traces"}


@dataclass(slots=True)
class TraceItems:
    """What a trace file holds: targets to score, lines that cannot be read, and the
    generations and traces found that cannot be scored, grouped by why (one reason often
    covers them all: a trace recorded without message content)."""

    targets: list[EvalTarget] = field(default_factory=list)
    malformed: list[tuple[int, str]] = field(default_factory=list)
    unreadable: Counter[tuple[str, str]] = field(default_factory=Counter)
    renamed: list[tuple[int, str]] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return len(self.malformed) + sum(self.unreadable.values())

    def notes(self) -> list[str]:
        return [
            f"{count} {kind if count == 1 else _PLURAL[kind]} skipped: {reason}"
            for (kind, reason), count in self.unreadable.most_common()
        ]

    def missing(self, level: Level, data: str) -> str:
        """Why the file gave no target of `level`."""
        if level == "generation":
            if any(kind == "generation" for kind, _ in self.unreadable):
                return f"no generation in {data!r} can be scored (why: above)"
            return (
                f"no generation found in {data!r}: expected OTLP/JSON lines or agentscore's "
                "JSONL span export, holding model spans (GenAI conventions or OpenInference)"
            )
        if any(kind == "trace" for kind, _ in self.unreadable):
            return f"no {level} in {data!r} can be scored (why: above)"
        if level == "trace":
            return f"no trace found in {data!r} holding an agent or model span"
        return (
            f"no conversation found in {data!r}: no trace with an agent or model span carries "
            "a conversation id (gen_ai.conversation.id, or OpenInference session.id)"
        )


def read_trace_items(
    path: Path, levels: frozenset[Level] = frozenset({"generation"})
) -> TraceItems:
    """The targets of `levels` in the trace file at `path`."""
    # Stored traces are complete: no trace waits on an idle timeout, all close at the end.
    assembler = TraceAssembler(idle_timeout=float("inf"), max_traces=1_000_000)
    whole_traces = bool(levels & {"trace", "conversation"})
    by_trace: defaultdict[int, list[SpanRecord]] = defaultdict(list)
    found = TraceItems()
    runs = []
    for line in read_lines(path):
        try:
            spans = _spans(line.text)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            found.malformed.append((line.number, f"not an OTLP/JSON request or span ({exc})"))
            continue
        for span in spans:
            if "generation" in levels:
                runs += assembler.add(span, 0.0)
            if whole_traces:
                by_trace[span.trace_id].append(span)
    runs += assembler.drain()
    targets: list[EvalTarget] = []
    for run in runs:
        if run.read_error is not None:
            found.unreadable["generation", run.read_error] += 1
            continue
        targets.append(EvalTarget(run.run_id, "generation", {"generation": run}))
    traces = _agent_traces(by_trace, found)
    if "trace" in levels:
        targets += [
            EvalTarget(run.trace_id or run.run_id, "trace", {"trace": run}) for run, _ in traces
        ]
    if "conversation" in levels:
        targets += _conversations(traces)
    found.targets, found.renamed = renamed(targets)
    return found


def _agent_traces(
    by_trace: Mapping[int, Sequence[SpanRecord]], found: TraceItems
) -> list[tuple[TraceRun, int]]:
    """Each trace with an agent or model span (the others are not an agent's: HTTP, a job)
    as its run, with when it started."""
    traces: list[tuple[TraceRun, int]] = []
    for spans in by_trace.values():
        run = trace_run(spans)
        if not any(step.kind in ("agent", "llm") for step in run.steps):
            continue
        if run.read_error is not None:
            found.unreadable["trace", run.read_error] += 1
            continue
        traces.append((run, min(span.start_time or span.end_time for span in spans)))
    return traces


def _conversations(traces: Sequence[tuple[TraceRun, int]]) -> list[EvalTarget]:
    """One conversation per conversation id: a turn per trace, in the order they started."""
    by_conversation: defaultdict[str, list[tuple[int, TraceRun]]] = defaultdict(list)
    for run, started in traces:
        if run.conversation_id:
            by_conversation[run.conversation_id].append((started, run))
    targets = []
    for conversation_id, members in by_conversation.items():
        members.sort(key=lambda member: member[0])
        turns = [Turn.of(run) for _, run in members]
        conversation = ConversationRun.from_turns(conversation_id, turns, run_id=conversation_id)
        targets.append(EvalTarget(conversation_id, "conversation", {"conversation": conversation}))
    return targets


def _spans(line: str) -> list[SpanRecord]:
    record = json.loads(line)
    if not isinstance(record, Mapping):
        raise ValueError("a line must be a JSON object")
    if "resourceSpans" in record or "resource_spans" in record:
        try:
            from agentscore._wire.otlp_in import JSON, decode_traces
        except ImportError as exc:
            raise ValueError("reading OTLP needs: pip install 'agentscore[serve]'") from exc
        return decode_traces(line.encode(), JSON, max_size=_MAX_LINE, into=SpanRecord)
    if "context" in record and "name" in record:
        return [_exported_span(record)]
    return []  # a log record, or a request of another signal


def _exported_span(record: Mapping[str, Any]) -> SpanRecord:
    """A span as `ReadableSpan.to_json()` wrote it (agentscore's JSONL exporter)."""
    context = record["context"]
    parent = record.get("parent_id")
    return SpanRecord(
        trace_id=int(context["trace_id"], 16),
        span_id=int(context["span_id"], 16),
        parent_span_id=int(parent, 16) if parent else None,
        name=str(record["name"]),
        attributes={
            key: tuple(value) if isinstance(value, list) else value
            for key, value in (record.get("attributes") or {}).items()
        },
        end_time=_nanoseconds(record.get("end_time")),
        start_time=_nanoseconds(record.get("start_time")),
        error=_exported_error(record),
    )


def _nanoseconds(stamp: object) -> int:
    if not stamp:
        return 0
    return int(datetime.fromisoformat(str(stamp)).timestamp() * 1e9)


def _exported_error(record: Mapping[str, Any]) -> str | None:
    status = record.get("status")
    if not isinstance(status, Mapping) or status.get("status_code") != "ERROR":
        return None
    described = status.get("description") or (record.get("attributes") or {}).get("error.type")
    return str(described)[:1000] if described else "error"
