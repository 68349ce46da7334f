"""Message coercion: every shape users hand us becomes `Message`s, or a clear TypeError."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.chat import ChatCompletionMessage

from agentscore.adapters import coerce_messages
from agentscore.messages import Message, ToolCall, assistant_text, last_user_text
from agentscore.run import ScorerRun


def sdk_message_with_tool_calls() -> ChatCompletionMessage:
    return ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_weather",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_time",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": '{"tz": "CET"}'},
                },
            ],
        }
    )


def conversation() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather and time in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_weather",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_time",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": '{"tz": "CET"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_time", "content": "14:05"},
        {"role": "tool", "tool_call_id": "call_weather", "content": '{"temp_c": 18}'},
        {"role": "assistant", "content": "It is 18°C and 14:05 in Paris."},
    ]


def test_a_string_becomes_one_message_with_the_default_role() -> None:
    assert coerce_messages("hello") == [Message(role="assistant", content="hello")]
    assert coerce_messages("hello", default_role="user") == [Message(role="user", content="hello")]
    assert coerce_messages(None) == []
    assert coerce_messages([]) == []


def test_a_single_dict_becomes_one_message() -> None:
    assert coerce_messages({"role": "user", "content": "hi", "name": "alice"}) == [
        Message(role="user", content="hi", name="alice")
    ]
    # A dict without a role is an assistant message.
    assert coerce_messages({"content": "answer"}) == [Message(role="assistant", content="answer")]


def test_openai_sdk_message_with_tool_calls() -> None:
    messages = coerce_messages(sdk_message_with_tool_calls())

    assert len(messages) == 1
    message = messages[0]
    assert message.role == "assistant"
    assert message.content is None
    assert message.tool_calls == (
        ToolCall(id="call_weather", name="get_weather", arguments='{"city": "Paris"}'),
        ToolCall(id="call_time", name="get_time", arguments='{"tz": "CET"}'),
    )


def test_sdk_objects_mix_with_dicts_in_a_list() -> None:
    sdk_reply = ChatCompletionMessage(role="assistant", content="Done.")
    messages = coerce_messages(
        [
            {"role": "user", "content": "Do it."},
            sdk_message_with_tool_calls(),
            {"role": "tool", "tool_call_id": "call_weather", "content": "sunny"},
            sdk_reply,
        ]
    )
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[2].name == "get_weather"
    assert messages[3].content == "Done."


def test_multi_part_content_joins_text_parts_and_skips_images() -> None:
    [message] = coerce_messages(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in"},
                    {"type": "image_url", "image_url": {"url": "https://example.test/cat.png"}},
                    {"type": "text", "text": "this picture?"},
                ],
            }
        ]
    )
    assert message.content == "What is in\nthis picture?"
    assert "example.test" not in (message.content or "")


def test_image_only_content_has_no_text() -> None:
    [message] = coerce_messages(
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,x"}}]}
    )
    assert message.content == ""


def test_developer_role_is_system_and_function_role_is_tool() -> None:
    messages = coerce_messages(
        [
            {"role": "developer", "content": "Follow the policy."},
            {"role": "function", "name": "lookup", "content": "42"},
        ]
    )
    assert messages[0] == Message(role="system", content="Follow the policy.")
    assert messages[1] == Message(role="tool", content="42", name="lookup")


def test_tool_messages_get_their_name_from_the_assistant_tool_calls() -> None:
    messages = coerce_messages(conversation())

    tools = [m for m in messages if m.role == "tool"]
    assert [(m.tool_call_id, m.name) for m in tools] == [
        ("call_time", "get_time"),
        ("call_weather", "get_weather"),
    ]


def test_a_tool_name_already_given_is_kept() -> None:
    messages = coerce_messages(
        [
            {
                "role": "assistant",
                "tool_calls": [{"id": "c1", "function": {"name": "search", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "renamed", "content": "x"},
            {"role": "tool", "tool_call_id": "unknown", "content": "y"},
        ]
    )
    assert messages[1].name == "renamed"
    assert messages[2].name is None


def test_tool_call_arguments_given_as_an_object_become_json_text() -> None:
    [message] = coerce_messages(
        {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {"n": 1}}}],
        }
    )
    assert message.tool_calls == (ToolCall(id="c1", name="f", arguments='{"n": 1}'),)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (42, "expected a chat message, got int"),
        ({"role": "robot", "content": "beep"}, "unknown message role 'robot'"),
        ([{"role": "user", "content": "ok"}, 3.5], "expected a chat message, got float"),
        (
            [{"role": "assistant", "tool_calls": [7]}],
            "expected a tool call, got int",
        ),
    ],
)
def test_bad_input_raises_a_clear_type_error(value: object, message: str) -> None:
    with pytest.raises(TypeError) as caught:
        coerce_messages(value)
    assert str(caught.value) == message


def test_scorer_run_passes_the_type_error_through() -> None:
    with pytest.raises(TypeError, match="unknown message role 'robot'"):
        ScorerRun(input="q", output=[{"role": "robot", "content": "beep"}])


def test_assistant_text_joins_every_assistant_message_and_skips_empty_ones() -> None:
    messages = coerce_messages(
        [
            {"role": "user", "content": "Question?"},
            {"role": "assistant", "content": "  First part.  "},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "name": "f"}]},
            {"role": "tool", "tool_call_id": "c", "content": "tool output is not the answer"},
            {"role": "assistant", "content": "   "},
            {"role": "assistant", "content": "Second part."},
        ]
    )
    assert assistant_text(messages) == "First part.\n\nSecond part."
    assert assistant_text([]) == ""


def test_last_user_text_is_the_latest_user_message() -> None:
    messages = coerce_messages(
        [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "reply"},
            {"role": "user", "content": "second"},
            {"role": "assistant", "content": "reply 2"},
        ]
    )
    assert last_user_text(messages) == "second"
    assert last_user_text(coerce_messages("only assistant")) == ""


def test_to_openai_round_trips_a_whole_conversation() -> None:
    messages = coerce_messages(conversation())

    wire = [message.to_openai() for message in messages]

    assert wire[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_weather",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            {
                "id": "call_time",
                "type": "function",
                "function": {"name": "get_time", "arguments": '{"tz": "CET"}'},
            },
        ],
    }
    # Tool messages go out without a name (the wire format has none) and get it back.
    assert wire[3] == {"role": "tool", "content": "14:05", "tool_call_id": "call_time"}
    assert coerce_messages(wire) == messages


def test_to_openai_keeps_the_name_of_non_tool_messages() -> None:
    message = Message(role="user", content="hi", name="alice")
    assert message.to_openai() == {"role": "user", "content": "hi", "name": "alice"}
    assert coerce_messages(message.to_openai()) == [message]


def test_scorer_run_accepts_strings() -> None:
    run = ScorerRun(input="What is 2+2?", output="4")
    assert run.input == [Message(role="user", content="What is 2+2?")]
    assert run.output == [Message(role="assistant", content="4")]
    assert run.input_text == "What is 2+2?"
    assert run.output_text == "4"


def test_scorer_run_accepts_message_lists_and_single_messages() -> None:
    run = ScorerRun(input=conversation()[:2], output=conversation()[2:])
    assert run.input_text == "Weather and time in Paris?"
    assert run.output_text == "It is 18°C and 14:05 in Paris."
    assert run.output[1].name == "get_time"

    single = ScorerRun(
        input=Message(role="user", content="q"), output=Message(role="assistant", content="a")
    )
    assert (single.input_text, single.output_text) == ("q", "a")


def test_scorer_run_output_text_joins_multi_message_answers() -> None:
    run = ScorerRun(
        input=[{"role": "system", "content": "sys"}, {"role": "user", "content": "q"}],
        output=[
            Message(role="assistant", content="Part one."),
            {"role": "assistant", "content": [{"type": "text", "text": "Part two."}]},
        ],
    )
    assert run.input_text == "q"
    assert run.output_text == "Part one.\n\nPart two."


def test_scorer_run_with_no_user_message_has_empty_input_text() -> None:
    run = ScorerRun(input=[{"role": "system", "content": "sys"}], output=[])
    assert run.input_text == ""
    assert run.output_text == ""
    assert run.run_id != ScorerRun().run_id
