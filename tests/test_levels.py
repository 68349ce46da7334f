"""Three levels of target in every in-process placement: each scorer gets runs of its level
(a generation, a trace, a conversation once it is over), through the one pipeline, with the
results on the trace where people look.

Clocks are injected (the conversation tracker's, the span processor's): nothing here sleeps
or bounds wall-clock time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span, set_span_in_context
from structlog.testing import capture_logs

from agentscore import Agent, Evals, Runner, ScoreResult, Telemetry, tool
from agentscore.pipeline.conversations import (
    ConversationTracker,
    MemoryConversationStore,
    OpenConversation,
)
from agentscore.run import ConversationRun, ScorerRun, TraceRun
from agentscore.scorers import StepParams, create_faithfulness_scorer, create_scorer
from agentscore.scorers.base import Scorer
from agentscore.spans import ScoringSpanProcessor
from agentscore.testing import ScriptedEndpoint, chat_completion
from tests.support.http_server import Reply, Request, http_server, json_reply
from tests.support.otel import new_log_exporter

ORDER = {"order": "1042", "status": "shipped", "carrier": "UPS"}


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Seen:
    """What each level's scorer was handed: (scorer id, run)."""

    runs: list[tuple[str, ScorerRun]] = field(default_factory=list)

    def of(self, level: str) -> list[ScorerRun]:
        return [run for scorer_id, run in self.runs if scorer_id == level]


def level_scorers(seen: Seen) -> list[Scorer]:
    """One simple scorer per level, each recording the run it was handed."""

    def scorer(level: Any) -> Scorer:
        def score(params: StepParams) -> float:
            seen.runs.append((level, params.run))
            return 1.0

        return create_scorer(id=level, level=level, generate_score=score)

    return [scorer("generation"), scorer("trace"), scorer("conversation")]


def tool_turn(question: str, answer: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": "{}"}}
    output: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps(ORDER)},
        {"role": "assistant", "content": answer},
    ]
    return [{"role": "user", "content": question}], output


class Levels:
    """An Evals with a scorer of each level, its own runner, results kept, clock injected."""

    def __init__(self, **options: Any) -> None:
        self.seen = Seen()
        self.results: list[ScoreResult] = []
        self.runner = Runner()
        self.clock = Clock()
        self.evals = Evals(
            scorers=level_scorers(self.seen),
            runner=self.runner,
            on_score=self.results.append,
            **options,
        )
        assert self.evals.conversations is not None
        self.tracker: ConversationTracker = self.evals.conversations
        self.tracker.clock = self.clock

    def turn(self, n: int, conversation_id: str | None = "chat-1") -> bool:
        question, output = tool_turn(f"Question {n}?", f"Answer {n}.")
        return self.evals.submit(question, output, conversation_id=conversation_id)

    def settle(self) -> None:
        assert self.runner.flush(30)

    def conversation_runs(self) -> list[ConversationRun]:
        runs = self.seen.of("conversation")
        assert all(isinstance(run, ConversationRun) for run in runs)
        return [run for run in runs if isinstance(run, ConversationRun)]


# -- One Evals, three levels -------------------------------------------------------------------


def test_each_scorer_gets_runs_of_its_level_from_one_evals() -> None:
    levels = Levels()
    for n in (1, 2, 3):
        assert levels.turn(n)
    levels.settle()
    generations = levels.seen.of("generation")
    traces = levels.seen.of("trace")
    assert [type(run) for run in generations] == [ScorerRun] * 3
    # A submitted generation is its own trace: its trajectory, under its own ids.
    assert all(isinstance(run, TraceRun) for run in traces)
    assert sorted(run.run_id for run in traces) == sorted(run.run_id for run in generations)
    trace = traces[0]
    assert isinstance(trace, TraceRun)
    assert [(step.kind, step.name) for step in trace.steps] == [
        ("llm", "model"),
        ("tool", "lookup_order"),
        ("llm", "model"),
    ]
    assert not levels.seen.of("conversation")  # not over yet

    assert levels.evals.end_conversation("chat-1") is True
    levels.settle()
    [conversation] = levels.conversation_runs()
    assert conversation.conversation_id == "chat-1"
    assert [turn.input[0].content for turn in conversation.turns] == [
        "Question 1?",
        "Question 2?",
        "Question 3?",
    ]
    assert conversation.output_text == "Answer 3."
    stats = levels.runner.stats()
    assert stats.submitted == 3 + 3 + 1 == stats.scored
    assert stats.submitted == stats.scored + stats.failed + stats.dropped + stats.pending


