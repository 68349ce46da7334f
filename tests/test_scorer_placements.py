"""The eight new scorers in every placement: Agent, Evals.submit, the span processor,
`agentscore serve` and `agentscore eval` (and run_evals, its engine). Each placement scores the
same generation ("Where is order 1042?" -> a lookup_order call -> "Order 1042 shipped with
UPS.") and must produce the scores `tests.support.new_scorers.check` lists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentscore import Agent, Evals, Runner, ScoreResult, Telemetry
from agentscore.ci.batch import run_evals_sync
from agentscore.cli import main
from agentscore.spans import ScoringSpanProcessor
from agentscore.testing import ScriptedEndpoint, chat_completion
from tests.support.http_server import http_server
from tests.support.new_scorers import check, lookup_order, new_scorers
from tests.support.serve import attribute, evaluation_spans, send_generations, serving, wait_for

QUESTION = "Where is order 1042?"
ANSWER = "Order 1042 shipped with UPS."
ORDER = {"order": "1042", "status": "shipped", "carrier": "UPS"}
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "lookup_order", "arguments": '{"order_id": "1042"}'},
        }
    ],
}
OUTPUT: list[dict[str, Any]] = [
    CALL,
    {"role": "tool", "tool_call_id": "c1", "content": json.dumps(ORDER)},
    {"role": "assistant", "content": ANSWER},
]


def test_agent() -> None:
    model = ScriptedEndpoint(
        [
            chat_completion(tool_calls=[("lookup_order", {"order_id": "1042"})]),
            chat_completion(ANSWER),
        ]
    )
    runner = Runner()
    agent = Agent(
        name="support",
        model="agent-model",
        tools=[lookup_order],
        client=model.client(),
        evals=Evals(scorers=new_scorers(), runner=runner),
    )

    agent.generate_sync(QUESTION)
    assert agent.flush(timeout=30)

    check(agent.scores)
    runner.shutdown()


def test_evals_submit() -> None:
    runner = Runner()
    results: list[ScoreResult] = []
    evals = Evals(scorers=new_scorers(), runner=runner, on_score=results.append)

    assert evals.submit(QUESTION, OUTPUT)
    assert runner.flush(timeout=30)

    check(results)
    runner.shutdown()


def test_scoring_span_processor() -> None:
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    runner = Runner()
    results: list[ScoreResult] = []
    evals = Evals(
        scorers=new_scorers(),
        runner=runner,
        on_score=results.append,
        telemetry=Telemetry(tracer_provider=provider),
    )
    processor = ScoringSpanProcessor(evals)
    provider.add_span_processor(processor)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    user = {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    call = {
        "role": "assistant",
        "parts": [
            {
                "type": "tool_call",
                "id": "c1",
                "name": "lookup_order",
                "arguments": '{"order_id": "1042"}',
            }
        ],
    }
    result = {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "c1", "response": ORDER}],
    }
    answer = {"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}
    with provider.get_tracer("app").start_as_current_span(
        "invoke_agent support",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support",
            "gen_ai.input.messages": json.dumps([user]),
            "gen_ai.output.messages": json.dumps([call, result, answer]),
        },
    ):
        pass

    assert processor.force_flush(10_000)
    assert runner.flush(timeout=30)

    check(results)
    evaluations = [s for s in exporter.get_finished_spans() if s.name.startswith("evaluation ")]
    assert len(evaluations) == 8
    runner.shutdown()


def test_run_evals_the_engine_of_agentscore_eval() -> None:
    report = run_evals_sync([{"input": QUESTION, "output": OUTPUT}], new_scorers())

    [item] = report.items
    check(list(item.scorer_results.values()))


def test_agentscore_eval_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "runs.jsonl"
    record = {"id": "r1", "input": QUESTION, "output": OUTPUT, "context": [json.dumps(ORDER)]}
    data.write_text(json.dumps(record) + "\n")
    out = tmp_path / "out.jsonl"

    status = main(
        ["eval", str(data), "--scorer", "answer_relevancy,context_relevance", "--out", str(out)]
    )

    assert status == 0
    [row] = map(json.loads, out.read_text().splitlines())
    assert row["scores"]["answer_relevancy"]["score"] == 1.0
    assert row["scores"]["context_relevance"]["score"] == 1.0
    # A scorer the local judge cannot answer is refused up front, with the way out.
    assert main(["eval", str(data), "--scorer", "completeness"]) == 2
    assert "completeness needs an LLM judge" in capsys.readouterr().err


def test_agentscore_serve(tmp_path: Path) -> None:
    scorers = ("--scorers", "tests.support.new_scorers:evals")
    with http_server() as receiver, serving(tmp_path, receiver.url, *scorers) as serve:
        send_generations(serve.url, [ANSWER])
        wait_for(lambda: len(evaluation_spans(receiver)) == 8, what="eight evaluations")
        serve.terminate()
    scores = {
        attribute(span, "gen_ai.evaluation.name"): attribute(span, "gen_ai.evaluation.score.value")
        for span in evaluation_spans(receiver)
    }
    assert scores == {
        "answer_relevancy": 1.0,
        "context_relevance": 1.0,
        # The traced call sends "{}": lookup_order's order_id is required.
        "tool_call_accuracy": 0.0,
        "completeness": 1.0,
        "rubric": 0.9,
        "regex": 1.0,
        "json_schema": 0.0,
        "contains": 1.0,
    }
    requests = {
        attribute(span, "gen_ai.evaluation.name"): attribute(span, "agentscore.judge.calls")
        for span in evaluation_spans(receiver)
    }
    assert requests["completeness"] + requests["rubric"] == 1  # one shared judge request
