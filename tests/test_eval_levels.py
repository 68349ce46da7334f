"""`agentscore eval` with scorers of every level in one run: conversation records (turns),
and stored traces read as generations, traces and conversations. Each target has its own
results line, JUnit cases and markdown rows; a resume skips the targets done; a bad
conversation record is named by its line."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentscore.cli import main
from agentscore.telemetry.setup import JsonlExporter
from tests.support.chat import judge_reply
from tests.support.eval_cli import GROUNDED, cases_by_outcome, write_jsonl
from tests.support.http_server import Reply, Request, http_server

SCORERS = "tests.support.level_scorers"
ALL = f"{SCORERS}:ALL"


RESULT = '{"order_id": 42, "status": "shipped"}'


def call(call_id: str) -> dict[str, Any]:
    function = {"name": "lookup_order", "arguments": '{"order_id": 42}'}
    return {"id": call_id, "type": "function", "function": function}


def tool_turn(question: str, calls: list[str], answer: str) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    for call_id in calls:
        output.append({"role": "assistant", "content": None, "tool_calls": [call(call_id)]})
        output.append({"role": "tool", "tool_call_id": call_id, "content": RESULT})
    return {"input": question, "output": [*output, {"role": "assistant", "content": answer}]}


SUPPORT = {
    "id": "support",
    "turns": [
        tool_turn("Where is order 42?", ["c1"], "Order 42 has shipped."),
        # Two identical calls in this turn; the first turn's same call is not this turn's.
        tool_turn("And order 42 now?", ["c2", "c3"], "Order 42 is still shipped."),
        {"input": [{"role": "user", "content": "Thanks"}], "output": "You're welcome."},
    ],
}
SILENT = {
    "id": "silent",
    "turns": [{"input": "Hello?", "output": "Hi."}, {"input": "Are you there?", "output": ""}],
}


def rows_of(out: Path) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}


def case_names(outcomes: dict[str, list[Any]]) -> list[str]:
    return sorted(name for cases in outcomes.values() for name, _ in cases)


def test_a_conversations_file_is_scored_at_every_level_reported_and_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "conversations.jsonl", [SUPPORT, GROUNDED, SILENT])
    out, junit, report = tmp_path / "results.jsonl", tmp_path / "r.xml", tmp_path / "r.md"
    argv = ["eval", str(data), "--scorer", f"faithfulness,{ALL}", "--out", str(out)]
    assert main([*argv, "--junit", str(junit), "--markdown", str(report)]) == 0

    rows = rows_of(out)
    turns = [f"support/turn-{n}" for n in (1, 2, 3)] + ["silent/turn-1", "silent/turn-2"]
    generations = sorted(["grounded", *turns])
    assert sorted(rows) == sorted([*generations, "support", "silent"])
    assert {rows[i]["level"] for i in generations} == {"generation"}
    assert rows["support"]["level"] == rows["silent"]["level"] == "conversation"
    # A conversation is judged by the conversation scorers only; a turn by the others.
    assert set(rows["support"]["scores"]) == {"answered_every_turn"}
    assert all(
        set(rows[i]["scores"]) == {"faithfulness", "no_repeats", "sees_history"}
        for i in generations
    )
    answered = rows["silent"]["scores"]["answered_every_turn"]
    assert (answered["score"], answered["passed"]) == (0.5, False)
    assert answered["reason"] == "turn 2 has no answer"
    assert rows["support"]["scores"]["answered_every_turn"]["reason"] == (
        "all 3 turns answered: Where is order 42? | And order 42 now? | Thanks"
    )
    # Each turn's own trajectory: turn 2 repeats its own call, not turn 1's.
    repeats = {i: rows[i]["scores"]["no_repeats"] for i in generations}
    assert [i for i, entry in repeats.items() if not entry["passed"]] == ["support/turn-2"]
    assert repeats["support/turn-2"]["reason"] == (
        "lookup_order called 2 times with the same arguments"
    )
    assert repeats["support/turn-1"]["reason"] == "1 tool call(s), none repeated"
    # A turn's generation sees the turns before it as its input's history.
    history = rows["support/turn-2"]["scores"]["sees_history"]["reason"]
    assert history == "2 user message(s) in the input: Where is order 42? | And order 42 now?"
    assert rows["support/turn-1"]["scores"]["faithfulness"]["score"] == 1.0
    assert rows["grounded"]["scores"]["faithfulness"]["score"] == 1.0

    suites = cases_by_outcome(junit)
    assert set(suites) == {"faithfulness", "no_repeats", "answered_every_turn", "sees_history"}
    assert case_names(suites["answered_every_turn"]) == ["silent", "support"]
    assert [name for name, _ in suites["answered_every_turn"]["failure"]] == ["silent"]
    for scorer in ("faithfulness", "no_repeats", "sees_history"):
        assert case_names(suites[scorer]) == generations
    assert [name for name, _ in suites["no_repeats"]["failure"]] == ["support/turn-2"]

    text = report.read_text()
    assert "| answered_every_turn | 0.750 | 50.0% | 2 | 0 | 0 |" in text
    worst = text.split("### Worst records: answered_every_turn (1 failing)")[1]
    assert "| silent | 0.5 | turn 2 has no answer |" in worst
    assert "### Worst records: no_repeats (1 failing)" in text

    capsys.readouterr()
    assert main([*argv, "--fail-under", "1"]) == 1  # resumed: nothing scored again
    captured = capsys.readouterr()
    assert "resuming: 8 records already scored" in captured.out
    assert "answered_every_turn pass rate 50.0%" in captured.err
    assert "no_repeats pass rate 83.3%" in captured.err
    assert len(out.read_text().splitlines()) == 8

    assert main(["compare", str(out), str(out)]) == 0
    assert "answered_every_turn" in capsys.readouterr().out


def test_bad_conversation_records_are_named_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records: list[object] = [
        SILENT,
        {"id": "empty", "turns": []},
        {"id": "half", "turns": [{"input": "Hi"}]},
        {"id": "both", "turns": SILENT["turns"], "messages": [{"role": "user", "content": "?"}]},
        {"id": "neither", "question": "?"},
        {"id": "shape", "turns": [{"input": "Hi", "output": 42}]},
        {"id": "context", "turns": SILENT["turns"], "context": 7},
    ]
    data = write_jsonl(tmp_path / "conversations.jsonl", records)
    argv = ["eval", str(data), "--scorer", f"{SCORERS}:LEVELS"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    expected = {
        2: "'turns' must be a non-empty list",
        3: "turn 1 must be an object with 'input' and 'output'",
        4: "a record has either 'turns' (a conversation) or messages (a run), not both",
        5: "a record needs 'input' and 'output': a run ('input' and 'output', or 'messages') "
        "or a conversation ('turns')",
        6: "turn 1: ",
        7: "'context' must be a string or a list of strings",
    }
    for line, reason in expected.items():
        assert f"agentscore eval: {data}:{line}: skipped: {reason}" in err
    assert "6 of 7 records skipped (86%), more than --max-skip-rate 10%" in err

    # Let through, the readable record is scored alone: its turns' trajectories, and itself.
    out = tmp_path / "results.jsonl"
    assert main([*argv, "--max-skip-rate", "1", "--out", str(out)]) == 0
    assert sorted(rows_of(out)) == ["silent", "silent/turn-1", "silent/turn-2"]

    one_bad = write_jsonl(tmp_path / "one.jsonl", [SILENT, {"id": "x", "turns": "Hi"}])
    assert main(["eval", str(one_bad), "--scorer", f"{SCORERS}:LEVELS"]) == 2
    err = capsys.readouterr().err
    assert f"{one_bad}:2: skipped: 'turns' must be a non-empty list" in err


def test_conversation_scorers_on_a_file_without_conversations_say_what_they_need(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED])
    assert main(["eval", str(data), "--scorer", f"{SCORERS}:ANSWERED_EVERY_TURN"]) == 2
    err = capsys.readouterr().err
    assert f"no conversation record in {str(data)!r} for the conversation scorers" in err
    assert '{"id": ..., "turns": [{"input": ..., "output": ...}, ...]}' in err


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("tests.no_such_module:X", "importing 'tests.no_such_module' failed: ModuleNotFound"),
        (f"{SCORERS}:MISSING", f"'{SCORERS}' has no 'MISSING'"),
        (
            f"{SCORERS}:NOT_SCORERS",
            "neither an Evals, a scorer nor a list of scorers",
        ),
        (
            f"{SCORERS}:LEVELS,{ALL}",
            "two scorers share the id 'answered_every_turn'",
        ),
        ("toxicity", "unknown scorer(s) ['toxicity']; choose from"),
    ],
)
def test_scorers_that_cannot_be_had_exit_2_saying_why(
    spec: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "conversations.jsonl", [SILENT])
    assert main(["eval", str(data), "--scorers", spec]) == 2
    assert problem in capsys.readouterr().err


def test_a_judged_conversation_scorer_asks_once_per_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompts: list[str] = []

    def judge(request: Request) -> Reply:
        prompts.append(request.json()["messages"][-1]["content"])
        why = "the user said their name is Ada"
        return judge_reply({"contradictions": [{"turn": 2, "earlier": 1, "why": why}]})

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000")
    ada = {
        "id": "ada",
        "turns": [
            {"input": "My name is Ada.", "output": "Hello Ada."},
            {"input": "What is my name?", "output": "Your name is Bob."},
        ],
    }
    data = write_jsonl(tmp_path / "conversations.jsonl", [ada])
    out, report = tmp_path / "results.jsonl", tmp_path / "report.md"
    with http_server(judge) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        argv = [
            "eval",
            str(data),
            "--scorer",
            f"{SCORERS}:JUDGED",
            "--out",
            str(out),
        ]
        assert main([*argv, "--markdown", str(report)]) == 0
    [prompt] = prompts
    assert prompt.index("turn 1: user: My name is Ada.") < prompt.index("turn 2: user: What")
    entry = rows_of(out)["ada"]["scores"]["remembers"]
    assert (entry["score"], entry["passed"], entry["judge_calls"]) == (0.5, False, 1)
    assert entry["reason"] == "turn 2 contradicts turn 1: the user said their name is Ada"
    assert "**Judge** `local`: 1 requests" in report.read_text()


# --- stored traces --------------------------------------------------------------------------


def _parts(role: str, part: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": [part]}


def _text(role: str, text: str) -> dict[str, Any]:
    return _parts(role, {"type": "text", "content": text})


def _agent_run(
    provider: TracerProvider,
    history: list[dict[str, Any]],
    question: str,
    answer: str,
    *,
    calls: int = 0,
    conversation: str | None = None,
) -> None:
    tracer = provider.get_tracer("app")
    output = []
    for n in range(calls):
        call_id = f"c{n}"
        output.append(
            _parts(
                "assistant",
                {"type": "tool_call", "id": call_id, "name": "lookup_order", "arguments": "{}"},
            )
        )
        output.append(
            _parts("tool", {"type": "tool_call_response", "id": call_id, "response": "ok"})
        )
    output.append(_text("assistant", answer))
    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "support",
        "gen_ai.input.messages": json.dumps([*history, _text("user", question)]),
        "gen_ai.output.messages": json.dumps(output),
    }
    if conversation:
        agent["gen_ai.conversation.id"] = conversation
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup_order",
        "gen_ai.tool.call.arguments": "{}",
        "gen_ai.tool.call.result": "ok",
    }
    with (
        tracer.start_as_current_span("POST /chat"),
        tracer.start_as_current_span("invoke_agent support", attributes=agent),
    ):
        for _ in range(calls):
            with tracer.start_as_current_span("execute_tool lookup_order", attributes=tool):
                pass


def recorded_traces() -> list[list[ReadableSpan]]:
    """Spans by trace: two turns of conversation conv-7 (the second calls a tool twice with
    the same arguments), an agent run of no conversation, and a health check (no agent)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _agent_run(provider, [], "My name is Ada.", "Hello Ada.", conversation="conv-7")
    first = list(exporter.get_finished_spans())
    exporter.clear()
    earlier = [_text("user", "My name is Ada."), _text("assistant", "Hello Ada.")]
    _agent_run(provider, earlier, "Where is 42?", "Shipped.", calls=2, conversation="conv-7")
    second = list(exporter.get_finished_spans())
    exporter.clear()
    _agent_run(provider, [], "Hi", "Hello!")
    alone = list(exporter.get_finished_spans())
    exporter.clear()
    with provider.get_tracer("app").start_as_current_span("GET /health"):
        pass
    health = list(exporter.get_finished_spans())
    return [second, first, alone, health]  # stored out of order: turns go by start time