def test_a_generation_without_a_conversation_id_is_no_turn() -> None:
    levels = Levels()
    assert levels.turn(1, conversation_id=None)
    levels.settle()
    assert levels.tracker.open == 0
    assert len(levels.seen.of("trace")) == 1


def test_only_conversation_scorers_still_take_the_turn() -> None:
    seen = Seen()
    runner = Runner()
    [*_, conversation] = level_scorers(seen)
    evals = Evals(scorers=[conversation], runner=runner)
    question, output = tool_turn("Where is order 1042?", "It shipped.")
    assert evals.submit(question, output, conversation_id="c") is True
    assert evals.end_conversation("c") is True
    assert runner.flush(30)
    [run] = seen.of("conversation")
    assert isinstance(run, ConversationRun)


def test_no_tracker_without_conversation_scorers() -> None:
    evals = Evals(scorers=[create_scorer(id="g", generate_score=lambda p: 1.0)])
    assert evals.conversations is None
    assert evals.end_conversation("anything") is False


# -- Conversations: scored once over, exactly once --------------------------------------------


def test_a_conversation_is_scored_once_it_has_been_idle_and_never_before() -> None:
    levels = Levels(conversation_idle=60.0)
    levels.turn(1)
    levels.clock.now += 50
    levels.turn(2)  # idleness counts from the last turn
    levels.clock.now += 59.5
    levels.tracker.expire()
    levels.settle()
    assert levels.conversation_runs() == []
    levels.clock.now += 0.5
    levels.tracker.expire()
    levels.settle()
    [conversation] = levels.conversation_runs()
    assert len(conversation.turns) == 2
    levels.clock.now += 3600
    levels.tracker.expire()
    assert levels.evals.end_conversation("chat-1") is False  # already scored
    levels.settle()
    assert len(levels.conversation_runs()) == 1
    assert levels.tracker.handed_over == 1


def test_end_conversation_scores_it_at_once_and_a_later_turn_starts_another() -> None:
    levels = Levels()
    levels.turn(1)
    levels.turn(2)
    levels.settle()
    assert levels.conversation_runs() == []
    assert levels.evals.end_conversation("chat-1") is True
    assert levels.evals.end_conversation("chat-1") is False
    assert levels.evals.end_conversation("never-seen") is False
    levels.turn(3)
    levels.settle()
    [first] = levels.conversation_runs()
    assert len(first.turns) == 2
    assert levels.tracker.open == 1
    assert levels.evals.end_conversation("chat-1") is True
    levels.settle()
    [_, second] = levels.conversation_runs()
    assert [turn.input[0].content for turn in second.turns] == ["Question 3?"]
    assert second.run_id != first.run_id


def test_end_conversation_never_raises_for_scoring_trouble() -> None:
    def broken(conversation: OpenConversation) -> None:
        raise RuntimeError("boom")

    tracker = ConversationTracker(broken, clock=Clock())
    assert tracker.add(ScorerRun(input="hi", output="hello", conversation_id="c"))
    with capture_logs() as logs:
        assert tracker.end("c") is True
    assert [log["event"] for log in logs] == ["conversation_handover_failed"]
    assert logs[0]["conversation_id"] == "c"


def test_the_background_loop_looks_for_idle_conversations() -> None:
    # The real clock and a short idle: the ticking task on agentscore's loop hands it over.
    over: list[OpenConversation] = []
    done = threading.Event()

    def handed(conversation: OpenConversation) -> None:
        over.append(conversation)
        done.set()

    tracker = ConversationTracker(handed, idle=0.05)
    tracker.add(ScorerRun(input="hi", output="hello", conversation_id="c"))
    assert done.wait(60)
    assert [c.conversation_id for c in over] == ["c"]


