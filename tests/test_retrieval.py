"""Retrieved documents are context: OpenInference RETRIEVER spans (the real LangChain
instrumentation, offline) and GenAI `retrieval` spans, through the span processor, `agentscore
eval --traces` and `agentscore serve`; and `Evals.submit(documents=...)`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentscore import Evals, Runner, ScoreResult
from agentscore.cli import main
from agentscore.errors import ConfigurationError
from agentscore.result import ScoreStatus
from agentscore.scorers import create_faithfulness_scorer, create_hallucination_scorer
from agentscore.spans import SpanRecord, TraceAssembler
from agentscore.telemetry.setup import JsonlExporter
from tests.support.http_server import http_server
from tests.support.otel import span_context
from tests.support.pipeline import Pipeline, parts
from tests.support.serve import attribute, evaluation_spans, serving, wait_for

DOCUMENTS = [
    "Order 1042 shipped with UPS on 2026-11-18.",
    "Returns are accepted within 30 days of delivery.",
]
QUESTION = "Where is order 1042?"
RESTATED = "Order 1042 shipped with UPS on 2026-11-18."
CONTRADICTED = "Order 1042 shipped with FedEx on 2026-11-18."
CASES = [(RESTATED, 1.0, "yes"), (CONTRADICTED, 0.0, "no")]


def verdicts(result: ScoreResult) -> list[str]:
    return [item["verdict"] for item in result.analyze_step_result["verdicts"]]


# -- LangChain under the real OpenInference instrumentation ------------------------------------


@pytest.fixture(scope="module")
def langchain_pipeline() -> Iterator[Pipeline]:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    pipeline = Pipeline()
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=pipeline.provider)
    yield pipeline
    instrumentor.uninstrument()


def rag_chain(answer: str) -> Any:
    """retriever -> prompt -> chat model, offline: a retriever over local documents and
    langchain-core's fake chat model."""
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnablePassthrough

    class OrderNotes(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [Document(page_content=text) for text in DOCUMENTS]

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from these notes:\n{notes}"), ("human", "{question}")]
    )
    notes = OrderNotes() | (lambda docs: "\n".join(doc.page_content for doc in docs))
    return (
        {"notes": notes, "question": RunnablePassthrough()}
        | prompt
        | FakeListChatModel(responses=[answer])
        | StrOutputParser()
    )


@pytest.mark.parametrize(("answer", "expected", "verdict"), CASES)
def test_a_langchain_rag_answer_is_judged_against_the_retrieved_documents(
    langchain_pipeline: Pipeline, answer: str, expected: float, verdict: str
) -> None:
    langchain_pipeline.exporter.clear()
    langchain_pipeline.scores.clear()
    assert rag_chain(answer).invoke(QUESTION) == answer
    [retriever] = [
        s
        for s in langchain_pipeline.exporter.get_finished_spans()
        if (s.attributes or {}).get("openinference.span.kind") == "RETRIEVER"
    ]
    assert (retriever.attributes or {})["retrieval.documents.1.document.content"] == DOCUMENTS[1]
    [score] = langchain_pipeline.settle()
    assert score.status is ScoreStatus.SCORED
    assert score.score == expected
    assert verdicts(score) == [verdict]
    assert score.context == DOCUMENTS
    chat = langchain_pipeline.span("FakeListChatModel")
    assert score.span_id == f"{span_context(chat).span_id:016x}"
    [evaluation] = langchain_pipeline.evaluation_spans()
    assert (evaluation.attributes or {})["gen_ai.evaluation.score.value"] == expected


# -- GenAI-convention retrieval spans ----------------------------------------------------------


def genai_documents(*texts: str) -> str:
    return json.dumps(
        [{"id": f"doc-{i}", "score": 0.9 - i / 10, "content": t} for i, t in enumerate(texts)]
    )


