"""Finished generations out of a stream of ended spans, each generation found once.

The rule (docs/howto.md states it for users):

- An agent span (`invoke_agent`, OpenInference AGENT) is a generation when it talked to a
  model itself: it carries messages, or an LLM span sits beneath it with no other agent span
  in between. Wrapper agents that only hold other agents are not scored; an agent that
  delegates to another and then answers is, and so is the delegate. It is decided when the
  agent span ends, since its children have ended by then.
- An LLM span (`chat`, OpenInference LLM) is a generation only outside every agent span and
  only when it answered rather than asked for tools: the last step of a hand-written tool
  loop. Which LLM spans lie outside every agent is known when the trace's root ends (or, for a
  trace whose root never comes, after `idle_timeout` seconds without a new span).
- Spans of an evaluation (agentscore's own scoring, and its judge calls) are never read.

Tool results come from the messages, else from the tool spans beneath the generation.
Retrieved documents (OpenInference RETRIEVER spans, GenAI `retrieval` spans) come from every
retrieval span of the trace that ended before the generation did: a RAG chain's retriever is
usually the model call's sibling, not its child. The assembler is single-threaded and holds
no clock; its owner feeds it and says what time it is.

What it holds is bounded in bytes too (`max_bytes`, counted with `span_bytes`, an upper
estimate of the span's memory and of its stored form): a span that would take the open
traces past it is dropped and counted, like one past `max_spans_per_trace`. The service checks
the same count before it accepts a request, so it answers 503 instead of dropping.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentscore.errors import UnreadableMessageError
from agentscore.messages import Message
from agentscore.run import ScorerRun
from agentscore.spans.reading import (
    Conversation,
    SpanRole,
    retrieved_documents,
    span_conversation,
    span_role,
    tool_exchange,
)
from agentscore.spans.records import SpanRecord
from agentscore.telemetry.core import CAPTURE_CONTENT_ENV

__all__ = ["TraceAssembler", "generation_run", "span_bytes"]

# How far up the tree an ancestor (an agent, an evaluation) is looked for. Real agent stacks
# are a few spans deep; the bound keeps a hostile chain of spans linear, and cycles finite.
_MAX_DEPTH = 64
# What a trace, a span and an attribute cost beyond the text itself (measured with
# tracemalloc in CPython 3.11: about 850, 210 and 60 bytes; a stored row costs less).
_TRACE_OVERHEAD = 1024
_SPAN_OVERHEAD = 256
_ATTRIBUTE_OVERHEAD = 64
_NUMBER_BYTES = 32


def span_bytes(span: SpanRecord) -> int:
    """An upper estimate of what holding `span` costs, in memory and as a queue row."""
    return _SPAN_OVERHEAD + sum(
        _ATTRIBUTE_OVERHEAD + _value_bytes(key) + _value_bytes(value)
        for key, value in span.attributes.items()
    )


def _value_bytes(value: object) -> int:
    if isinstance(value, str):
        # ASCII costs one byte a character in memory and on disk; other text up to four.
        return sys.getsizeof(value) if value.isascii() else 49 + 4 * len(value)
    if isinstance(value, tuple | list):
        return _NUMBER_BYTES + sum(_value_bytes(item) for item in value)
    return _NUMBER_BYTES


@dataclass(slots=True)
class _Trace:
    last_seen: float
    parents: dict[int, int | None] = field(default_factory=dict)
    children: dict[int, list[int]] = field(default_factory=dict)
    spans: dict[int, tuple[SpanRole, SpanRecord]] = field(default_factory=dict)
    evaluations: set[int] = field(default_factory=set)
    # Kept until the trace closes: every later generation of the trace may draw on them.
    retrievals: list[SpanRecord] = field(default_factory=list)
    held_bytes: int = 0


class TraceAssembler:
    """Feed it ended spans with `add`; it returns the generations each span completes."""

    def __init__(
        self,
        *,
        idle_timeout: float = 300.0,
        max_traces: int = 10_000,
        max_spans_per_trace: int = 2_000,
        max_bytes: int | None = None,
    ) -> None:
        self.idle_timeout = idle_timeout
        self.max_traces = max_traces
        self.max_spans_per_trace = max_spans_per_trace
        self.max_bytes = max_bytes
        self.dropped_spans = 0
        self.held_bytes = 0
        self._traces: OrderedDict[int, _Trace] = OrderedDict()

    @property
    def open_traces(self) -> int:
        return len(self._traces)

    def bytes_to_hold(self, spans: Sequence[SpanRecord]) -> int:
        """What adding `spans` would add to `held_bytes`, at most (a trace whose local root
        is among them closes, so its spans are not counted)."""
        closing = {span.trace_id for span in spans if span.is_local_root}
        held = [span for span in spans if span.trace_id not in closing]
        new_traces = {span.trace_id for span in held} - self._traces.keys()
        return sum(map(span_bytes, held)) + _TRACE_OVERHEAD * len(new_traces)

    def is_open(self, trace_id: int) -> bool:
        """True while the trace's spans are held, waiting for its root or the idle timeout."""
        return trace_id in self._traces

    def add(self, span: SpanRecord, now: float) -> list[ScorerRun]:
        size = span_bytes(span) + (0 if span.trace_id in self._traces else _TRACE_OVERHEAD)
        if (
            self.max_bytes is not None
            and not span.is_local_root  # a root frees its trace rather than adding to it
            and self.held_bytes + size > self.max_bytes
        ):
            self.dropped_spans += 1
            return []
        runs: list[ScorerRun] = []
        trace = self._traces.get(span.trace_id)
        if trace is None:
            if len(self._traces) >= self.max_traces:
                runs.extend(self._close(next(iter(self._traces))))
            trace = self._traces[span.trace_id] = _Trace(last_seen=now)
            trace.held_bytes = _TRACE_OVERHEAD
            self.held_bytes += _TRACE_OVERHEAD
            size -= _TRACE_OVERHEAD
        else:
            trace.last_seen = now
            self._traces.move_to_end(span.trace_id)
        if len(trace.parents) >= self.max_spans_per_trace:
            self.dropped_spans += 1
        else:
            trace.held_bytes += size
            self.held_bytes += size
            runs.extend(_add_span(trace, span))
        if span.is_local_root:
            runs.extend(self._close(span.trace_id))
        return runs

    def expire(self, now: float) -> list[ScorerRun]:
        """Close traces idle for `idle_timeout` seconds, as if their root had ended."""
        runs: list[ScorerRun] = []
        while self._traces:
            trace_id, trace = next(iter(self._traces.items()))
            if now - trace.last_seen < self.idle_timeout:
                break
            runs.extend(self._close(trace_id))
        return runs

    def drain(self) -> list[ScorerRun]:
        """Close every open trace now (at flush or shutdown)."""
        runs: list[ScorerRun] = []
        while self._traces:
            runs.extend(self._close(next(iter(self._traces))))
        return runs

    def _close(self, trace_id: int) -> list[ScorerRun]:
        trace = self._traces.pop(trace_id)
        self.held_bytes -= trace.held_bytes
        return _standalone_generations(trace)