# -- Bounds: drops counted and logged, never a partial conversation -------------------------


def turn_run(conversation_id: str, text: str = "hello") -> ScorerRun:
    return ScorerRun(input="hi", output=text, conversation_id=conversation_id)


def test_a_conversation_over_the_byte_bound_is_dropped_whole_and_counted() -> None:
    over: list[OpenConversation] = []
    dropped: list[tuple[str, str]] = []
    store = MemoryConversationStore(max_bytes=5_000)
    tracker = ConversationTracker(
        over.append,
        store=store,
        clock=Clock(),
        on_drop=lambda c, reason: dropped.append((c.conversation_id, reason)),
    )
    assert tracker.add(turn_run("big", "short"))
    with capture_logs() as logs:
        assert tracker.add(turn_run("big", "x" * 10_000)) is False
    assert ("conversation_dropped", "big") in [(e["event"], e["conversation_id"]) for e in logs]
    assert tracker.add(turn_run("big", "later")) is False  # its later turns are not held
    assert tracker.add(turn_run("small"))
    assert store.held_bytes < 5_000
    assert tracker.dropped_turns == 2
    with capture_logs() as logs:
        assert tracker.end("big") is False
    assert [c.conversation_id for c in over] == []
    assert dropped == [("big", "open_conversation_bytes")]
    assert tracker.dropped == 1
    assert [(e["event"], e["conversation_id"]) for e in logs] == [
        ("conversation_not_scored", "big")
    ]
    assert tracker.end("small") is True
    assert [c.conversation_id for c in over] == ["small"]


def test_conversation_and_turn_counts_are_bounded() -> None:
    over: list[OpenConversation] = []
    store = MemoryConversationStore(max_conversations=1, max_turns=2)
    tracker = ConversationTracker(over.append, store=store, clock=Clock())
    assert tracker.add(turn_run("a"))
    assert tracker.add(turn_run("b")) is False  # no room for a second conversation
    assert tracker.add(turn_run("a"))
    assert tracker.add(turn_run("a")) is False  # a third turn
    assert tracker.dropped_turns == 2
    assert tracker.end("b") is False
    assert tracker.end("a") is False  # broken: counted dropped, never scored in part
    assert tracker.dropped == 1
    assert over == []


def test_dropped_conversations_are_counted_per_scorer_in_the_ledger() -> None:
    seen = Seen()
    [*_, conversation] = level_scorers(seen)
    telemetry = Telemetry(meter_provider=MeterProvider())
    evals = Evals(
        scorers=[conversation],
        runner=Runner(),
        telemetry=telemetry,
        conversation_store=MemoryConversationStore(max_turns=1),
    )
    question, output = tool_turn("Q?", "A.")
    assert evals.submit(question, output, conversation_id="c", agent_name="support")
    assert evals.submit(question, output, conversation_id="c") is False
    assert evals.end_conversation("c") is False
    assert telemetry.ledger.counts() == {("dropped", "conversation", "support", ""): 1}
    assert seen.runs == []


# -- Exit: open conversations scored within the budget, or counted dropped ------------------

EXIT_PROGRAM = """
import sys
from agentscore import Evals
from agentscore.scorers import create_scorer

def score(params):
    return len(params.run.turns) / 10

evals = Evals(
    scorers=[create_scorer(id="turns", level="conversation", generate_score=score)],
    on_score=lambda r: sys.stdout.write(f"RESULT {r.scorer_id} {r.score}\\n"),
)
evals.submit("Hi", "Hello", conversation_id="exit-chat")
evals.submit("Where is order 1042?", "It shipped.", conversation_id="exit-chat")
print("SUBMITTED", evals.conversations.open, flush=True)
"""


def run_program(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(EXIT_PROGRAM)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OTEL_SDK_DISABLED": "true", **env},
    )


def test_open_conversations_are_scored_at_exit() -> None:
    done = run_program(AGENTSCORE_EXIT_FLUSH_TIMEOUT="30")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith(("RESULT", "SUB"))]
    assert lines == ["SUBMITTED 1", "RESULT turns 0.2"], done.stdout + done.stderr


