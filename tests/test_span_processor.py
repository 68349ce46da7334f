"""ScoringSpanProcessor against real instrumentations: pydantic-ai's own, and the OpenAI Agents SDK
through OpenInference, both driving the scripted OpenAI-compatible endpoint; then the rules
(one score per generation, never the judge's own spans, unreadable spans fail loudly) on spans
made with the OpenTelemetry SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentscore import Evals, Runner, ScoreResult, Telemetry
from agentscore.judges import LocalJudge, OpenAIJudge
from agentscore.scorers import create_faithfulness_scorer
from agentscore.spans import ScoringSpanProcessor
from agentscore.testing import ScriptedEndpoint, chat_completion
from tests.support.otel import Otel, span_context
from tests.support.pipeline import Pipeline, parts

ORDER = {"order": "1042", "status": "shipped", "carrier": "UPS"}
ANSWER = "Order 1042 shipped with UPS."
WRONG = "Order 1042 shipped with FedEx."


def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order."""
    return dict(ORDER, order=order_id)


def tool_then(answer: str) -> ScriptedEndpoint:
    return ScriptedEndpoint(
        [
            chat_completion(tool_calls=[("lookup_order", {"order_id": "1042"})]),
            chat_completion(answer),
        ]
    )


def span_hex(span: ReadableSpan) -> str:
    return f"{span_context(span).span_id:016x}"


# -- pydantic-ai, its own OpenTelemetry instrumentation -----------------------------------------


def run_pydantic_ai(pipeline: Pipeline, answer: str, *, include_content: bool = True) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(
        "gpt-x", provider=OpenAIProvider(openai_client=tool_then(answer).client())
    )
    settings = InstrumentationSettings(
        tracer_provider=pipeline.provider, include_content=include_content
    )
    agent = Agent(
        model,
        name="support",
        instructions="Be helpful",
        capabilities=[Instrumentation(settings)],
    )
    agent.tool_plain(lookup_order)
    agent.run_sync("Where is order 1042?")


@pytest.mark.parametrize(("answer", "expected"), [(ANSWER, 1.0), (WRONG, 0.0)])
def test_pydantic_ai_run_is_scored_once_under_its_agent_span(answer: str, expected: float) -> None:
    pipeline = Pipeline()
    run_pydantic_ai(pipeline, answer)
    [score] = pipeline.settle()
    agent_span = pipeline.span("invoke_agent support")
    assert score.status == "scored"
    assert score.score == expected
    assert score.span_id == span_hex(agent_span)
    assert score.agent_name == "support"
    [evaluation] = pipeline.evaluation_spans()
    assert evaluation.parent is not None
    assert evaluation.parent.span_id == span_context(agent_span).span_id
    assert evaluation.attributes is not None
    assert evaluation.attributes["gen_ai.evaluation.score.value"] == expected


def test_pydantic_ai_without_content_fails_loudly_instead_of_scoring_nothing() -> None:
    pipeline = Pipeline()
    run_pydantic_ai(pipeline, ANSWER, include_content=False)
    [score] = pipeline.settle()
    assert score.status == "failed"
    assert score.error is not None
    assert score.error.type == "UnreadableMessageError"
    assert "content capture" in score.error.message


# -- OpenAI Agents SDK through openinference-instrumentation-openai-agents ----------------------


@pytest.fixture(scope="module")
def agents_pipeline() -> Iterator[Pipeline]:
    from agents import set_trace_processors
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    pipeline = Pipeline()
    set_trace_processors([])  # drop the SDK's default exporter, which calls api.openai.com
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=pipeline.provider)
    yield pipeline
    instrumentor.uninstrument()


@pytest.mark.parametrize(("answer", "expected"), [(ANSWER, 1.0), (WRONG, 0.0)])
def test_agents_sdk_run_is_scored_once_under_its_agent_span(
    agents_pipeline: Pipeline, answer: str, expected: float
) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool

    agents_pipeline.exporter.clear()
    agents_pipeline.scores.clear()
    agent = Agent(
        name="support",
        instructions="Be helpful",
        tools=[function_tool(lookup_order)],
        model=OpenAIChatCompletionsModel(model="gpt-x", openai_client=tool_then(answer).client()),
    )
    Runner.run_sync(agent, "Where is order 1042?")
    [score] = agents_pipeline.settle()
    # "Agent workflow" spans wrap the run; the agent that talked to the model is "support".
    agent_span = agents_pipeline.span("support")
    assert score.status == "scored"
    assert score.score == expected
    assert score.span_id == span_hex(agent_span)
    [evaluation] = agents_pipeline.evaluation_spans()
    assert evaluation.parent is not None
    assert evaluation.parent.span_id == span_context(agent_span).span_id


# -- The rules, on spans made with the SDK ------------------------------------------------------


