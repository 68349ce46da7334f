"""An application's tracing with agentscore's scoring span processor added, as the span
processor's tests build it, and the GenAI message parts their spans carry."""

from __future__ import annotations

import json
from typing import Any, Literal

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentscore import Evals, Runner, ScoreResult, Telemetry
from agentscore.judges import LocalJudge
from agentscore.scorers import create_faithfulness_scorer
from agentscore.spans import ScoringSpanProcessor


class Pipeline:
    """A TracerProvider as an application sets one up, with the scoring processor added."""

    def __init__(
        self,
        judge: Any = None,
        *,
        telemetry: Telemetry | Literal["own"] | None = "own",
        runner: Runner | None = None,
        **processor_options: Any,
    ) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.scores: list[ScoreResult] = []
        self.runner = runner or Runner()
        self.evals = Evals(
            scorers=[create_faithfulness_scorer(judge or LocalJudge())],
            runner=self.runner,
            on_score=self.scores.append,
            # None: evaluations go through the provider the processor is attached to.
            telemetry=Telemetry(tracer_provider=self.provider) if telemetry == "own" else telemetry,
        )
        self.processor = ScoringSpanProcessor(self.evals, **processor_options)
        self.provider.add_span_processor(self.processor)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def settle(self) -> list[ScoreResult]:
        assert self.processor.force_flush(10_000)
        assert self.runner.flush(10)
        return self.scores

    def span(self, name: str) -> ReadableSpan:
        """The most recent ended span of that name."""
        return [s for s in self.exporter.get_finished_spans() if s.name == name][-1]

    def evaluation_spans(self) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith("evaluation")]


def parts(text: str) -> str:
    """`text` as an assistant's output messages (gen_ai.output.messages)."""
    return json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])