def test_open_conversations_past_the_exit_budget_are_counted_dropped_with_their_ids() -> None:
    done = run_program(AGENTSCORE_EXIT_FLUSH_TIMEOUT="0")
    assert done.returncode == 0, done.stderr
    output = done.stdout + done.stderr
    assert "RESULT" not in output
    [line] = [line for line in output.splitlines() if "conversation_not_scored" in line]
    assert "exit-chat" in line
    assert "exit_deadline" in line


def test_drain_hands_over_every_open_conversation() -> None:
    over: list[OpenConversation] = []
    tracker = ConversationTracker(over.append, clock=Clock())
    tracker.add(turn_run("a"))
    tracker.add(turn_run("b"))
    assert tracker.drain() == 2
    assert sorted(c.conversation_id for c in over) == ["a", "b"]
    assert tracker.open == 0


# -- The span processor: whole traces after root end + grace; turns from traces ---------------


class SpanPipeline:
    """A TracerProvider as an application sets one up, scoring processor added, clock injected."""

    def __init__(self, **processor_options: Any) -> None:
        self.exporter = InMemorySpanExporter()
        self.logs = new_log_exporter()
        self.provider = TracerProvider()
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        self.clock = Clock()
        self.seen = Seen()
        self.results: list[ScoreResult] = []
        self.runner = Runner()
        self.evals = Evals(
            scorers=level_scorers(self.seen),
            runner=self.runner,
            on_score=self.results.append,
            telemetry=Telemetry(tracer_provider=self.provider, logger_provider=logger_provider),
        )
        self.processor = ScoringSpanProcessor(
            self.evals, clock=self.clock, trace_grace=2.0, **processor_options
        )
        self.provider.add_span_processor(self.processor)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def settle(self) -> None:
        assert self.processor.force_flush(30_000)
        assert self.runner.flush(30)

    def chat_trace(self, answer: str, conversation_id: str | None = None) -> Span:
        """A request whose hand-written tool loop is traced with GenAI `chat` spans; returns
        its root span."""
        tracer = self.provider.get_tracer("app")
        user = {"role": "user", "parts": [{"type": "text", "content": "Where is order 1042?"}]}
        call = {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "lookup_order", "arguments": "{}"}],
        }
        result = {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "c1", "response": ORDER}],
        }
        said = [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
        ids = {"gen_ai.conversation.id": conversation_id} if conversation_id else {}
        with tracer.start_as_current_span("POST /chat", attributes=ids) as root:
            for name, messages, output in (
                ("chat first", [user], [call]),
                ("chat final", [user, call, result], said),
            ):
                with tracer.start_as_current_span(
                    name,
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.input.messages": json.dumps(messages),
                        "gen_ai.output.messages": json.dumps(output),
                        **ids,
                    },
                ):
                    pass
        return root

    def evaluation(self, scorer_id: str) -> ReadableSpan:
        [span] = [
            s for s in self.exporter.get_finished_spans() if s.name == f"evaluation {scorer_id}"
        ]
        return span


def test_a_trace_is_scored_once_after_its_root_ended_and_the_grace_never_before() -> None:
    pipeline = SpanPipeline()
    root = pipeline.chat_trace("Order 1042 shipped with UPS.")
    pipeline.settle()
    assert pipeline.seen.of("trace") == []
    assert len(pipeline.seen.of("generation")) == 1  # generations as before
    pipeline.clock.now += 1.5
    pipeline.settle()
    assert pipeline.seen.of("trace") == []
    pipeline.clock.now += 0.5
    pipeline.settle()
    [trace] = pipeline.seen.of("trace")
    assert isinstance(trace, TraceRun)
    assert [step.name for step in trace.steps if step.kind == "llm"] == [
        "chat first",
        "chat final",
    ]
    root_id = f"{root.get_span_context().span_id:016x}"
    assert trace.span_id == root_id
    pipeline.clock.now += 100
    pipeline.settle()
    assert len(pipeline.seen.of("trace")) == 1  # once

    # Its evaluation sits under the trace's root span, with its event.
    evaluation = pipeline.evaluation("trace")
    assert evaluation.parent is not None
    assert evaluation.parent.span_id == root.get_span_context().span_id
    events = [
        record.log_record
        for record in pipeline.logs.get_finished_logs()
        if record.log_record.event_name == "gen_ai.evaluation.result"
        and (record.log_record.attributes or {}).get("gen_ai.evaluation.name") == "trace"
    ]
    [event] = events
    assert event.span_id == root.get_span_context().span_id


