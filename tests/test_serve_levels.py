"""The three levels in `agentscore serve`: real service processes fed by the OTel SDK's OTLP
exporter, evaluations counted at a real OTLP receiver.

Whole traces are scored by the trace scorers after their root ended and `--trace-grace`;
conversations by the conversation scorers once idle for `--conversation-idle`, exactly once,
across `kill -9`. Time is set through the options (a short grace, a short idle timeout): the
tests wait for what the service reports, and bound no wall-clock time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.support.http_server import HttpServer, Reply, Request, http_server, json_reply
from tests.support.serve import (
    ORDER,
    ServeProcess,
    agent_turn,
    attribute,
    evaluation_spans,
    serving,
    start_serve,
    wait_for,
)

# Several service starts each: the e2e group.
pytestmark = pytest.mark.e2e

LEVELS = ("--scorers", "tests.support.serve_level_scorers:evals")


@contextmanager
def app_provider(serve: ServeProcess) -> Iterator[TracerProvider]:
    """An app's tracer provider exporting each span to the service as it ends."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{serve.url}/v1/traces")))
    try:
        yield provider
    finally:
        provider.shutdown()


def evaluations_of(receiver: HttpServer, scorer_id: str) -> list[ProtoSpan]:
    return [
        span
        for span in evaluation_spans(receiver)
        if attribute(span, "gen_ai.evaluation.name") == scorer_id
    ]


def distinct(spans: list[ProtoSpan]) -> list[ProtoSpan]:
    """One of each span id: an export repeated after a crash sends the same span again."""
    return list({bytes(span.span_id): span for span in spans}.values())


def score(span: ProtoSpan) -> float:
    value = attribute(span, "gen_ai.evaluation.score.value")
    assert isinstance(value, float), span
    return value


def settled(serve: ServeProcess, **counts: int) -> Callable[[], bool]:
    """True once /healthz shows these counters and no job is left."""

    def check() -> bool:
        health = serve.health()
        return health["pending_jobs"] == 0 and all(health[k] == v for k, v in counts.items())

    return check


# -- Trace level --------------------------------------------------------------------------------


def test_a_trace_scorer_judges_each_trace_once_after_its_root_under_the_root(
    tmp_path: Path,
) -> None:
    with http_server() as receiver:
        with serving(tmp_path, receiver.url, *LEVELS, "--trace-grace", "0.2") as serve:
            with app_provider(serve) as provider:
                looping = agent_turn(provider, "Where is order 1042?", "Shipped.", lookups=3)
                clean = agent_turn(provider, "Where is order 1042?", "Shipped.", lookups=1)
            wait_for(settled(serve, traces_found=2, scored=4), what="both traces scored")
            health = serve.health()
        found = evaluations_of(receiver, "tool_efficiency")
        faithfulness = evaluations_of(receiver, "faithfulness")
    # One evaluation per trace, parented to its root span: the trace's evaluation.
    by_parent = {
        (int.from_bytes(s.trace_id, "big"), int.from_bytes(s.parent_span_id, "big")): s
        for s in found
    }
    assert len(found) == 2
    assert set(by_parent) == {looping, clean}
    assert score(by_parent[looping]) == 0.75  # the third identical lookup is one repeat
    assert score(by_parent[clean]) == 1.0
    # The generation scorer still judges each agent span (its own target, beneath the root).
    assert len(faithfulness) == 2
    assert {int.from_bytes(s.trace_id, "big") for s in faithfulness} == {looping[0], clean[0]}
    assert {int.from_bytes(s.parent_span_id, "big") for s in faithfulness}.isdisjoint(
        {looping[1], clean[1]}
    )
    assert health["generations_found"] == 2
    assert health["dropped"] == 0 and health["failed"] == 0


# -- Conversation level -------------------------------------------------------------------------