def _write(traces: list[list[ReadableSpan]], path: Path, shape: str) -> None:
    if shape == "agentscore-jsonl":
        exporter = JsonlExporter(path)
        for spans in traces:
            exporter.export(spans)
        exporter.shutdown()
        return
    with path.open("w") as out:
        for spans in traces:  # one request per trace, as a Collector writes
            request = json_format.MessageToDict(encode_spans(spans))
            for resource in request["resourceSpans"]:
                for scope in resource["scopeSpans"]:
                    for span in scope["spans"]:
                        for key in ("traceId", "spanId", "parentSpanId"):
                            if key in span:
                                span[key] = base64.b64decode(span[key]).hex()
            out.write(json.dumps(request) + "\n")


def _trace_id(spans: list[ReadableSpan]) -> str:
    context = spans[0].context
    assert context is not None
    return f"{context.trace_id:032x}"


@pytest.mark.parametrize("shape", ["otlp-json", "agentscore-jsonl"])
def test_stored_traces_are_scored_as_generations_traces_and_conversations(
    shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = recorded_traces()
    second, first, alone, _ = traces
    stored = tmp_path / "traces.jsonl"
    _write(traces, stored, shape)
    out, junit, report = tmp_path / "results.jsonl", tmp_path / "r.xml", tmp_path / "r.md"
    argv = ["eval", "--traces", str(stored), "--scorer", ALL, "--out", str(out)]
    assert main([*argv, "--junit", str(junit), "--markdown", str(report)]) == 0
    assert "skipped" not in capsys.readouterr().err  # the health check is no agent's trace

    rows = rows_of(out)
    trace_ids = sorted(_trace_id(spans) for spans in (first, second, alone))
    generations = sorted(i for i, row in rows.items() if row["level"] == "generation")
    assert [i[:32] for i in generations] == trace_ids and all(len(i) == 48 for i in generations)
    assert sorted(i for i, row in rows.items() if row["level"] == "trace") == trace_ids
    assert [i for i, row in rows.items() if row["level"] == "conversation"] == ["conv-7"]
    assert all(set(rows[i]["scores"]) == {"sees_history"} for i in generations)

    repeated = rows[_trace_id(second)]["scores"]["no_repeats"]
    assert (repeated["passed"], repeated["reason"]) == (
        False,
        "lookup_order called 2 times with the same arguments",
    )
    assert rows[_trace_id(first)]["scores"]["no_repeats"]["reason"] == (
        "0 tool call(s), none repeated"
    )
    conversation = rows["conv-7"]["scores"]["answered_every_turn"]
    # In the order the traces started, each turn what the user said since the agent spoke.
    assert conversation["reason"] == "all 2 turns answered: My name is Ada. | Where is 42?"
    assert conversation["passed"] is True

    suites = cases_by_outcome(junit)
    assert case_names(suites["no_repeats"]) == trace_ids
    assert [name for name, _ in suites["no_repeats"]["failure"]] == [_trace_id(second)]
    assert case_names(suites["answered_every_turn"]) == ["conv-7"]
    assert case_names(suites["sees_history"]) == generations
    text = report.read_text()
    assert "| no_repeats | 0.667 | 66.7% | 3 | 0 | 0 |" in text
    assert f"| {_trace_id(second)} | 0 | lookup_order called 2 times" in text

    capsys.readouterr()
    assert main(argv) == 0
    assert "resuming: 7 records already scored" in capsys.readouterr().out
    assert len(out.read_text().splitlines()) == 7


def test_conversation_scorers_on_traces_without_conversation_ids_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, alone, _ = recorded_traces()
    stored = tmp_path / "traces.jsonl"
    _write([alone], stored, "agentscore-jsonl")
    argv = ["eval", "--traces", str(stored), "--scorer", f"{SCORERS}:LEVELS"]
    assert main(argv) == 0  # the trace scorer had its trace
    err = capsys.readouterr().err
    assert "no conversation found in" in err and "gen_ai.conversation.id" in err
    argv[-1] = f"{SCORERS}:ANSWERED_EVERY_TURN"
    assert main(argv) == 2
    assert "no conversation found in" in capsys.readouterr().err


def test_a_conversation_id_of_any_text_is_written_safely_everywhere_and_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = "<b>x</b>|\u2028y\r\ud800"
    data = write_jsonl(tmp_path / "conversations.jsonl", [{**SILENT, "id": hostile}])
    out, junit, report = tmp_path / "r.jsonl", tmp_path / "r.xml", tmp_path / "r.md"
    argv = ["eval", str(data), "--scorer", f"{SCORERS}:ANSWERED_EVERY_TURN"]
    argv += ["--out", str(out), "--junit", str(junit), "--markdown", str(report)]
    assert main([*argv, "--fail-under", "1"]) == 1
    assert "Traceback" not in capsys.readouterr().err
    assert "\u2028" not in out.read_text(encoding="utf-8")  # written as a JSON escape
    assert list(rows_of(out)) == [hostile]
    suites = cases_by_outcome(junit)
    assert [name for name, _ in suites["answered_every_turn"]["failure"]] == [
        "<b>x</b>|\u2028y\r\ufffd"
    ]
    text = report.read_text(encoding="utf-8")
    assert "| &lt;b&gt;x&lt;/b&gt;\\|<br>y<br>\ufffd | 0.5 | turn 2 has no answer |" in text
    assert main([*argv, "--fail-under", "1"]) == 1
    assert "resuming: 1 records already scored" in capsys.readouterr().out


def test_a_results_line_with_an_unknown_level_is_refused_by_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "conversations.jsonl", [SILENT])
    out = tmp_path / "results.jsonl"
    argv = ["eval", str(data), "--scorer", f"{SCORERS}:ANSWERED_EVERY_TURN"]
    assert main([*argv, "--out", str(out)]) == 0
    row = json.loads(out.read_text())
    out.write_text(json.dumps({**row, "level": "galaxy"}) + "\n")
    capsys.readouterr()
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--out {out}:1: the target 'level' is a string \"galaxy\"; expected 'generation'" in err


