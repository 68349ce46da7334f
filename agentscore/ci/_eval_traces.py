"""`agentscore eval --traces`: the generations in stored traces, as `agentscore eval` records.

Reads OTLP/JSON lines (one `ExportTraceServiceRequest` a line, as the Collector's file
exporter writes them) and agentscore's own JSONL export (one span a line, log records
skipped), finds the generations with the same span reading as the live paths, and hands each
on as a record with `id` = trace id + span id, so resuming with `--out` skips those done.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from agentscore.ci._jsonl import read_lines
from agentscore.spans.assembler import TraceAssembler
from agentscore.spans.records import SpanRecord

__all__ = ["TraceItems", "read_trace_items"]

_MAX_LINE = 64 * 1024 * 1024


@dataclass(slots=True)
class TraceItems:
    """What a trace file holds: records to score, lines that cannot be read, and the
    generations found that cannot be scored, grouped by why (one reason often covers them all:
    a trace recorded without message content)."""

    items: list[dict[str, Any]] = field(default_factory=list)
    malformed: list[tuple[int, str]] = field(default_factory=list)
    unreadable: Counter[str] = field(default_factory=Counter)

    @property
    def skipped(self) -> int:
        return len(self.malformed) + sum(self.unreadable.values())

    def notes(self) -> list[str]:
        return [
            f"{count} generation{'s' if count > 1 else ''} skipped: {reason}"
            for reason, count in self.unreadable.most_common()
        ]

    def nothing_found(self, data: str) -> str:
        if self.unreadable:
            return f"no generation in {data!r} can be scored (why: above)"
        return (
            f"no generation found in {data!r}: expected OTLP/JSON lines or agentscore's JSONL "
            "span export, holding model spans (GenAI conventions or OpenInference)"
        )


def read_trace_items(path: Path) -> TraceItems:
    # Stored traces are complete: no trace waits on an idle timeout, all close at the end.
    assembler = TraceAssembler(idle_timeout=float("inf"), max_traces=1_000_000)
    found = TraceItems()
    runs = []
    for line in read_lines(path):
        try:
            spans = _spans(line.text)
        except (ValueError, KeyError, TypeError) as exc:
            found.malformed.append((line.number, f"not an OTLP/JSON request or span ({exc})"))
            continue
        for span in spans:
            runs += assembler.add(span, 0.0)
    runs += assembler.drain()
    for run in runs:
        if run.read_error is not None:
            found.unreadable[run.read_error] += 1
            continue
        found.items.append(
            {"id": run.run_id, "input": run.input, "output": run.output, "documents": run.documents}
        )
    return found


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
    end = record.get("end_time")
    return SpanRecord(
        trace_id=int(context["trace_id"], 16),
        span_id=int(context["span_id"], 16),
        parent_span_id=int(parent, 16) if parent else None,
        name=str(record["name"]),
        attributes={
            key: tuple(value) if isinstance(value, list) else value
            for key, value in (record.get("attributes") or {}).items()
        },
        end_time=int(datetime.fromisoformat(end).timestamp() * 1e9) if end else 0,
    )
