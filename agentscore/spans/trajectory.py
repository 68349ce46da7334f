"""A whole trace as one run to score: every agent invocation, model call, tool call and
retrieval under it, in the order they started (`TraceRun.steps`), and the answer the trace
ended with.

The trace's answer is that of its outermost generation (the top agent span, else the last
model call that answered): its messages are the run's `input` and `output`, with the tool
results of the whole trace, so a generation scorer reads a trace as one long generation.
Spans of agentscore's own evaluations are left out. The run is identified by the trace and
its root span: an evaluation of the trace is parented to the root.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentscore.errors import UnreadableMessageError
from agentscore.run import ScorerRun, TraceRun, TraceStep
from agentscore.spans.assembler import generation_run
from agentscore.spans.reading import (
    SpanRole,
    retrieved_documents,
    span_conversation,
    span_role,
    tool_exchange,
)
from agentscore.spans.records import SpanRecord

__all__ = ["trace_run"]

_STEP_ROLES: frozenset[SpanRole] = frozenset({"agent", "llm", "tool", "retrieval"})


def trace_run(spans: Sequence[SpanRecord]) -> TraceRun:
    """The run for one trace from its ended spans (any order; one trace id)."""
    if not spans:
        raise ValueError("a trace needs at least one span")
    by_id = {span.span_id: span for span in spans}
    evaluations = {s.span_id for s in spans if span_role(s.attributes) == "evaluation"}
    kept = sorted(
        (s for s in spans if not _under(s, evaluations, by_id)),
        key=lambda s: (s.start_time or s.end_time, s.end_time),
    )
    roles = {span.span_id: span_role(span.attributes) for span in kept}
    steps = [_step(span, role) for span in kept if (role := roles[span.span_id]) in _STEP_ROLES]
    root = _root(kept or list(spans))
    answer = _answer(kept, roles)
    fields = {name: getattr(answer, name) for name in ScorerRun.model_fields}
    fields.update(
        run_id=f"{root.trace_id:032x}{root.span_id:016x}",
        trace_id=f"{root.trace_id:032x}",
        span_id=f"{root.span_id:016x}",
        conversation_id=answer.conversation_id or _conversation_id(kept),
        documents=list(dict.fromkeys(doc for step in steps for doc in step.documents)),
    )
    return TraceRun.unchecked(**fields, steps=steps)


def _root(spans: Sequence[SpanRecord]) -> SpanRecord:
    roots = [span for span in spans if span.is_local_root]
    return min(roots or spans, key=lambda s: (s.start_time or s.end_time, s.end_time))


def _answer(spans: Sequence[SpanRecord], roles: Mapping[int, SpanRole | None]) -> ScorerRun:
    """The outermost generation's run: the first agent span to start, with every model,
    tool and retrieval span of the trace; else the last model call to end."""
    agents = [span for span in spans if roles[span.span_id] == "agent"]
    llms = [span for span in spans if roles[span.span_id] == "llm"]
    tools = [span for span in spans if roles[span.span_id] == "tool"]
    retrievals = [span for span in spans if roles[span.span_id] == "retrieval"]
    if agents:
        return generation_run(agents[0], llms, tools, retrievals)
    if llms:
        last = max(llms, key=lambda s: s.end_time)
        return generation_run(last, [s for s in llms if s is not last], tools, retrievals)
    return ScorerRun.unchecked(
        input=[], output=[], read_error="the trace has no agent or model span to read"
    )


def _step(span: SpanRecord, role: SpanRole | None) -> TraceStep:
    attributes = span.attributes
    base: dict[str, Any] = {
        "span_id": f"{span.span_id:016x}",
        "parent_span_id": f"{span.parent_span_id:016x}" if span.parent_span_id else None,
        "start_time": span.start_time / 1e9 if span.start_time else None,
        # A span that says it ended before it started (another host's clock, a hostile
        # sender) has no duration rather than a negative one.
        "duration_ms": (span.end_time - span.start_time) / 1e6
        if 0 < span.start_time <= span.end_time
        else None,
        "error": span.error,
    }
    if role == "tool":
        exchange = tool_exchange(span)
        name = attributes.get("gen_ai.tool.name") or attributes.get("tool.name") or span.name
        if exchange is not None:
            call, result = exchange
            return TraceStep(
                kind="tool", name=call.name, arguments=call.arguments, result=result.content, **base
            )
        arguments = attributes.get("gen_ai.tool.call.arguments") or attributes.get("input.value")
        return TraceStep(kind="tool", name=str(name), arguments=_text(arguments), **base)
    if role == "retrieval":
        try:
            documents = retrieved_documents(span)
        except UnreadableMessageError as exc:
            return TraceStep(kind="retrieval", name=span.name, **{**base, "error": str(exc)})
        return TraceStep(kind="retrieval", name=span.name, documents=documents, **base)
    if role == "agent":
        name = attributes.get("gen_ai.agent.name") or attributes.get("agent.name") or span.name
        return TraceStep(kind="agent", name=str(name), **base)
    return TraceStep(
        kind="llm",
        name=str(
            attributes.get("gen_ai.request.model") or attributes.get("llm.model_name") or span.name
        ),
        result=_answer_text(span),
        input_tokens=_int(attributes, "gen_ai.usage.input_tokens", "llm.token_count.prompt"),
        output_tokens=_int(attributes, "gen_ai.usage.output_tokens", "llm.token_count.completion"),
        **base,
    )


def _answer_text(span: SpanRecord) -> str | None:
    try:
        conversation = span_conversation(span)
    except UnreadableMessageError:
        return None
    if conversation is None:
        return None
    texts = [m.content for m in conversation.output if m.role == "assistant" and m.content]
    return "\n\n".join(texts) or None


def _conversation_id(spans: Sequence[SpanRecord]) -> str | None:
    for span in spans:
        found = span.attributes.get("gen_ai.conversation.id") or span.attributes.get("session.id")
        if found:
            return str(found)
    return None


def _under(span: SpanRecord, evaluations: set[int], by_id: Mapping[int, SpanRecord]) -> bool:
    current: SpanRecord | None = span
    seen: set[int] = set()
    while current is not None and current.span_id not in seen:
        if current.span_id in evaluations:
            return True
        seen.add(current.span_id)
        parent = current.parent_span_id
        current = by_id.get(parent) if parent is not None else None
    return False


def _int(attributes: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, default=str)
