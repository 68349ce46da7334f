"""OTLP protobuf encoding of `agentscore serve`'s evaluations: the OpenTelemetry SDK's encoders
against agentscore.telemetry.otlp_encode, in µs per evaluation.

An evaluation is what serve exports per scored run: the evaluation span, the judge's chat span
under it, and the gen_ai.evaluation.result log record, made by agentscore.telemetry's own
helpers with content capture on (so the explanation, claims, answer and verdict are there).
Each is encoded alone (one request per evaluation) and in batches of 64 (a busy exporter's
request). CPU time, median of 5 rounds; both encoders run on the same objects, and their
bytes are checked equal first.

Usage: python benchmarks/otlp_encode.py [--evaluations N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence

from _evaluation import emit_evaluation, sample_result
from _machine import print_machine
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs as sdk_encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import (
    encode_spans as sdk_encode_spans,
)
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentscore.messages import Message
from agentscore.run import ScorerRun
from agentscore.telemetry import Telemetry
from agentscore.telemetry.otlp_encode import encode_logs, encode_spans

ROUNDS = 5
BATCH = 64
Evaluation = tuple[Sequence[ReadableSpan], Sequence[ReadableLogRecord]]


def evaluations(count: int) -> list[Evaluation]:
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    resource = Resource.create({"service.name": "agentscore-serve"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    telemetry = Telemetry(tracer_provider, logger_provider, capture_content=True)
    answer = "Order 1042 shipped with UPS on Monday; it should arrive by November 24."
    made: list[Evaluation] = []
    for index in range(count):
        run = ScorerRun(
            run_id=f"run-{index:06d}",
            input=[Message(role="user", content="Where is my order 1042?")],
            output=[Message(role="assistant", content=answer)],
            agent_name="support-agent",
            trace_id=f"{index + 1:032x}",
            span_id=f"{index + 1:016x}",
        )
        result = sample_result(run, index)
        emit_evaluation(telemetry, run, result, index)
        made.append((spans.get_finished_spans(), logs.get_finished_logs()))
        spans.clear()
        logs.clear()
    return made


def cpu_per_evaluation(encode: Callable[[Evaluation], object], batches: list[Evaluation]) -> float:
    """µs of CPU per evaluation, median of ROUNDS rounds over all `batches`."""
    evaluations_per_batch = len(batches[0][1])
    rounds = []
    for _ in range(ROUNDS):
        started = time.process_time()
        for batch in batches:
            encode(batch)
        rounds.append(time.process_time() - started)
    return statistics.median(rounds) / (len(batches) * evaluations_per_batch) * 1e6


def sdk(batch: Evaluation) -> object:
    return (
        sdk_encode_spans(batch[0]).SerializePartialToString(),
        sdk_encode_logs(batch[1]).SerializePartialToString(),
    )


def ours(batch: Evaluation) -> object:
    return encode_spans(batch[0]), encode_logs(batch[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--evaluations", type=int, default=2048)
    args = parser.parse_args()
    print_machine()
    single = evaluations(args.evaluations)
    spans, records = single[0]
    print(
        f"an evaluation: {len(spans)} spans ({' + '.join(str(len(s.attributes)) for s in spans)}"
        f" attributes), 1 log record ({len(records[0].log_record.attributes or {})} attributes)"
    )
    batched: list[Evaluation] = [
        (
            [span for spans, _ in single[start : start + BATCH] for span in spans],
            [record for _, records in single[start : start + BATCH] for record in records],
        )
        for start in range(0, len(single) - BATCH + 1, BATCH)
    ]
    for batch in (single[0], batched[0]):
        assert ours(batch) == sdk(batch), "the encoders' bytes differ"
    for label, batches in (("1 evaluation a request", single), (f"{BATCH} a request", batched)):
        sdk_us = cpu_per_evaluation(sdk, batches)
        ours_us = cpu_per_evaluation(ours, batches)
        print(
            f"{label}: SDK encoders {sdk_us:.1f} µs/evaluation, otlp_encode {ours_us:.1f} "
            f"µs/evaluation, {sdk_us / ours_us:.1f}x"
        )


if __name__ == "__main__":
    main()