def test_a_conversation_is_scored_once_after_it_went_idle_and_not_while_turns_come(
    tmp_path: Path,
) -> None:
    options = ("--trace-grace", "0.1", "--conversation-idle", "5")
    with http_server() as receiver:
        with serving(tmp_path, receiver.url, *LEVELS, *options) as serve:
            with app_provider(serve) as provider:
                for n in range(1, 4):
                    agent_turn(provider, f"Question {n}?", f"Answer {n}.", conversation_id="c-1")
                    wait_for(settled(serve, traces_found=n), what=f"turn {n} read")
                    # Turns keep coming: the conversation is open, not scored.
                    health = serve.health()
                    assert health["open_conversations"] == 1
                    assert health["conversations_over"] == 0
                    assert evaluations_of(receiver, "conversation_turns") == []
            wait_for(settled(serve, conversations_over=1), what="the conversation scored")
            # Scored once: nothing more comes however long the service runs on (a turn
            # tick and an export later).
            wait_for(lambda: len(evaluations_of(receiver, "conversation_turns")) == 1)
            after = serve.health()
        [evaluation] = evaluations_of(receiver, "conversation_turns")
    assert score(evaluation) == 3.0  # the three turns, together
    assert attribute(evaluation, "gen_ai.conversation.id") == "c-1"
    assert after["open_conversations"] == 0
    assert after["dropped"] == 0


def test_a_span_attribute_ends_a_conversation_at_once(tmp_path: Path) -> None:
    with http_server() as receiver:
        with serving(tmp_path, receiver.url, *LEVELS, "--trace-grace", "0.1") as serve:
            with app_provider(serve) as provider:
                agent_turn(provider, "Question 1?", "Answer 1.", conversation_id="c-2")
                agent_turn(provider, "Question 2?", "Answer 2.", conversation_id="c-2", end=True)
            # The default idle timeout is 15 minutes: only the end can have closed it.
            wait_for(settled(serve, conversations_over=1), what="the ended conversation scored")
            wait_for(lambda: len(evaluations_of(receiver, "conversation_turns")) == 1)
        [evaluation] = evaluations_of(receiver, "conversation_turns")
    assert score(evaluation) == 2.0


def test_a_second_service_on_the_same_queue_is_refused_and_the_conversation_stays_whole(
    tmp_path: Path,
) -> None:
    # The conversation tables live in the queue's file: the queue's lock keeps a second
    # process (a double deploy, a restart racing the old one) from reading or expiring them.
    with http_server() as receiver:
        with serving(tmp_path, receiver.url, *LEVELS, "--trace-grace", "0.1") as serve:
            with app_provider(serve) as provider:
                agent_turn(provider, "Question 1?", "Answer 1.", conversation_id="c-9")
                wait_for(settled(serve, traces_found=1), what="the first turn read")
                with pytest.raises(RuntimeError, match="in use by another process") as refused:
                    start_serve(tmp_path, receiver.url, *LEVELS)
                assert f"(pid {serve.process.pid})" in str(refused.value)
                assert serve.health()["open_conversations"] == 1
                agent_turn(provider, "Question 2?", "Answer 2.", conversation_id="c-9", end=True)
            wait_for(settled(serve, conversations_over=1), what="the conversation scored")
            wait_for(lambda: len(evaluations_of(receiver, "conversation_turns")) == 1)
        [evaluation] = evaluations_of(receiver, "conversation_turns")
    assert score(evaluation) == 2.0  # both turns, in the one service that holds the queue