def _add_span(trace: _Trace, span: SpanRecord) -> list[ScorerRun]:
    trace.parents[span.span_id] = span.parent_span_id
    if span.parent_span_id is not None:
        trace.children.setdefault(span.parent_span_id, []).append(span.span_id)
    if _under_evaluation(trace, span.span_id):
        return []
    role = span_role(span.attributes)
    if role == "evaluation":
        trace.evaluations.add(span.span_id)
        for descendant in _descendants(trace, span.span_id):
            trace.spans.pop(descendant, None)
        return []
    if role is None:
        return []
    if role == "retrieval":
        trace.retrievals.append(span)
        return []
    trace.spans[span.span_id] = (role, span)
    if role != "agent":
        return []
    owned_llms: list[SpanRecord] = []
    owned_tools: list[SpanRecord] = []
    for descendant in _descendants(trace, span.span_id):
        entry = trace.spans.pop(descendant, None)
        if entry is None or _nearest_agent(trace, descendant) != span.span_id:
            continue
        (owned_llms if entry[0] == "llm" else owned_tools if entry[0] == "tool" else []).append(
            entry[1]
        )
    if not owned_llms and _carries_no_messages(span):
        return []  # a wrapper around other agents
    return [generation_run(span, owned_llms, owned_tools, _retrieved_before(trace, span))]


def _standalone_generations(trace: _Trace) -> list[ScorerRun]:
    runs: list[ScorerRun] = []
    for span_id, (role, span) in trace.spans.items():
        if role != "llm" or _nearest_agent(trace, span_id) is not None:
            continue
        try:
            conversation = span_conversation(span)
        except UnreadableMessageError as exc:
            runs.append(_unreadable_run(span, str(exc)))
            continue
        if conversation is not None and conversation.output and conversation.is_final:
            runs.append(generation_run(span, [span], [], _retrieved_before(trace, span)))
    trace.spans.clear()
    return runs


def _retrieved_before(trace: _Trace, span: SpanRecord) -> list[SpanRecord]:
    return [r for r in trace.retrievals if r.end_time <= span.end_time]


def _carries_no_messages(span: SpanRecord) -> bool:
    try:
        return span_conversation(span) is None
    except UnreadableMessageError:
        return False  # it carries something: reading it fails the run, loudly


