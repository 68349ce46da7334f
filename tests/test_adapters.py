"""Message adapters: real objects of each framework become the same `Message`s, with tool results.

The framework objects here are produced by the frameworks themselves (runs against the scripted
endpoint), not written by hand, so a change of shape upstream shows up as a failing test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage

from agentscore.adapters import coerce_messages, system_instructions
from agentscore.context import extract_tool_results
from agentscore.errors import UnreadableMessageError
from agentscore.judges import LocalJudge
from agentscore.messages import Message, ToolCall
from agentscore.run import ScorerRun
from agentscore.scorers import create_faithfulness_scorer
from agentscore.testing import ScriptedEndpoint, chat_completion

ORDER = {"order": "1042", "status": "shipped", "carrier": "UPS"}
ANSWER = "Order 1042 shipped with UPS."


def scripted_tool_run() -> ScriptedEndpoint:
    return ScriptedEndpoint(
        [
            chat_completion(tool_calls=[("lookup_order", {"order_id": "1042"})]),
            chat_completion(ANSWER),
        ]
    )


def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order."""
    return dict(ORDER, order=order_id)


def agents_sdk_run() -> Any:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool

    endpoint = scripted_tool_run()
    agent = Agent(
        name="support",
        instructions="Be helpful",
        tools=[function_tool(lookup_order)],
        model=OpenAIChatCompletionsModel(model="gpt-x", openai_client=endpoint.client()),
    )
    # The SDK's own trace exporter would call api.openai.com.
    return Runner.run_sync(
        agent, "Where is order 1042?", run_config=RunConfig(tracing_disabled=True)
    )


def pydantic_ai_run() -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    endpoint = scripted_tool_run()
    model = OpenAIChatModel("gpt-x", provider=OpenAIProvider(openai_client=endpoint.client()))
    agent = Agent(model, instructions="Be helpful")
    agent.tool_plain(lookup_order)
    return agent.run_sync("Where is order 1042?")


def assert_tool_run(messages: list[Message]) -> None:
    """The shape every adapter must produce for the scripted run."""
    assert [m.role for m in messages if m.role != "system"] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    [result] = extract_tool_results(messages)
    assert result.tool_name == "lookup_order"
    assert result.args == {"order_id": "1042"}
    assert "shipped" in str(result.result)
    assert messages[-1].content == ANSWER


def test_agents_sdk_input_list_keeps_tool_calls_and_results() -> None:
    # These items used to be read as one assistant message without tool calls: scored 0.0.
    result = agents_sdk_run()
    assert_tool_run(coerce_messages(result.to_input_list()))


def test_agents_sdk_run_items_are_read_through_their_raw_items() -> None:
    result = agents_sdk_run()
    messages = coerce_messages(result.new_items)
    assert [m.role for m in messages] == ["assistant", "tool", "assistant"]
    assert extract_tool_results(messages)[0].tool_name == "lookup_order"


def test_pydantic_ai_messages_as_objects_and_as_json() -> None:
    result = pydantic_ai_run()
    assert_tool_run(coerce_messages(result.all_messages()))
    assert_tool_run(coerce_messages(result.all_messages_json()))
    assert coerce_messages(result.all_messages())[0] == Message(
        role="user", content="Where is order 1042?"
    )


def test_responses_api_sdk_objects() -> None:
    call = ResponseFunctionToolCall(
        type="function_call", call_id="c1", name="lookup_order", arguments='{"order_id": "1042"}'
    )
    answer = ResponseOutputMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
        }
    )
    messages = coerce_messages(
        [
            {"role": "user", "content": "Where is order 1042?"},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            call,
            {"type": "function_call_output", "call_id": "c1", "output": json.dumps(ORDER)},
            answer,
        ]
    )
    assert_tool_run(messages)


def test_genai_semconv_messages_with_tool_parts() -> None:
    messages = coerce_messages(
        [
            {"role": "user", "parts": [{"type": "text", "content": "Where is order 1042?"}]},
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": "c1",
                        "name": "lookup_order",
                        "arguments": {"order_id": "1042"},
                    }
                ],
            },
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": "c1", "response": ORDER}],
            },
            {
                "role": "assistant",
                "parts": [
                    {"type": "reasoning", "content": "hm"},
                    {"type": "text", "content": ANSWER},
                ],
                "finish_reason": "stop",
            },
        ]
    )
    assert_tool_run(messages)
    assert system_instructions('[{"type": "text", "content": "Be helpful"}]') == [
        Message(role="system", content="Be helpful")
    ]


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ([{"type": "hologram_call", "id": "x"}], "'hologram_call'"),
        ([{"role": "user", "parts": [{"type": "hologram"}]}], "'hologram'"),
        ([object()], "object"),
        ([{"id": "x", "status": "done"}], "fields ['id', 'status']"),
        (42, "int"),
    ],
)
def test_unreadable_items_raise_a_typed_error_naming_them(value: object, named: str) -> None:
    with pytest.raises(UnreadableMessageError, match=named.replace("[", r"\[").replace("]", r"\]")):
        coerce_messages(value)


def test_scorer_run_on_unreadable_output_is_a_failed_result_naming_the_item() -> None:
    scorer = create_faithfulness_scorer(LocalJudge())
    result = scorer.run_sync({"input": "q", "output": [{"type": "hologram_call", "id": "x"}]})
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.type == "UnreadableMessageError"
    assert "hologram_call" in result.error.message


def test_agents_sdk_run_is_scored_on_its_tool_results() -> None:
    result = agents_sdk_run()
    run = ScorerRun(input="Where is order 1042?", output=result.new_items)
    score = create_faithfulness_scorer(LocalJudge()).run_sync(run)
    assert score.status == "scored"
    assert score.score == 1.0