def genai_rag(provider: TracerProvider, answer: str, documents: str | None = None) -> None:
    """A hand-written RAG app traced with the GenAI conventions: a retrieval span, then the
    model's answer, siblings under the request's span."""
    tracer = provider.get_tracer("app")
    user = {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    with tracer.start_as_current_span("POST /ask"):
        with tracer.start_as_current_span(
            "retrieval orders-kb",
            attributes={
                "gen_ai.operation.name": "retrieval",
                "gen_ai.data_source.id": "orders-kb",
                "gen_ai.retrieval.query.text": QUESTION,
                "gen_ai.retrieval.documents": documents or genai_documents(*DOCUMENTS),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "chat gpt-x",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps([user]),
                "gen_ai.output.messages": parts(answer),
            },
        ):
            pass


@pytest.mark.parametrize(("answer", "expected", "verdict"), CASES)
def test_a_genai_retrieval_span_gives_the_answer_its_context(
    answer: str, expected: float, verdict: str
) -> None:
    pipeline = Pipeline()
    genai_rag(pipeline.provider, answer)
    [score] = pipeline.settle()
    assert (score.score, verdicts(score)) == (expected, [verdict])
    assert score.context == DOCUMENTS


def test_an_agent_span_draws_on_the_retrievals_beneath_it() -> None:
    pipeline = Pipeline()
    tracer = pipeline.provider.get_tracer("app")
    user = {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    with (
        tracer.start_as_current_span(
            "invoke_agent support",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.input.messages": json.dumps([user]),
                "gen_ai.output.messages": parts(CONTRADICTED),
            },
        ),
        tracer.start_as_current_span(
            "retrieval",
            attributes={
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.documents": genai_documents(DOCUMENTS[0]),
            },
        ),
    ):
        pass
    [score] = pipeline.settle()
    assert (score.score, verdicts(score)) == (0.0, ["no"])


def test_documents_recorded_without_their_text_leave_the_run_without_context() -> None:
    pipeline = Pipeline()
    genai_rag(pipeline.provider, RESTATED, json.dumps([{"id": "doc-0", "score": 0.9}]))
    [score] = pipeline.settle()
    assert score.status is ScoreStatus.NO_CONTEXT
    assert score.score is None


def test_unreadable_retrieval_documents_fail_the_run_loudly() -> None:
    pipeline = Pipeline()
    genai_rag(pipeline.provider, RESTATED, "not json")
    [score] = pipeline.settle()
    assert score.status is ScoreStatus.FAILED
    assert score.error is not None and score.error.type == "UnreadableMessageError"
    assert "gen_ai.retrieval.documents" in score.error.message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (genai_documents("A.", "B."), ["A.", "B."]),  # a JSON string, as the Python SDK must
        (({"id": "a", "content": "A."}, {"id": "b", "score": 0.1}), ["A."]),  # OTLP kvlists
        (json.dumps(["A.", "", 7]), ["A."]),  # bare texts; blanks and non-text left out
        (json.dumps([{"id": "a", "score": 0.9}]), []),  # ids only: content not captured
    ],
)
def test_genai_retrieval_documents_in_each_recorded_form(value: Any, expected: list[str]) -> None:
    from agentscore.spans import retrieved_documents

    attributes = {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": value}
    assert retrieved_documents(SpanRecord(1, 2, None, "retrieval", attributes)) == expected


@pytest.mark.parametrize("value", ["not json", json.dumps({"content": "A."}), "7"])
def test_genai_retrieval_documents_of_another_shape_are_unreadable(value: str) -> None:
    from agentscore.errors import UnreadableMessageError
    from agentscore.spans import retrieved_documents

    attributes = {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": value}
    with pytest.raises(UnreadableMessageError, match="not a JSON list of documents"):
        retrieved_documents(SpanRecord(1, 2, None, "retrieval", attributes))


def _record(span_id: int, parent: int | None, end: int, **attributes: Any) -> SpanRecord:
    return SpanRecord(1, span_id, parent, f"span {span_id}", attributes, end_time=end)


def test_only_retrievals_that_ended_before_the_answer_are_its_context() -> None:
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps([{"role": "user", "content": QUESTION}]),
        "gen_ai.output.messages": parts(RESTATED),
    }
    retrieval = {"openinference.span.kind": "RETRIEVER"}
    assembler = TraceAssembler()
    runs = []
    for record in [
        _record(2, 1, 10, **retrieval, **{"retrieval.documents.0.document.content": "before"}),
        _record(3, 1, 20, **chat),
        _record(4, 1, 30, **retrieval, **{"retrieval.documents.0.document.content": "after"}),
        _record(1, None, 40),
    ]:
        runs += assembler.add(record, 0.0)
    [run] = runs
    assert run.documents == ["before"]


# -- Evals.submit(documents=...) ---------------------------------------------------------------


@pytest.mark.parametrize(("answer", "expected", "verdict"), CASES)
def test_submit_takes_the_retrieved_documents(answer: str, expected: float, verdict: str) -> None:
    runner = Runner()
    results: list[ScoreResult] = []
    evals = Evals(
        scorers=[create_faithfulness_scorer("local"), create_hallucination_scorer("local")],
        runner=runner,
        on_score=results.append,
    )
    assert evals.submit(QUESTION, answer, documents=DOCUMENTS)
    assert runner.flush(10)
    scores = {r.scorer_id: r for r in results}
    assert scores["faithfulness"].score == expected
    assert scores["hallucination"].score == 1.0 - expected
    assert verdicts(scores["faithfulness"]) == [verdict]


@pytest.mark.parametrize("documents", ["one string", [1, 2], 42])
def test_submit_names_documents_of_the_wrong_type(documents: Any) -> None:
    evals = Evals(scorers=[create_faithfulness_scorer("local")], runner=Runner())
    with pytest.raises(ConfigurationError, match="documents must be a list of strings"):
        evals.submit(QUESTION, RESTATED, documents=documents)


# -- agentscore eval --traces and agentscore serve ---------------------------------------------


def test_eval_traces_reads_retrieval_spans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for answer, _, _ in CASES:
        genai_rag(provider, answer)
    traces = tmp_path / "traces.jsonl"
    jsonl = JsonlExporter(traces)
    jsonl.export(list(exporter.get_finished_spans()))
    jsonl.shutdown()
    out = tmp_path / "scores.jsonl"
    argv = ["eval", "--traces", str(traces), "--scorer", "faithfulness", "--out", str(out)]
    assert main(argv) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    by_answer = {
        (span.attributes or {})["gen_ai.output.messages"]: f"{span_context(span).trace_id:032x}"
        for span in exporter.get_finished_spans()
        if span.name == "chat gpt-x"
    }
    scores = {row["id"][:32]: row["scores"]["faithfulness"]["score"] for row in rows}
    assert scores[by_answer[parts(RESTATED)]] == 1.0
    assert scores[by_answer[parts(CONTRADICTED)]] == 0.0
    assert "no context" in capsys.readouterr().out


def test_serve_reads_retrieval_spans(tmp_path: Path) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    with http_server() as receiver, serving(tmp_path, receiver.url) as serve:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{serve.url}/v1/traces")))
        for answer, _, _ in CASES:
            genai_rag(provider, answer)
        provider.shutdown()
        wait_for(lambda: len(evaluation_spans(receiver)) == 2, what="two evaluations")
    values = sorted(
        attribute(span, "gen_ai.evaluation.score.value") for span in evaluation_spans(receiver)
    )
    assert values == [0.0, 1.0]


# 600,000 characters of documents in all: past the 450,000 characters span reading keeps of
# an attribute, within the 8,000,000 of context the local judge reads.
LARGE_DOCUMENTS = [f"Document {i}: " + f"{RESTATED} " * 4_650 for i in range(3)]
# 8,100,000 characters: past what the local judge reads.
HUGE_DOCUMENTS = [f"Document {i}: " + "x" * 2_700_000 for i in range(3)]


def test_retrieval_documents_past_an_attributes_length_are_read_whole() -> None:
    pipeline = Pipeline()
    genai_rag(pipeline.provider, RESTATED, genai_documents(*LARGE_DOCUMENTS))
    [score] = pipeline.settle()
    assert score.status is ScoreStatus.SCORED
    assert score.context == LARGE_DOCUMENTS


def test_retrieval_documents_past_what_a_judge_reads_fail_as_too_large() -> None:
    pipeline = Pipeline()
    genai_rag(pipeline.provider, RESTATED, genai_documents(*HUGE_DOCUMENTS))
    [score] = pipeline.settle()
    assert score.status is ScoreStatus.FAILED
    assert score.error is not None and score.error.type == "InputTooLargeError"


def test_serve_fails_retrieval_documents_past_what_a_judge_reads_as_too_large(
    tmp_path: Path,
) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    with http_server() as receiver, serving(tmp_path, receiver.url) as serve:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{serve.url}/v1/traces")))
        genai_rag(provider, RESTATED, genai_documents(*LARGE_DOCUMENTS))
        genai_rag(provider, RESTATED, genai_documents(*HUGE_DOCUMENTS))
        provider.shutdown()
        wait_for(lambda: len(evaluation_spans(receiver)) == 2, what="two evaluations")
        # The counters move once the worker is done with the job, after its export.
        wait_for(lambda: serve.health()["failed"] == 1, what="the failure counted")
        health = serve.health()
    outcomes = sorted(
        (attribute(span, "error.type") or "", attribute(span, "gen_ai.evaluation.score.value"))
        for span in evaluation_spans(receiver)
    )
    assert outcomes == [("", 1.0), ("InputTooLargeError", None)]
    assert (health["scored"], health["failed"]) == (1, 1)