def test_an_open_conversation_survives_kill_9_and_is_scored_exactly_once(tmp_path: Path) -> None:
    options = ("--trace-grace", "0.1", "--conversation-idle", "2")
    with http_server() as receiver:
        with serving(tmp_path, receiver.url, *LEVELS, *options) as serve:
            with app_provider(serve) as provider:
                agent_turn(provider, "Question 1?", "Answer 1.", conversation_id="c-3")
                agent_turn(provider, "Question 2?", "Answer 2.", conversation_id="c-3")
            wait_for(settled(serve, traces_found=2), what="both turns read")
            assert serve.health()["open_conversations"] == 1
            serve.kill()  # the conversation open, its turns on disk only
        assert evaluations_of(receiver, "conversation_turns") == []
        with serving(tmp_path, receiver.url, *LEVELS, *options) as serve:
            wait_for(settled(serve, conversations_over=1), what="the conversation scored")
            wait_for(lambda: len(evaluations_of(receiver, "conversation_turns")) >= 1)
            health = serve.health()
        found = distinct(evaluations_of(receiver, "conversation_turns"))
    assert len(found) == 1
    assert score(found[0]) == 2.0  # no turn lost
    assert health["open_conversations"] == 0


def test_kill_9_at_any_moment_of_a_conversation_scores_it_once(tmp_path: Path) -> None:
    """Killed while the turns are still coming in: the turns answered 200 before the kill are
    all in the one conversation scored after the restart."""
    options = ("--trace-grace", "0.1", "--conversation-idle", "2")
    with http_server() as receiver:
        with serving(tmp_path, receiver.url, *LEVELS, *options) as serve:
            with app_provider(serve) as provider:
                agent_turn(provider, "Question 1?", "Answer 1.", conversation_id="c-4")
                agent_turn(provider, "Question 2?", "Answer 2.", conversation_id="c-4")
            serve.kill()  # the second trace may still be in its grace: its spans are on disk
        with serving(tmp_path, receiver.url, *LEVELS, *options) as serve:
            wait_for(settled(serve, conversations_over=1), what="the conversation scored")
            wait_for(lambda: len(evaluations_of(receiver, "conversation_turns")) >= 1)
        found = distinct(evaluations_of(receiver, "conversation_turns"))
    assert len(found) == 1
    assert score(found[0]) == 2.0


# -- A real framework: pydantic-ai over three turns ---------------------------------------------


def three_turn_model(request: Request) -> Reply:
    """Turn 1 looks the order up, turn 2 thanks, turn 3 restates what the turn-1 tool said."""
    from agentscore.testing import chat_completion

    messages = request.json()["messages"]
    users = [m for m in messages if m["role"] == "user"]
    if len(users) == 1 and messages[-1]["role"] == "user":
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


def test_a_pydantic_ai_third_answer_is_judged_against_the_turn_one_tool_result(
    tmp_path: Path,
) -> None:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    with http_server() as receiver, http_server(three_turn_model) as model_server:
        options = ("--trace-grace", "0.1", "--capture-content")
        with serving(tmp_path, receiver.url, *LEVELS, *options) as serve:
            with app_provider(serve) as provider:
                client = AsyncOpenAI(base_url=model_server.base_url, api_key="sk-test-not-a-key")
                model = OpenAIChatModel("gpt-x", provider=OpenAIProvider(openai_client=client))
                settings = InstrumentationSettings(tracer_provider=provider, include_content=True)
                agent = Agent(
                    model,
                    name="support",
                    instructions="Be helpful",
                    capabilities=[Instrumentation(settings)],
                )
                agent.tool_plain(name="lookup_order")(find_order)
                first = agent.run_sync("Where is order 1042?")
                second = agent.run_sync("Thanks!", message_history=first.all_messages())
                third = agent.run_sync(
                    "Which carrier was it?", message_history=second.all_messages()
                )
            assert third.output == "Order 1042 shipped with UPS."
            wait_for(settled(serve, generations_found=3, traces_found=3), what="three turns")
            wait_for(lambda: len(evaluations_of(receiver, "faithfulness")) == 3)
        by_run = evaluations_of(receiver, "faithfulness")
    statuses = [attribute(span, "agentscore.score.status") for span in by_run]
    assert "no_context" not in statuses, statuses
    # The third answer restates the carrier only the turn-1 tool said: judged against it.
    [last] = [s for s in by_run if attribute(s, "input.value") == "Order 1042 shipped with UPS."]
    assert attribute(last, "agentscore.score.status") == "scored"
    assert score(last) == 1.0
