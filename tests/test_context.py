"""Tool results as scorer context: pairing calls with results, parsing, and formatting."""

from __future__ import annotations

import json
from typing import Any

import pytest

import agentscore.context as context_module
from agentscore.context import (
    ToolResult,
    extract_tool_results,
    format_tool_result,
    found_context,
)
from agentscore.messages import Message, ToolCall
from agentscore.run import ScorerRun


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def order_conversation() -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("call_1", "lookup_order", '{"order_id": 42}')],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "shipped"}'},
        {"role": "assistant", "content": "Order 42 has shipped."},
    ]


def test_from_openai_dict_messages() -> None:
    assert extract_tool_results(order_conversation()) == [
        ToolResult(
            tool_name="lookup_order",
            tool_call_id="call_1",
            args={"order_id": 42},
            result={"status": "shipped"},
        )
    ]


def test_from_message_models() -> None:
    messages = [
        Message(
            role="assistant",
            tool_calls=(ToolCall(id="c9", name="search", arguments='{"q": "mars moons"}'),),
        ),
        Message(role="tool", tool_call_id="c9", content='["Phobos", "Deimos"]'),
        Message(role="assistant", content="Mars has two moons."),
    ]
    assert extract_tool_results(messages) == [
        ToolResult("search", "c9", {"q": "mars moons"}, ["Phobos", "Deimos"])
    ]


def test_from_a_scorer_run_output() -> None:
    run = ScorerRun(input="Where is order 42?", output=order_conversation())
    [result] = extract_tool_results(run.output)
    assert result.tool_name == "lookup_order"
    assert result.args == {"order_id": 42}
    assert result.result == {"status": "shipped"}


