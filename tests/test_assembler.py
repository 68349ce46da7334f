"""TraceAssembler on span records: the generation rule, OpenInference reading, and hostile input
(cycles, deep chains, floods) staying bounded."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from agentscore.spans import SpanRecord, TraceAssembler
from agentscore.spans.assembler import span_bytes
from agentscore.spans.records import MAX_ATTRIBUTE_CHARS

USER = {"role": "user", "parts": [{"type": "text", "content": "Where is order 7?"}]}


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def span(
    span_id: int,
    parent: int | None,
    name: str,
    attributes: Mapping[str, Any] | None = None,
    *,
    trace_id: int = 1,
) -> SpanRecord:
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        attributes=dict(attributes or {}),
        end_time=span_id,
    )


def chat(span_id: int, parent: int | None, answer: str) -> SpanRecord:
    return span(
        span_id,
        parent,
        "chat m",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([USER]),
            "gen_ai.output.messages": json.dumps([text("assistant", answer)]),
        },
    )


def agent(span_id: int, parent: int | None, name: str) -> SpanRecord:
    return span(span_id, parent, f"invoke_agent {name}", {"gen_ai.operation.name": "invoke_agent"})


def feed(assembler: TraceAssembler, *spans: SpanRecord) -> list[Any]:
    runs = []
    for record in spans:
        runs.extend(assembler.add(record, now=0.0))
    return runs


def test_an_agent_that_delegates_and_answers_is_scored_and_so_is_its_delegate() -> None:
    runs = feed(
        TraceAssembler(),
        chat(3, 2, "Delegate says: order 7 shipped."),
        agent(2, 4, "delegate"),
        chat(5, 1, "Order 7 shipped."),
        agent(1, None, "front"),
    )
    assert [run.span_id for run in runs] == [f"{2:016x}", f"{1:016x}"]
    assert runs[1].output[-1].content == "Order 7 shipped."


def test_a_wrapper_agent_holding_only_agents_is_not_scored() -> None:
    runs = feed(
        TraceAssembler(),
        chat(3, 2, "Order 7 shipped."),
        agent(2, 1, "inner"),
        agent(1, None, "workflow"),
    )
    assert [run.span_id for run in runs] == [f"{2:016x}"]


def test_openinference_flattened_messages_and_tool_spans() -> None:
    llm = span(
        3,
        2,
        "generation",
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.contents.0.message_content.type": "text",
            "llm.input_messages.0.message.contents.0.message_content.text": "Where is order 7?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "Order 7 shipped with DHL.",
        },
    )
    tool = span(
        4,
        2,
        "lookup",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "lookup",
            "input.value": '{"id": 7}',
            "output.value": '{"status": "shipped", "carrier": "DHL"}',
        },
    )
    root = span(2, None, "support", {"openinference.span.kind": "AGENT"})
    [run] = feed(TraceAssembler(), llm, tool, root)
    assert run.input[-1].content == "Where is order 7?"
    assert [m.role for m in run.output] == ["assistant", "tool", "assistant"]
    assert run.output[1].name == "lookup"
    assert run.output[-1].content == "Order 7 shipped with DHL."


def test_agent_input_and_output_values_as_plain_text() -> None:
    root = span(
        2,
        None,
        "agent",
        {"openinference.span.kind": "AGENT", "input.value": "Hi", "output.value": "Hello!"},
    )
    [run] = feed(TraceAssembler(), root)
    assert run.input[0].content == "Hi"
    assert run.output[0].content == "Hello!"


def test_a_parent_cycle_and_a_deep_chain_stay_bounded() -> None:
    assembler = TraceAssembler()
    # 5 -> 6 -> 5: a cycle no real tracer makes; reading it must end.
    assert feed(assembler, span(5, 6, "a"), agent(6, 5, "b")) == []
    chain = [span(i, i + 1, f"s{i}", trace_id=2) for i in range(10, 3000)]
    runs = feed(assembler, *chain)
    assert runs == []
    assert assembler.dropped_spans > 0  # past max_spans_per_trace


def test_a_flood_of_traces_evicts_the_oldest_and_keeps_the_bound() -> None:
    assembler = TraceAssembler(max_traces=10)
    for trace_id in range(1, 100):
        feed(assembler, span(2, 1, "x", trace_id=trace_id))
    assert assembler.open_traces == 10


def test_an_idle_trace_is_closed_and_its_final_chat_scored() -> None:
    assembler = TraceAssembler(idle_timeout=5)
    assert assembler.add(chat(3, 2, "Order 7 shipped."), now=0.0) == []
    assert assembler.expire(now=1.0) == []
    [run] = assembler.expire(now=6.0)
    assert run.output[-1].content == "Order 7 shipped."
    assert assembler.open_traces == 0


def test_spans_under_an_evaluation_are_never_generations() -> None:
    evaluation = span(
        8,
        1,
        "evaluation faithfulness",
        {"openinference.span.kind": "EVALUATOR", "gen_ai.evaluation.name": "faithfulness"},
    )
    runs = feed(TraceAssembler(), chat(9, 8, '{"claims": []}'), evaluation, span(1, None, "root"))
    assert runs == []


def test_unparseable_messages_end_as_an_unreadable_run() -> None:
    bad = span(
        3,
        None,
        "chat m",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": json.dumps([{"role": "robot", "parts": []}]),
        },
    )
    [run] = feed(TraceAssembler(), bad)
    assert run.read_error is not None
    assert "robot" in run.read_error


def test_hostile_attributes_end_as_unreadable_runs_not_exceptions() -> None:
    deep = "[" * 50_000 + "]" * 50_000
    hostile = [
        {"gen_ai.operation.name": "chat", "gen_ai.output.messages": deep},
        {"gen_ai.operation.name": "chat", "gen_ai.output.messages": '[{"role": "a", "parts": 5}]'},
        {
            "openinference.span.kind": "LLM",
            "llm.output_messages.0.message.contents.x.message_content.text": "hi",
        },
        {
            "openinference.span.kind": "LLM",
            "llm.output_messages.0.message.content": "hi",
            "llm.output_messages.0.message.content.more": "clash",
        },
        {"openinference.span.kind": "AGENT", "input.value": deep, "output.value": "Hello!"},
    ]
    for index, attributes in enumerate(hostile, start=10):
        [run] = feed(TraceAssembler(), span(index, None, "hostile", attributes))
        assert run.read_error is not None, attributes


def test_open_traces_are_bounded_in_bytes_and_a_closing_trace_gives_its_bytes_back() -> None:
    big = "x" * 100_000
    assembler = TraceAssembler(max_bytes=1_000_000, idle_timeout=5)
    for trace_id in range(1, 20):  # 19 never-ending traces of about 100 kB each
        feed(assembler, replace(chat(3, 2, big), trace_id=trace_id))
    assert 900_000 < assembler.held_bytes <= 1_000_000
    assert assembler.open_traces == 9
    assert assembler.dropped_spans == 10  # the spans that did not fit, counted
    # A root is let in at the bound: it closes its trace and frees what that held.
    held = assembler.held_bytes
    [run] = feed(assembler, span(2, None, "root", trace_id=1))
    assert run.output[-1].content == big
    assert held - assembler.held_bytes > 100_000
    assembler.expire(now=10.0)
    assert assembler.held_bytes == 0 and assembler.open_traces == 0


def test_bytes_to_hold_leaves_out_traces_whose_root_comes_along() -> None:
    assembler = TraceAssembler()
    open_trace = [span(3, 2, "a", trace_id=1), span(4, 2, "b", trace_id=1)]
    closing = [span(3, 2, "c", trace_id=2), span(2, None, "root", trace_id=2)]
    counted = assembler.bytes_to_hold(open_trace + closing)
    assert counted == assembler.bytes_to_hold(open_trace) > 0
    feed(assembler, *open_trace, *closing)
    assert assembler.held_bytes <= counted  # the estimate is what feeding them holds


def test_a_text_attribute_longer_than_a_scorer_reads_is_cut_before_it_is_held() -> None:
    long_answer = chat(3, None, "y" * (MAX_ATTRIBUTE_CHARS + 10))
    cut = long_answer.cut()
    assert max(len(str(value)) for value in cut.attributes.values()) == MAX_ATTRIBUTE_CHARS
    assert span_bytes(cut) < span_bytes(long_answer)
    short = chat(3, None, "Order 7 shipped.")
    assert short.cut() is short
    # The cut JSON reads as plain text, longer than a scorer judges: the run fails there.
    [run] = feed(TraceAssembler(), cut)
    assert sum(len(m.content or "") for m in run.output) <= MAX_ATTRIBUTE_CHARS
