"""One ended span, in the form span reading needs, from the SDK or from OTLP alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

__all__ = ["MAX_ATTRIBUTE_CHARS", "SpanRecord"]

# No scorer judges more of one generation than 50,000 characters of output and 400,000 of
# context (agentscore.scorers), so a longer attribute is cut there before it is held.
MAX_ATTRIBUTE_CHARS = 450_000
# Held whole instead: retrieved documents are one JSON list, which a cut would leave
# unreadable (the run would fail as such, not as the too-large context it is). What holding
# them costs is bounded in bytes like every other span's: in `agentscore serve` by the request
# bound and `--max-open-trace-bytes`; in process the record shares the SDK span's string.
_HELD_WHOLE = frozenset({"gen_ai.retrieval.documents"})


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """The parts of an ended span that tell whether it is a generation, and what it said.

    `parent_span_id` is None for a trace's root; `parent_is_remote` marks a local root whose
    parent lives in another process (the in-process reader treats both as the end of its
    part of the trace). Ids are the OpenTelemetry integers.
    """

    trace_id: int
    span_id: int
    parent_span_id: int | None
    name: str
    attributes: Mapping[str, Any] = field(default_factory=dict)
    end_time: int = 0
    parent_is_remote: bool = False
    scope: str = ""
    start_time: int = 0
    # The span's error status description (or its type), for a trace's steps; None when OK.
    error: str | None = None

    def cut(self) -> SpanRecord:
        """This span with every text attribute cut to `MAX_ATTRIBUTE_CHARS` (retrieved
        documents excepted)."""
        if not any(_too_long(key, value) for key, value in self.attributes.items()):
            return self
        attributes = {
            key: value[:MAX_ATTRIBUTE_CHARS] if _too_long(key, value) else value
            for key, value in self.attributes.items()
        }
        return replace(self, attributes=attributes)

    @property
    def is_local_root(self) -> bool:
        return self.parent_span_id is None or self.parent_is_remote

    @classmethod
    def from_readable(cls, span: ReadableSpan) -> SpanRecord:
        context = span.get_span_context()
        parent = span.parent
        scope = span.instrumentation_scope
        return cls(
            trace_id=context.trace_id if context else 0,
            span_id=context.span_id if context else 0,
            parent_span_id=parent.span_id if parent is not None else None,
            name=span.name,
            attributes=dict(span.attributes or {}),
            end_time=span.end_time or 0,
            parent_is_remote=bool(parent is not None and parent.is_remote),
            scope=scope.name if scope is not None else "",
            start_time=span.start_time or 0,
            error=_error(span),
        )


def _too_long(key: str, value: Any) -> bool:
    return isinstance(value, str) and len(value) > MAX_ATTRIBUTE_CHARS and key not in _HELD_WHOLE


def _error(span: ReadableSpan) -> str | None:
    status = span.status
    if status.status_code is not StatusCode.ERROR:
        return None
    described = status.description or (span.attributes or {}).get("error.type")
    return str(described) if described else "error"
