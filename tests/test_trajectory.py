"""A trace as one run (spans -> TraceRun), a generation's own trajectory, and a conversation's
turns: the targets of trace and conversation scorers."""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from agentscore.run import ConversationRun, ScorerRun, TraceRun, Turn, level_of
from agentscore.spans.records import SpanRecord
from agentscore.spans.trajectory import trace_run

USER = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Where is 42?"}]}])
CALL = json.dumps(
    [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "lookup",
                                      "arguments": {"id": 42}}]}]
)  # fmt: skip
ANSWER = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Shipped."}]}])


def chat(output: str, tokens: int) -> dict[str, str | int]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.usage.input_tokens": tokens,
        "gen_ai.input.messages": USER,
        "gen_ai.output.messages": output,
    }


def recorded_trace() -> list[SpanRecord]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "support",
        "gen_ai.conversation.id": "conv-7",
    }
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.call.arguments": '{"id": 42}',
        "gen_ai.tool.call.result": "not found",
    }
    with tracer.start_as_current_span("POST /chat"):
        with tracer.start_as_current_span("invoke_agent support", attributes=agent):
            with tracer.start_as_current_span("chat gpt-test", attributes=chat(CALL, 11)):
                pass
            with tracer.start_as_current_span("execute_tool lookup", attributes=tool) as span:
                span.set_status(Status(StatusCode.ERROR, "order service down"))
            with tracer.start_as_current_span("chat gpt-test", attributes=chat(ANSWER, 17)):
                pass
        evaluation = {"gen_ai.evaluation.name": "faithfulness"}
        with (
            tracer.start_as_current_span("evaluation faithfulness", attributes=evaluation),
            tracer.start_as_current_span("chat judge", attributes=chat(ANSWER, 99)),
        ):
            pass
    return [SpanRecord.from_readable(span) for span in exporter.get_finished_spans()]


def test_a_trace_becomes_its_steps_in_order_under_its_root() -> None:
    spans = recorded_trace()
    run = trace_run(list(reversed(spans)))  # arrival order does not matter
    root = next(span for span in spans if span.parent_span_id is None)
    assert level_of(run) == "trace"
    assert (run.trace_id, run.span_id) == (f"{root.trace_id:032x}", f"{root.span_id:016x}")
    assert run.conversation_id == "conv-7"
    assert [(step.kind, step.name) for step in run.steps] == [
        ("agent", "support"),
        ("llm", "gpt-test"),
        ("tool", "lookup"),
        ("llm", "gpt-test"),
    ]  # the evaluation and its judge call are not steps of the agent's trace
    tool = run.steps[2]
    assert (tool.arguments, tool.result, tool.error) == (
        '{"id": 42}',
        "not found",
        "order service down",
    )
    assert [step.input_tokens for step in run.steps if step.kind == "llm"] == [11, 17]
    assert all(step.duration_ms is not None and step.duration_ms >= 0 for step in run.steps)
    assert (run.input_text, run.output_text) == ("Where is 42?", "Shipped.")


def test_a_generation_tells_its_own_trajectory() -> None:
    run = ScorerRun(
        input="Where is 42?",
        output=[
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
            {"role": "assistant", "content": "It shipped."},
        ],
        trace_id="ab" * 16,
    )  # fmt: skip
    trace = TraceRun.of(run)
    assert (trace.run_id, trace.trace_id) == (run.run_id, run.trace_id)
    assert [(s.kind, s.name, s.result) for s in trace.steps] == [
        ("llm", "model", None),
        ("tool", "lookup", "shipped"),
        ("llm", "model", "It shipped."),
    ]
    assert TraceRun.of(trace) is trace


def test_a_conversation_reads_as_its_history_and_last_answer() -> None:
    turns = [
        Turn(input="My name is Ada.", output="Hello Ada."),
        Turn(input="Who am I?", output="Ada."),
    ]
    run = ConversationRun.from_turns("conv-1", turns)
    assert level_of(run) == "conversation"
    assert run.conversation_id == "conv-1"
    assert [m.content for m in run.input] == ["My name is Ada.", "Hello Ada.", "Who am I?"]
    assert run.output_text == "Ada."
    assert ConversationRun.model_validate(run.model_dump()).turns == turns


def test_a_generation_adds_only_its_own_exchange_to_its_conversation() -> None:
    run = ScorerRun(
        input=[
            {"role": "user", "content": "My name is Ada."},
            {"role": "assistant", "content": "Hello Ada."},
            {"role": "user", "content": "Who am I?"},
        ],
        output="Ada.",
        trace_id="cd" * 16,
    )
    turn = Turn.of(run)
    assert [m.content for m in turn.input] == ["Who am I?"]
    assert [m.content for m in turn.output] == ["Ada."]
    assert (turn.run_id, turn.trace_id) == (run.run_id, run.trace_id)


def test_a_generations_trajectory_leaves_out_the_earlier_turns_in_its_history() -> None:
    login = {"id": "c0", "type": "function", "function": {"name": "login", "arguments": "{}"}}
    earlier_call = {"role": "assistant", "content": None, "tool_calls": [login]}
    run = ScorerRun(
        input=[
            {"role": "user", "content": "Log me in."},
            earlier_call,
            {"role": "tool", "tool_call_id": "c0", "content": "ok"},
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "Thanks, bye."},
        ],
        output="Bye!",
    )
    assert [(s.kind, s.result) for s in TraceRun.of(run).steps] == [("llm", "Bye!")]


def test_a_hostile_trace_reads_without_a_negative_duration_or_an_endless_loop() -> None:
    # Parents that point at each other, a span that ends before it starts, arguments that
    # are not text: what any OTLP sender may send.
    agent = SpanRecord(
        trace_id=1,
        span_id=2,
        parent_span_id=3,
        name="invoke_agent a",
        attributes={"gen_ai.operation.name": "invoke_agent"},
        start_time=50,
        end_time=5,
    )
    tool = SpanRecord(
        trace_id=1,
        span_id=3,
        parent_span_id=2,
        name="execute_tool t",
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": 7},
        start_time=1,
        end_time=2,
    )
    run = trace_run([agent, tool])
    assert [step.kind for step in run.steps] == ["tool", "agent"]
    assert [step.duration_ms for step in run.steps] == [1e-06, None]
    assert run.steps[0].arguments == "7"
    assert run.read_error is not None  # no messages anywhere: unreadable, never scored empty
