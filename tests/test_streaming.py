"""Agent.stream: text deltas, tool calls assembled from pieces, scoring once the stream completes,
and early stop or cancellation ending the spans with an error, scoring nothing, counted."""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import pytest

from agentscore import Agent, tool
from agentscore.agent.streaming import StreamDone, TextDelta, ToolCallEvent, ToolResultEvent
from agentscore.evals import Evals
from agentscore.judges import LocalJudge
from agentscore.pipeline.runner import Runner
from agentscore.result import ScoreResult
from agentscore.scorers import create_faithfulness_scorer
from agentscore.telemetry import Telemetry
from agentscore.testing import ScriptedEndpoint, chat_completion
from tests.support.otel import Otel, span_context

ANSWER = "Order 42 shipped on May 2 and arrives on May 5."


@tool
def lookup_order(order_id: int) -> dict[str, Any]:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "shipped", "shipped": "May 2", "eta": "May 5"}


def model_endpoint(delay: float = 0.0) -> ScriptedEndpoint:
    def respond(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "tool":
            return chat_completion(ANSWER, delay=delay)
        return chat_completion(None, tool_calls=[("lookup_order", {"order_id": 42})])

    return ScriptedEndpoint(respond)


def make_agent(endpoint: ScriptedEndpoint) -> tuple[Agent, Runner, list[ScoreResult]]:
    runner = Runner()
    scores: list[ScoreResult] = []
    agent = Agent(
        name="support",
        model="agent-model",
        tools=[lookup_order],
        client=endpoint.client(max_retries=0),
        telemetry=Telemetry(),
        evals=Evals(
            scorers=[create_faithfulness_scorer(LocalJudge())],
            runner=runner,
            on_score=scores.append,
        ),
    )
    return agent, runner, scores


@pytest.mark.anyio
async def test_stream_yields_deltas_whole_tool_calls_results_and_is_scored_once(otel: Otel) -> None:
    endpoint = model_endpoint()
    agent, runner, scores = make_agent(endpoint)
    events = [event async for event in agent.stream("Where is order 42?")]

    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) >= 3  # the scripted server streams the answer in pieces
    assert "".join(deltas) == ANSWER
    [call] = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert call.name == "lookup_order"
    assert call.arguments == '{"order_id": 42}'  # assembled from two halves
    [result] = [e.message for e in events if isinstance(e, ToolResultEvent)]
    assert '"status": "shipped"' in (result.content or "")
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert done.result.text == ANSWER
    assert done.result.usage.requests == 2
    assert all(request.get("stream") for request in endpoint.requests)

    assert await runner.aflush(10)
    [score] = scores
    assert score.score == 1.0
    assert score.span_id == done.result.span_id

    spans = {span.name: span for span in otel.spans.get_finished_spans()}
    agent_span = spans["invoke_agent support"]
    chats = [s for s in otel.spans.get_finished_spans() if s.name == "chat agent-model"]
    assert len(chats) == 2
    for chat in chats:
        assert chat.parent is not None
        assert chat.parent.span_id == span_context(agent_span).span_id
        assert chat.attributes is not None
        time_to_first_chunk = chat.attributes["gen_ai.response.time_to_first_chunk"]
        assert isinstance(time_to_first_chunk, float) and time_to_first_chunk >= 0
        assert chat.attributes["gen_ai.usage.input_tokens"] == 100
    tool_span = spans["execute_tool lookup_order"]
    assert tool_span.parent is not None
    assert tool_span.parent.span_id == span_context(agent_span).span_id
    assert agent.abandoned_streams == 0


@pytest.mark.anyio
async def test_stopping_early_scores_nothing_ends_spans_with_an_error_and_counts(
    otel: Otel,
) -> None:
    agent, runner, scores = make_agent(model_endpoint())
    async with contextlib.aclosing(agent.stream("Where is order 42?")) as stream:
        async for event in stream:
            if isinstance(event, ToolCallEvent):
                break
    assert await runner.aflush(10)
    assert scores == []
    assert agent.abandoned_streams == 1
    [agent_span] = [s for s in otel.spans.get_finished_spans() if s.name == "invoke_agent support"]
    assert agent_span.status.status_code.name == "ERROR"
    assert agent_span.attributes is not None
    assert agent_span.attributes["error.type"] == "GeneratorExit"


@pytest.mark.anyio
async def test_a_cancelled_stream_scores_nothing_and_counts(otel: Otel) -> None:
    agent, runner, scores = make_agent(model_endpoint(delay=30))
    with anyio.move_on_after(0.5):
        async for _ in agent.stream("Where is order 42?"):
            pass
    assert await runner.aflush(10)
    assert scores == []
    assert agent.abandoned_streams == 1
    [agent_span] = [s for s in otel.spans.get_finished_spans() if s.name == "invoke_agent support"]
    assert agent_span.status.status_code.name == "ERROR"


def test_stream_sync_yields_the_same_events_and_scores() -> None:
    agent, runner, scores = make_agent(model_endpoint())
    events = list(agent.stream_sync("Where is order 42?"))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == ANSWER
    assert isinstance(events[-1], StreamDone)
    assert runner.flush(10)
    assert [score.score for score in scores] == [1.0]


def test_stream_sync_left_early_is_cancelled_and_counted() -> None:
    agent, runner, scores = make_agent(model_endpoint(delay=30))
    stream = agent.stream_sync("Where is order 42?")
    first = next(stream)
    assert isinstance(first, ToolCallEvent)
    stream.close()
    assert runner.flush(10)
    for _ in range(100):
        if agent.abandoned_streams:
            break
        import time

        time.sleep(0.02)
    assert agent.abandoned_streams == 1
    assert scores == []


def test_stream_sync_raises_the_models_error_in_the_callers_thread() -> None:
    endpoint = ScriptedEndpoint([])  # every request gets a 500
    agent, _, scores = make_agent(endpoint)
    import openai

    with pytest.raises(openai.InternalServerError):
        list(agent.stream_sync("Where is order 42?"))
    assert agent.abandoned_streams == 1
    assert scores == []