def hand_written_loop(pipeline: Pipeline, answer: str) -> tuple[ReadableSpan, ReadableSpan]:
    """A hand-written tool loop traced with GenAI `chat` spans and no agent span."""
    tracer = pipeline.provider.get_tracer("app")
    user = {"role": "user", "parts": [{"type": "text", "content": "Where is order 1042?"}]}
    call = {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "c1", "name": "lookup_order", "arguments": "{}"}],
    }
    result = {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "c1", "response": ORDER}],
    }
    with tracer.start_as_current_span("POST /chat"):
        with tracer.start_as_current_span(
            "chat gpt-x",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps([user]),
                "gen_ai.output.messages": json.dumps([call]),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "chat gpt-x final",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps([user, call, result]),
                "gen_ai.output.messages": parts(answer),
            },
        ):
            pass
    return pipeline.span("chat gpt-x"), pipeline.span("chat gpt-x final")


def test_a_hand_written_loop_is_scored_once_on_its_final_chat_span() -> None:
    pipeline = Pipeline()
    _, final = hand_written_loop(pipeline, ANSWER)
    [score] = pipeline.settle()
    assert score.score == 1.0
    assert score.span_id == span_hex(final)
    assert [m.role for m in score.output] == ["assistant", "tool", "assistant"]


def test_evaluations_go_through_the_provider_the_processor_is_attached_to(otel: Otel) -> None:
    pipeline = Pipeline(telemetry=None)  # a provider of its own, never made global
    _, final = hand_written_loop(pipeline, ANSWER)
    [score] = pipeline.settle()
    assert score.score == 1.0
    [evaluation] = pipeline.evaluation_spans()
    assert evaluation.parent is not None
    assert evaluation.parent.span_id == span_context(final).span_id
    assert evaluation.attributes is not None
    assert evaluation.attributes["gen_ai.evaluation.score.value"] == 1.0
    assert evaluation.resource == final.resource
    assert not [s for s in otel.spans.get_finished_spans() if s.name.startswith("evaluation")]


def test_a_span_of_another_sdk_leaves_evaluations_on_the_global_provider() -> None:
    from opentelemetry.trace import INVALID_SPAN

    pipeline = Pipeline(telemetry=None)
    pipeline.processor.on_start(INVALID_SPAN)  # type: ignore[arg-type]
    assert pipeline.processor._telemetry is None


def test_evals_telemetry_wins_over_the_provider_the_processor_is_attached_to() -> None:
    elsewhere = InMemorySpanExporter()
    named = TracerProvider()
    named.add_span_processor(SimpleSpanProcessor(elsewhere))
    pipeline = Pipeline(telemetry=Telemetry(tracer_provider=named))
    hand_written_loop(pipeline, ANSWER)
    [score] = pipeline.settle()
    assert score.score == 1.0
    assert not pipeline.evaluation_spans()
    assert [s.name for s in elsewhere.get_finished_spans()] == ["evaluation faithfulness"]


def test_tool_results_come_from_execute_tool_spans_when_messages_lack_them() -> None:
    pipeline = Pipeline()
    tracer = pipeline.provider.get_tracer("app")
    with tracer.start_as_current_span(
        "invoke_agent support",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"},
    ) as agent_span:
        with tracer.start_as_current_span(
            "execute_tool lookup_order",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup_order",
                "gen_ai.tool.call.id": "c9",
                "gen_ai.tool.call.result": json.dumps(ORDER),
            },
        ):
            pass
        agent_span.set_attribute(
            "gen_ai.input.messages",
            json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Where?"}]}]),
        )
        agent_span.set_attribute("gen_ai.output.messages", parts(ANSWER))
    [score] = pipeline.settle()
    assert score.score == 1.0
    assert score.output[-1].content == ANSWER
    assert [m.role for m in score.output] == ["assistant", "tool", "assistant"]


def test_the_judges_own_spans_are_never_scored() -> None:
    # The judge's chat spans and the evaluation span go through the same provider.
    judge_endpoint = ScriptedEndpoint(
        lambda body: chat_completion(
            {"claims": [{"claim": ANSWER, "verdict": "yes", "reason": "in the tool result"}]}
        )
    )
    judge = OpenAIJudge(model="judge", client=judge_endpoint.client())
    pipeline = Pipeline(judge)
    hand_written_loop(pipeline, ANSWER)
    hand_written_loop(pipeline, "Order 1042 shipped.")  # another prompt: no cache hit
    scores = pipeline.settle()
    pipeline.processor.shutdown()  # closes every open trace, the evaluations' included
    assert pipeline.runner.flush(10)
    assert len(scores) == 2
    assert len(judge_endpoint.requests) == 2


def test_unreadable_messages_on_a_generation_span_end_as_a_failed_result() -> None:
    pipeline = Pipeline()
    tracer = pipeline.provider.get_tracer("app")
    with tracer.start_as_current_span(
        "chat gpt-x",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "hologram"}]}]
            ),
        },
    ):
        pass
    [score] = pipeline.settle()
    assert score.status == "failed"
    assert score.error is not None
    assert score.error.type == "UnreadableMessageError"
    assert "hologram" in score.error.message