def test_built_in_trace_and_conversation_scorers_are_chosen_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    looping = {
        "id": "looping",
        "turns": [
            tool_turn("Where is order 42?", ["c1"], "Order 42 has shipped."),
            tool_turn("Really?", ["c2", "c3", "c4"], "Yes, it has shipped."),
        ],
    }
    data = write_jsonl(tmp_path / "conversations.jsonl", [looping])
    out = tmp_path / "results.jsonl"
    assert main(["eval", str(data), "--scorer", "tool_efficiency", "--out", str(out)]) == 0
    rows = rows_of(out)
    assert sorted(rows) == ["looping/turn-1", "looping/turn-2"]  # no conversation scorer
    efficiency = {i: row["scores"]["tool_efficiency"] for i, row in rows.items()}
    assert efficiency["looping/turn-1"]["passed"] is True
    # The turn's own three calls, not the first turn's fourth.
    assert efficiency["looping/turn-2"]["passed"] is False
    assert (
        "lookup_order called 3 times with the same arguments"
        in (efficiency["looping/turn-2"]["reason"])
    )

    capsys.readouterr()
    assert main(["eval", str(data), "--scorer", "knowledge_retention"]) == 2
    assert "knowledge retention needs an LLM judge" in capsys.readouterr().err


def test_an_estimate_counts_a_modules_judged_scorer_and_sends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def judge(request: Request) -> Reply:
        return judge_reply({"contradictions": []})

    ada = {"id": "ada", "turns": [{"input": "My name is Ada.", "output": "Hello Ada."}]}
    data = write_jsonl(tmp_path / "conversations.jsonl", [ada])
    with http_server(judge) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000")
        argv = ["eval", str(data), "--scorer", f"{SCORERS}:JUDGED", "--estimate"]
        assert main([*argv, "--judge", "judge-model"]) == 0
        assert server.requests == []
    out = capsys.readouterr().out
    assert "estimate for 1 records, judge judge-model (nothing was sent)" in out
    assert out.split("\n")[3].split()[0] == "1"  # one judge request, for the conversation