def test_tool_call_models_pass_through() -> None:
    call = ToolCall(id="c", name="f", arguments="{}")
    [message] = coerce_messages({"role": "assistant", "tool_calls": [call]})
    assert message.tool_calls == (call,)


@pytest.mark.parametrize(
    "value",
    [
        [{"role": "assistant", "tool_calls": 5}],
        [{"role": "assistant", "parts": 5}],
        [{"role": "assistant", "parts": [{"type": ["text"]}]}],
        b"[" * 50_000 + b"]" * 50_000,  # JSON nested past the parser's depth
    ],
    ids=["tool-calls-a-number", "parts-a-number", "unhashable-part-type", "deep-json"],
)
def test_malformed_fields_are_unreadable_not_a_stray_error(value: object) -> None:
    with pytest.raises(UnreadableMessageError, match="malformed messages"):
        coerce_messages(value)


# Hosted tools run on the provider's side; their items are built here from the SDK's own
# types (validated by the SDK), as a Responses API reply would deliver them.
POLICY = "Items can be returned within 30 days of delivery for a full refund."


def hosted_tool_items() -> list[Any]:
    from openai.types.responses import (
        ResponseCodeInterpreterToolCall,
        ResponseFileSearchToolCall,
        ResponseFunctionWebSearch,
    )
    from openai.types.responses.response_output_item import McpCall, McpListTools

    return [
        McpListTools.model_validate(
            {"id": "l1", "server_label": "shop", "tools": [], "type": "mcp_list_tools"}
        ),
        ResponseFileSearchToolCall.model_validate(
            {
                "id": "fs1",
                "queries": ["return policy"],
                "status": "completed",
                "type": "file_search_call",
                "results": [
                    {"file_id": "f1", "filename": "policy.md", "score": 0.9, "text": POLICY}
                ],
            }
        ),
        McpCall.model_validate(
            {
                "id": "m1",
                "name": "lookup_order",
                "arguments": '{"order_id": "1042"}',
                "server_label": "shop",
                "type": "mcp_call",
                "output": json.dumps(ORDER),
            }
        ),
        ResponseCodeInterpreterToolCall.model_validate(
            {
                "id": "ci1",
                "code": "print(30 - 12)",
                "container_id": "c1",
                "outputs": [{"type": "logs", "logs": "18"}],
                "status": "completed",
                "type": "code_interpreter_call",
            }
        ),
        ResponseFunctionWebSearch.model_validate(
            {
                "id": "ws1",
                "status": "completed",
                "type": "web_search_call",
                "action": {"type": "search", "query": "UPS tracking"},
            }
        ),
        ResponseOutputMessage.model_validate(
            {
                "id": "msg1",
                "role": "assistant",
                "status": "completed",
                "type": "message",
                "content": [
                    {
                        "type": "output_text",
                        "text": f"{ANSWER} {POLICY}",
                        "annotations": [],
                    }
                ],
            }
        ),
    ]


def test_hosted_tool_items_become_tool_calls_with_their_text_results() -> None:
    results = extract_tool_results(hosted_tool_items())
    assert [(r.tool_name, r.tool_call_id) for r in results] == [
        ("file_search", "fs1"),
        ("lookup_order", "m1"),
        ("code_interpreter", "ci1"),
    ]
    assert results[0].result == [{"filename": "policy.md", "text": POLICY}]
    assert results[1].args == {"order_id": "1042"} and results[1].result == ORDER
    assert results[2].result == 18
    calls = [c for m in coerce_messages(hosted_tool_items()) for c in m.tool_calls]
    # The web search ran, but its pages are not in the item: a call without a result.
    assert ("ws1", "web_search") in [(c.id, c.name) for c in calls]


def test_an_answer_grounded_in_hosted_tool_results_is_scored_on_them() -> None:
    scorer = create_faithfulness_scorer(LocalJudge())
    result = scorer.run_sync(ScorerRun(input="Where is order 1042?", output=hosted_tool_items()))
    assert result.status == "scored", result.error
    assert result.score == 1.0


def test_an_mcp_call_that_failed_gives_its_error_as_the_result() -> None:
    item = {
        "type": "mcp_call",
        "id": "m2",
        "name": "lookup_order",
        "arguments": "{}",
        "server_label": "shop",
        "error": {"type": "tool_execution_error", "message": "order not found"},
    }
    [result] = extract_tool_results([item])
    assert result.result == {"type": "tool_execution_error", "message": "order not found"}


@pytest.mark.parametrize(
    "item",
    [
        {"type": "code_interpreter_call", "id": "c", "outputs": 5},
        {"type": "code_interpreter_call", "id": "c", "outputs": [{"type": "logs", "logs": None}]},
        {"type": "file_search_call", "id": "f", "results": {"text": "not a list"}},
        {"type": "file_search_call", "id": "f", "results": [1, "x", None]},
        {"type": "shell_call_output", "call_id": "s", "output": [1, {"stdout": ["a"]}]},
        {"type": "mcp_call", "output": 5, "error": "boom"},
        {"type": "mcp_call"},
        {"type": "web_search_call", "id": "w", "action": "x" * 100_000},
    ],
)
def test_hosted_tool_items_of_the_wrong_shape_are_read_or_refused_by_type(item: Any) -> None:
    try:
        messages = coerce_messages([item])
    except UnreadableMessageError:
        return
    assert all(m.content != "None" for m in messages)  # no stringified missing value
    # Whatever was read pairs up as tool results without raising.
    assert len(extract_tool_results([item])) == sum(m.role == "tool" for m in messages)