def generation_run(
    span: SpanRecord,
    llm_spans: list[SpanRecord],
    tool_spans: list[SpanRecord],
    retrieval_spans: list[SpanRecord] | None = None,
) -> ScorerRun:
    """The run to score for generation `span`, with the model and tool spans it owns and the
    retrieval spans whose documents are its context."""
    try:
        messages = _generation_messages(span, llm_spans, tool_spans)
        documents = _documents(retrieval_spans or [])
    except UnreadableMessageError as exc:
        return _unreadable_run(span, str(exc))
    if messages is None:
        return _unreadable_run(
            span,
            f"span {span.name!r} and the model calls beneath it carry no messages; "
            "turn on the instrumentation's message content capture (agentscore and the "
            f"OpenTelemetry GenAI instrumentations: {CAPTURE_CONTENT_ENV}=true where the "
            "agent runs)",
        )
    split = max((i for i, m in enumerate(messages) if m.role == "user" and m.content), default=-1)
    return ScorerRun.model_construct(
        **_identity(span, llm_spans),
        input=messages[: split + 1],
        output=messages[split + 1 :],
        documents=documents,
        read_error=None,
    )


def _documents(retrieval_spans: list[SpanRecord]) -> list[str]:
    """Each document once, in the order the retrievals ended."""
    found: dict[str, None] = {}
    for retrieval in sorted(retrieval_spans, key=lambda s: s.end_time):
        found.update(dict.fromkeys(retrieved_documents(retrieval)))
    return list(found)


def _generation_messages(
    span: SpanRecord, llm_spans: list[SpanRecord], tool_spans: list[SpanRecord]
) -> list[Message] | None:
    conversation = span_conversation(span)
    if conversation is None or not _ends_in_answer(conversation):
        finals = [s for s in sorted(llm_spans, key=lambda s: s.end_time) if s is not span]
        for candidate in reversed(finals):
            found = span_conversation(candidate)
            if found is not None and found.output and found.is_final:
                conversation = found
                break
    if conversation is None:
        return None
    messages = conversation.input + conversation.output
    return _with_tool_spans(messages, sorted(tool_spans, key=lambda s: s.end_time))


def _ends_in_answer(conversation: Conversation) -> bool:
    messages = conversation.input + conversation.output
    return bool(messages) and messages[-1].role == "assistant" and bool(messages[-1].content)


def _with_tool_spans(messages: list[Message], tool_spans: list[SpanRecord]) -> list[Message]:
    """Add the results of tool spans the messages do not already hold, before the answer."""
    known = {m.tool_call_id for m in messages if m.role == "tool"}
    added: list[Message] = []
    for tool_span in tool_spans:
        exchange = tool_exchange(tool_span)
        if exchange is None:
            continue
        call, result = exchange
        # An id we made up cannot be matched; then trust the messages if they hold any result.
        if call.id in known or (call.id.startswith("span-") and known):
            continue
        added += [Message(role="assistant", tool_calls=(call,)), result]
    if not added:
        return messages
    last = len(messages) - 1
    if last >= 0 and messages[last].role == "assistant" and not messages[last].tool_calls:
        return messages[:last] + added + messages[last:]
    return messages + added


def _identity(span: SpanRecord, llm_spans: list[SpanRecord]) -> dict[str, Any]:
    attributes = span.attributes
    response_id = attributes.get("gen_ai.response.id")
    for llm in sorted(llm_spans, key=lambda s: s.end_time, reverse=True):
        response_id = response_id or llm.attributes.get("gen_ai.response.id")
    agent_name = attributes.get("gen_ai.agent.name") or attributes.get("agent.name")
    conversation = attributes.get("gen_ai.conversation.id") or attributes.get("session.id")
    # Every field is given: for one left out, `model_construct` inspects the signature of its
    # default factory (~80 us, most of what building a run costs).
    return {
        "run_id": f"{span.trace_id:032x}{span.span_id:016x}",
        "ground_truth": None,
        "request_context": {},
        "tools": [],
        "agent_name": str(agent_name) if agent_name else None,
        "conversation_id": str(conversation) if conversation else None,
        "trace_id": f"{span.trace_id:032x}",
        "span_id": f"{span.span_id:016x}",
        "response_id": str(response_id) if response_id else None,
    }


def _unreadable_run(span: SpanRecord, error: str) -> ScorerRun:
    return ScorerRun.model_construct(
        **_identity(span, []), input=[], output=[], documents=[], read_error=error
    )


def _descendants(trace: _Trace, span_id: int) -> list[int]:
    found: list[int] = []
    seen = {span_id}  # hostile OTLP input can make the "tree" a cycle
    stack = list(trace.children.get(span_id, ()))
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        found.append(current)
        stack.extend(trace.children.get(current, ()))
    return found


def _nearest_agent(trace: _Trace, span_id: int) -> int | None:
    """The closest agent span above `span_id` among the spans seen, if any."""
    current = trace.parents.get(span_id)
    steps = 0
    while current is not None and steps < _MAX_DEPTH:
        entry = trace.spans.get(current)
        if entry is not None and entry[0] == "agent":
            return current
        current = trace.parents.get(current)
        steps += 1
    return None


def _under_evaluation(trace: _Trace, span_id: int) -> bool:
    current: int | None = span_id
    steps = 0
    while current is not None and steps < _MAX_DEPTH:
        if current in trace.evaluations:
            return True
        current = trace.parents.get(current)
        steps += 1
    return False