def test_a_span_after_its_trace_was_scored_is_counted_not_a_new_trace() -> None:
    pipeline = SpanPipeline()
    root = pipeline.chat_trace("Order 1042 shipped.")
    pipeline.settle()  # the grace counts from when the processor read the root
    pipeline.clock.now += 2.0
    pipeline.settle()
    assert len(pipeline.seen.of("trace")) == 1
    before = pipeline.processor.dropped_spans
    tracer = pipeline.provider.get_tracer("app")
    with tracer.start_as_current_span("late chat", context=set_span_in_context(root)):
        pass
    pipeline.clock.now += 1000
    pipeline.settle()
    assert len(pipeline.seen.of("trace")) == 1
    assert pipeline.processor.dropped_spans == before + 1


def test_a_span_within_the_grace_joins_its_trace() -> None:
    pipeline = SpanPipeline()
    root = pipeline.chat_trace("Order 1042 shipped.")
    pipeline.settle()
    pipeline.clock.now += 1.0
    tracer = pipeline.provider.get_tracer("app")
    with tracer.start_as_current_span(
        "execute_tool audit",
        context=set_span_in_context(root),
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "audit"},
    ):
        pass
    pipeline.clock.now += 1.0
    pipeline.settle()
    [trace] = pipeline.seen.of("trace")
    assert isinstance(trace, TraceRun)
    assert "audit" in [step.name for step in trace.steps]


def test_a_trace_that_loses_a_span_to_a_bound_is_not_scored_and_is_counted() -> None:
    pipeline = SpanPipeline(max_spans_per_trace=2)
    with capture_logs() as logs:
        pipeline.chat_trace("Order 1042 shipped.")
        pipeline.clock.now += 10
        pipeline.settle()
    assert pipeline.seen.of("trace") == []
    assert pipeline.processor.dropped_traces == 1
    assert "trace_not_scored" in [entry["event"] for entry in logs]


def test_a_trace_without_a_model_call_is_not_a_trace_to_score() -> None:
    pipeline = SpanPipeline()
    with pipeline.provider.get_tracer("app").start_as_current_span("GET /health"):
        pass
    pipeline.clock.now += 10
    pipeline.settle()
    assert pipeline.seen.of("trace") == []
    assert pipeline.results == []


def test_traces_sharing_a_conversation_id_are_its_turns() -> None:
    pipeline = SpanPipeline()
    pipeline.chat_trace("Order 1042 shipped.", conversation_id="conv-9")
    pipeline.chat_trace("It went with UPS.", conversation_id="conv-9")
    pipeline.settle()
    pipeline.clock.now += 2.0
    pipeline.settle()
    assert pipeline.seen.of("conversation") == []
    assert pipeline.evals.end_conversation("conv-9") is True
    pipeline.settle()
    [conversation] = pipeline.seen.of("conversation")
    assert isinstance(conversation, ConversationRun)
    assert [turn.output[-1].content for turn in conversation.turns] == [
        "Order 1042 shipped.",
        "It went with UPS.",
    ]
    # Found by its conversation id: on its evaluation span and its event.
    evaluation = pipeline.evaluation("conversation")
    assert evaluation.attributes is not None
    assert evaluation.attributes["gen_ai.conversation.id"] == "conv-9"
    [event] = [
        record.log_record
        for record in pipeline.logs.get_finished_logs()
        if (record.log_record.attributes or {}).get("gen_ai.evaluation.name") == "conversation"
    ]
    assert (event.attributes or {})["gen_ai.conversation.id"] == "conv-9"


def test_shutdown_scores_traces_still_in_their_grace() -> None:
    pipeline = SpanPipeline()
    pipeline.chat_trace("Order 1042 shipped.")
    pipeline.processor.shutdown()
    assert pipeline.runner.flush(30)
    assert len(pipeline.seen.of("trace")) == 1