def test_a_trace_whose_root_never_ends_is_read_after_the_idle_timeout() -> None:
    pipeline = Pipeline(idle_timeout=0.05)
    tracer = pipeline.provider.get_tracer("app")
    root = tracer.start_span("long running request")
    from opentelemetry import trace

    with (
        trace.use_span(root),
        tracer.start_as_current_span(
            "chat gpt-x",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]
                ),
                "gen_ai.output.messages": parts("Hello! How can I help?"),
            },
        ),
    ):
        pass
    assert pipeline.processor.force_flush(5_000)
    deadline_scores: list[ScoreResult] = []
    for _ in range(200):
        pipeline.runner.flush(5)
        deadline_scores = list(pipeline.scores)
        if deadline_scores:
            break
        import time

        time.sleep(0.05)
    root.end()
    assert len(deadline_scores) == 1
    assert deadline_scores[0].status == "no_context"  # a greeting, and no tool was called


def test_a_full_queue_drops_and_counts_spans_without_raising() -> None:
    pipeline = Pipeline(max_queue=1)
    tracer = pipeline.provider.get_tracer("app")
    with pipeline.processor._spans.lock:  # hold the reader so that the queue fills
        for index in range(5):
            with tracer.start_as_current_span(f"span {index}"):
                pass
    assert pipeline.processor.dropped_spans >= 3
    assert pipeline.processor.force_flush(5_000)


def test_agentscore_agents_score_themselves_and_are_not_read_again() -> None:
    from agentscore import Agent

    pipeline = Pipeline()
    model = ScriptedEndpoint([chat_completion(ANSWER)])
    agent = Agent(
        name="own",
        model="m",
        client=model.client(),
        telemetry=Telemetry(tracer_provider=pipeline.provider),
        evals=pipeline.evals,
    )
    agent.generate_sync("Where is order 1042?")
    scores = pipeline.settle()
    pipeline.processor.shutdown()
    assert pipeline.runner.flush(10)
    # One score, from the agent's own hook; content capture is off, and the processor did
    # not turn the agent's content-less spans into an UnreadableMessageError.
    assert [s.agent_name for s in scores] == ["own"]
    assert scores[0].error is None


def test_traces_no_scorer_samples_are_left_in_on_end_and_the_rest_scored() -> None:
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    from agentscore.pipeline.sampling import sample_point, sampled

    trace_ids = [
        (1 << 64) * k + low for k, low in enumerate([1, 2**62, 2**63 - 1, 2**63 + 5, 2**64 - 1], 1)
    ]

    class FixedTraces(RandomIdGenerator):
        def __init__(self) -> None:
            self.pending = list(trace_ids)

        def generate_trace_id(self) -> int:
            return self.pending.pop(0)

    runner = Runner()
    scores: list[ScoreResult] = []
    evals = Evals(
        scorers=[create_faithfulness_scorer(LocalJudge())],
        sampling=0.5,
        runner=runner,
        on_score=scores.append,
    )
    processor = ScoringSpanProcessor(evals)
    provider = TracerProvider(id_generator=FixedTraces())
    provider.add_span_processor(processor)
    pipeline = Pipeline()
    pipeline.provider = provider  # hand_written_loop traces through this provider
    pipeline.exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(pipeline.exporter))
    for _ in trace_ids:
        hand_written_loop(pipeline, ANSWER)
    assert processor.force_flush(10_000)
    assert runner.flush(10)
    expected = {f"{t:032x}" for t in trace_ids if sampled(0.5, sample_point(f"{t:032x}", ""))}
    assert len(expected) == 2  # (2**63 - 1) / 2**64 rounds to one half: not sampled, in both
    assert {score.trace_id for score in scores} == expected


def test_a_rate_of_one_samples_every_trace_even_where_its_point_rounds_to_one() -> None:
    from agentscore.pipeline.sampling import sample_point, sampled, trace_point

    highest = (1 << 64) - 1  # its low 64 bits divided by 2**64 round to 1.0
    assert trace_point(highest) == 1.0
    assert sampled(1.0, trace_point(highest))
    assert sampled(1.0, sample_point(f"{highest:032x}", ""))
    assert not sampled(0.0, trace_point(0))
    # The processor's early decision and the scorers' are the same function of the trace id.
    assert trace_point(3 << 64 | highest) == sample_point(f"{3 << 64 | highest:032x}", "")


def test_open_traces_past_the_byte_budget_are_dropped_and_counted() -> None:
    pipeline = Pipeline(max_open_bytes=1_000_000, idle_timeout=0.2)
    tracer = pipeline.provider.get_tracer("app")
    roots = []
    for index in range(20):  # 20 requests still running, each with a 100 kB model call
        root = tracer.start_span(f"request {index}")
        roots.append(root)
        with (
            trace.use_span(root),
            tracer.start_as_current_span(
                "chat gpt-x",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]
                    ),
                    "gen_ai.output.messages": parts("Hello. " + "x" * 100_000),
                },
            ),
        ):
            pass
    assert pipeline.processor.force_flush(5_000)
    held = pipeline.processor._assembler.held_bytes
    dropped = pipeline.processor.dropped_spans
    for root in roots:
        root.end()
    assert held <= 1_000_000
    assert 5 <= dropped <= 15  # about half did not fit, and were counted
    # Those that fit were read once their roots ended; the rest are gone, counted above.
    scores = pipeline.settle()
    assert len(scores) == 20 - dropped