def test_a_result_that_is_not_json_is_kept_as_text() -> None:
    messages = [
        {"role": "assistant", "tool_calls": [call("c1", "weather", '{"city": "Oslo"}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny, 18 degrees"},
    ]
    [result] = extract_tool_results(messages)
    assert result.result == "Sunny, 18 degrees"
    assert result.args == {"city": "Oslo"}


def test_arguments_that_are_not_json_are_kept_as_text() -> None:
    messages = [
        {"role": "assistant", "tool_calls": [call("c1", "shell", "ls -la")]},
        {"role": "tool", "tool_call_id": "c1", "content": "total 0"},
    ]
    [result] = extract_tool_results(messages)
    assert result.args == "ls -la"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("42", 42),
        ("3.5", 3.5),
        ("true", True),
        ('"quoted"', "quoted"),
        ('{"a": {"b": [1, {"c": null}]}}', {"a": {"b": [1, {"c": None}]}}),
        ('[{"id": 1}, {"id": 2}]', [{"id": 1}, {"id": 2}]),
    ],
)
def test_json_results_of_every_type_are_parsed(content: str, expected: object) -> None:
    messages = [
        {"role": "assistant", "tool_calls": [call("c1", "tool_a", "{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": content},
    ]
    [result] = extract_tool_results(messages)
    assert result.result == expected
    assert result.args == {}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (42, 42),
        (2.5, 2.5),
        ({"order": {"id": 42, "items": [1, 2]}}, {"order": {"id": 42, "items": [1, 2]}}),
    ],
)
def test_non_string_tool_results_survive(content: object, expected: object) -> None:
    messages = [
        {"role": "assistant", "tool_calls": [call("c1", "inventory", "{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": content},
    ]
    [result] = extract_tool_results(messages)
    assert result.result == expected


@pytest.mark.parametrize(
    "content",
    [[1, 2, 3], [{"sku": "A1", "qty": 3}, {"sku": "B2", "qty": 0}]],
    ids=["numbers", "records"],
)
def test_list_tool_results_survive(content: list[Any]) -> None:
    messages = [
        {"role": "assistant", "tool_calls": [call("c1", "inventory", "{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": content},
    ]
    [result] = extract_tool_results(messages)
    assert result.result == content


def test_text_content_parts_in_a_tool_message_are_joined() -> None:
    messages = [
        {"role": "assistant", "tool_calls": [call("c1", "docs", "{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "page 1"}]},
    ]
    [result] = extract_tool_results(messages)
    assert result.result == "page 1"


def test_calls_without_results_are_left_out() -> None:
    messages = [
        {
            "role": "assistant",
            "tool_calls": [call("c1", "answered", "{}"), call("c2", "never_answered", "{}")],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    results = extract_tool_results(messages)
    assert [r.tool_name for r in results] == ["answered"]
    assert extract_tool_results([{"role": "assistant", "content": "no tools"}]) == []
    assert extract_tool_results("plain answer") == []


def test_parallel_tool_calls_pair_by_id_whatever_the_result_order() -> None:
    messages = [
        {
            "role": "assistant",
            "tool_calls": [
                call("call_a", "get_weather", '{"city": "Paris"}'),
                call("call_b", "get_weather", '{"city": "Rome"}'),
            ],
        },
        {"role": "tool", "tool_call_id": "call_b", "content": '{"temp_c": 25}'},
        {"role": "tool", "tool_call_id": "call_a", "content": '{"temp_c": 18}'},
    ]
    results = extract_tool_results(messages)
    assert [(r.tool_call_id, r.args["city"], r.result["temp_c"]) for r in results] == [
        ("call_b", "Rome", 25),
        ("call_a", "Paris", 18),
    ]


def test_a_reused_call_id_pairs_with_the_preceding_call() -> None:
    messages = [
        {"role": "assistant", "tool_calls": [call("call_0", "find_user", '{"name": "ada"}')]},
        {"role": "tool", "tool_call_id": "call_0", "content": '{"user_id": 7}'},
        {"role": "assistant", "tool_calls": [call("call_0", "get_orders", '{"user_id": 7}')]},
        {"role": "tool", "tool_call_id": "call_0", "content": "[]"},
    ]
    results = extract_tool_results(messages)
    assert [(r.tool_name, r.args) for r in results] == [
        ("find_user", {"name": "ada"}),
        ("get_orders", {"user_id": 7}),
    ]


def test_a_result_for_an_unknown_call_keeps_what_it_has() -> None:
    [named, anonymous] = extract_tool_results(
        [
            {"role": "tool", "tool_call_id": "x", "name": "clock", "content": "12:00"},
            {"role": "tool", "tool_call_id": "y", "content": "?"},
        ]
    )
    assert named == ToolResult("clock", "x", None, "12:00")
    assert anonymous.tool_name == "tool"


def test_format_tool_result_is_json_naming_the_tool() -> None:
    text = format_tool_result(ToolResult("lookup_order", "c1", {"id": 1}, {"status": "shipped"}))
    assert text == '{"tool": "lookup_order", "result": {"status": "shipped"}}'
    # Non-ASCII text stays readable for the judge; the args are not part of the chunk.
    text = format_tool_result(ToolResult("weather", "c2", {"city": "Zürich"}, "18 °C in Zürich"))
    assert text == '{"tool": "weather", "result": "18 °C in Zürich"}'
    assert json.loads(text) == {"tool": "weather", "result": "18 °C in Zürich"}


# -- read once per run ----------------------------------------------------------------------


def test_a_runs_context_is_read_once_for_every_scorer_and_copy_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[int] = []
    real = context_module.extract_tool_results

    def counted(output: object) -> list[ToolResult]:
        reads.append(1)
        return real(output)

    monkeypatch.setattr(context_module, "extract_tool_results", counted)
    rows = json.dumps([{"order": n, "status": "shipped"} for n in range(2_000)])
    conversation = order_conversation()
    conversation[1]["content"] = rows
    run = ScorerRun(
        input="Where is order 42?", output=conversation, documents=["Refunds: 30 days."]
    )
    # A job's copy in `agentscore serve` is another object with the same content.
    copy = ScorerRun.model_validate_json(run.model_dump_json())

    first = found_context(run)
    assert found_context(run) == found_context(copy) == first
    assert len(reads) == 1
    assert first[1] == "Refunds: 30 days."
    assert json.loads(first[0]) == {"tool": "lookup_order", "result": json.loads(rows)}

    first.append("a caller's own chunk")  # callers get their own list
    assert found_context(run)[-1] == "Refunds: 30 days."

    other = ScorerRun(input="q", output=order_conversation(), documents=["Other."])
    assert found_context(other)[-1] == "Other."  # other documents: another run
    assert len(reads) == 2


def test_the_runs_kept_are_bounded_in_entries_and_characters() -> None:
    for n in range(40):
        found_context(ScorerRun(input="q", output=order_conversation(), documents=[f"doc {n}"]))
    kept = context_module._found
    assert len(kept) <= kept.entries
    big = "x" * (kept.size // 3)
    for n in range(4):
        found_context(ScorerRun(input="q", output=order_conversation(), documents=[big + str(n)]))
    assert kept.total_size <= kept.size
    assert kept.total_size == sum(len(chunk) for chunks in kept.values() for chunk in chunks)
    huge = "y" * (kept.size + 1)
    run = ScorerRun(input="q", output=order_conversation(), documents=[huge])
    assert found_context(run)[-1] == huge  # read, not kept: it would evict everything else
    assert all(huge not in chunks for chunks in kept.values())