# -- agentscore.Agent: its generation, its trajectory, its conversation -----------------------


@tool
def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order."""
    return dict(ORDER, order=order_id)


def test_the_agent_feeds_every_level() -> None:
    seen = Seen()
    runner = Runner()
    endpoint = ScriptedEndpoint(
        [
            chat_completion(tool_calls=[("lookup_order", {"order_id": "1042"})]),
            chat_completion("Order 1042 shipped with UPS."),
            chat_completion("You are welcome."),
        ]
    )
    agent = Agent(
        "support",
        "gpt-x",
        tools=[lookup_order],
        client=endpoint.client(),
        evals=Evals(scorers=level_scorers(seen), runner=runner),
    )
    first = agent.generate_sync("Where is order 1042?", conversation_id="agent-chat")
    agent.generate_sync(
        [*first.messages, {"role": "user", "content": "Thanks!"}], conversation_id="agent-chat"
    )
    assert runner.flush(30)
    traces = seen.of("trace")
    assert sorted(len(t.steps) for t in traces if isinstance(t, TraceRun)) == [1, 3]
    assert agent.evals.end_conversation("agent-chat")
    assert runner.flush(30)
    [conversation] = seen.of("conversation")
    assert isinstance(conversation, ConversationRun)
    assert [turn.input[-1].content for turn in conversation.turns] == [
        "Where is order 1042?",
        "Thanks!",
    ]
    assert conversation.agent_name == "support"
    assert len(agent.scores) == 2 + 2 + 1


# -- Generation level: earlier turns' tool results are context ---------------------------------


def three_turn_model(request: Request) -> Reply:
    """The scripted model of a three-turn chat: turn 1 looks the order up, turn 2 thanks,
    turn 3 restates what the turn-1 tool said."""
    messages = request.json()["messages"]
    users = [m for m in messages if m["role"] == "user"]
    last = messages[-1]
    if len(users) == 1 and last["role"] == "user":
        reply = chat_completion(tool_calls=[("lookup_order", {"order_id": "1042"})])
    elif len(users) == 1:
        reply = chat_completion("Order 1042 has shipped.")
    elif len(users) == 2:
        reply = chat_completion("Glad to help.")
    else:
        reply = chat_completion("Order 1042 shipped with UPS.")
    return json_reply(reply.body)


def find_order(order_id: str) -> dict[str, str]:
    """Look up an order."""
    return dict(ORDER, order=order_id)


def test_a_pydantic_ai_answer_restating_a_turn_one_tool_result_is_judged_against_it() -> None:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    results: list[ScoreResult] = []
    runner = Runner()
    evals = Evals(
        scorers=[create_faithfulness_scorer("local")], runner=runner, on_score=results.append
    )
    with http_server(three_turn_model) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="sk-test-not-a-key")
        model = OpenAIChatModel("gpt-x", provider=OpenAIProvider(openai_client=client))
        agent = PydanticAgent(model, instructions="Be helpful")
        agent.tool_plain(name="lookup_order")(find_order)
        first = agent.run_sync("Where is order 1042?")
        second = agent.run_sync("Thanks!", message_history=first.all_messages())
        third = agent.run_sync("Which carrier was it?", message_history=second.all_messages())
    assert third.output == "Order 1042 shipped with UPS."
    history = third.all_messages()[: -len(third.new_messages())]
    new = third.new_messages()
    assert evals.submit([*history, new[0]], new[1:]) is True
    assert runner.flush(30)
    [result] = results
    assert result.status == "scored", result
    assert result.score == 1.0
    assert result.context is not None
    assert any('"carrier": "UPS"' in chunk for chunk in result.context)


def test_earlier_turns_tool_results_come_first_in_the_context() -> None:
    from agentscore.context import found_context

    question, output = tool_turn("Where is order 1042?", "Shipped.")
    later = [{"role": "user", "content": "Carrier?"}]
    run = ScorerRun(input=[*question, *output, *later], output="UPS.")
    assert found_context(run) == [json.dumps({"tool": "lookup_order", "result": ORDER})]
    now = ScorerRun(input=later, output=output)
    assert found_context(now) == found_context(run)
