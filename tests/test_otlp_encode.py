"""agentscore.telemetry.otlp_encode against the OpenTelemetry SDK's OTLP encoders.

Spans and log records come from a real TracerProvider and LoggerProvider. Two equalities are
checked for every batch: the parsed request equals the SDK's message, and the bytes equal the
SDK's SerializePartialToString() byte for byte (upb writes fields in field-number order, as
otlp_encode does, so both hold for every case here).
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs as sdk_encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import (
    encode_spans as sdk_encode_spans,
)
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import (
    LoggerProvider,
    LogRecordLimits,
    ReadableLogRecord,
)
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
)
from opentelemetry.util.types import AnyValue

from agentscore.telemetry.otlp_encode import encode_logs, encode_spans
from tests.conftest import new_log_exporter

# Records over a limit warn each time; the limits are the point here.
pytestmark = pytest.mark.filterwarnings("ignore:Log record attributes were dropped")

TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C


class Color(str, Enum):  # noqa: UP042 - not StrEnum, whose str() is its value
    RED = "red"  # str() of it is "Color.RED"; protobuf takes the string itself


class Level(IntEnum):
    HIGH = 300


# Every AnyValue kind, with the edges of each encoding: one- to three-byte lengths, int64's
# ends (a negative is a ten-byte varint), the defaults a oneof still writes (0, "", False,
# 0.0, b""), the floats without a decimal form, unicode beyond the BMP.
SCALARS: list[Any] = [
    "",
    "plain",
    "héllo ✓ 🎉 日本語",
    "x" * 127,
    "y" * 128,
    "z" * 20_000,
    True,
    False,
    0,
    1,
    127,
    128,
    16_383,
    16_384,
    -1,
    -128,
    2**63 - 1,
    -(2**63),
    0.0,
    -0.0,
    1.5,
    -2.25e-300,
    math.nan,
    math.inf,
    -math.inf,
    b"",
    b"\x00\xffbytes",
    None,
    Color.RED,
    Level.HIGH,
]
ATTRIBUTES: dict[str, Any] = {f"scalar.{index}": value for index, value in enumerate(SCALARS)}
ATTRIBUTES |= {
    "list.str": ["a", "", "ü"],
    "list.bool": [True, False],
    "list.int": [0, -5, 2**40],
    "list.float": [0.5, math.inf],
    "list.empty": [],
    "list.mixed": ["a", 1, 2.5, None, b"b", [1, [2]]],
    "map": {"k": "v", "n": {"deep": [1, {"x": None}]}, "e": {}},
    "": "an empty key",
}


def assert_spans_match(spans: Sequence[ReadableSpan]) -> None:
    sdk = sdk_encode_spans(spans)
    ours = encode_spans(spans)
    assert ExportTraceServiceRequest.FromString(ours) == sdk
    assert ours == sdk.SerializePartialToString()


def assert_logs_match(records: Sequence[ReadableLogRecord]) -> None:
    sdk = sdk_encode_logs(records)
    ours = encode_logs(records)
    assert ExportLogsServiceRequest.FromString(ours) == sdk
    assert ours == sdk.SerializePartialToString()


@dataclass
class Telemetry:
    spans: InMemorySpanExporter
    logs: InMemoryLogRecordExporter

    def tracer_provider(
        self, resource: Resource, limits: SpanLimits | None = None
    ) -> TracerProvider:
        provider = TracerProvider(resource=resource, span_limits=limits)
        provider.add_span_processor(SimpleSpanProcessor(self.spans))
        return provider

    def logger_provider(
        self, resource: Resource, limits: LogRecordLimits | None = None
    ) -> LoggerProvider:
        provider = LoggerProvider(resource=resource, log_record_limits=limits)
        provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        return provider


@pytest.fixture
def telemetry() -> Telemetry:
    return Telemetry(InMemorySpanExporter(), new_log_exporter())


def remote_parent(trace_state: TraceState | None = None) -> Context:
    context = SpanContext(
        trace_id=TRACE_ID,
        span_id=0xB7AD6B7169203331,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=trace_state,
    )
    return trace.set_span_in_context(NonRecordingSpan(context))


def test_empty_batches() -> None:
    assert_spans_match([])
    assert_logs_match([])
    assert encode_spans([]) == encode_logs([]) == b""


def test_every_attribute_kind_on_spans_events_links_resource_and_scope(
    telemetry: Telemetry,
) -> None:
    resource = Resource(ATTRIBUTES, schema_url="https://opentelemetry.io/schemas/1.28.0")
    tracer = telemetry.tracer_provider(resource).get_tracer(
        "scope", "1.0", schema_url="https://example.com/schema", attributes=ATTRIBUTES
    )
    linked = SpanContext(TRACE_ID, 0x1234, is_remote=False)
    with tracer.start_as_current_span(
        "ünïcode span", attributes=ATTRIBUTES, links=[Link(linked, ATTRIBUTES)]
    ) as span:
        span.add_event("event", ATTRIBUTES, timestamp=1_700_000_000_000_000_000)
        span.add_event("", {})
    assert_spans_match(telemetry.spans.get_finished_spans())


def test_remote_parent_trace_state_links_kinds_and_statuses(telemetry: Telemetry) -> None:
    tracer = telemetry.tracer_provider(Resource({"service.name": "a"})).get_tracer("t")
    state = TraceState([("vendor", "value"), ("k2", "v2")])
    remote_link = SpanContext(TRACE_ID + 1, 0x99, is_remote=True, trace_state=state)
    local_link = SpanContext(TRACE_ID + 2, 0x98, is_remote=False)
    statuses = [
        None,
        Status(StatusCode.OK),
        Status(StatusCode.ERROR, "it broke: ✗"),
        Status(StatusCode.ERROR),
    ]
    for kind, status in zip(SpanKind, [*statuses, Status(StatusCode.UNSET)], strict=True):
        with tracer.start_as_current_span(
            f"{kind.name} under a remote parent",
            context=remote_parent(state),
            kind=kind,
            links=[Link(remote_link), Link(local_link, {"why": "retry"})],
        ) as parent:
            if status is not None:
                parent.set_status(status)
            with tracer.start_as_current_span("local child"):
                pass
    # A root span: no parent_span_id, flags without the remote bit.
    with tracer.start_as_current_span("root"):
        pass
    spans = telemetry.spans.get_finished_spans()
    assert any(span.parent is not None and span.parent.is_remote for span in spans)
    assert any(span.parent is None for span in spans)
    assert_spans_match(spans)


def test_dropped_counts(telemetry: Telemetry) -> None:
    limits = SpanLimits(
        max_span_attributes=2,
        max_events=1,
        max_links=1,
        max_event_attributes=1,
        max_link_attributes=1,
    )
    tracer = telemetry.tracer_provider(Resource({}), limits).get_tracer("t")
    links = [Link(SpanContext(TRACE_ID, n, False), {"a": 1, "b": 2}) for n in (1, 2, 3)]
    with tracer.start_as_current_span("s", attributes={"a": 1, "b": 2, "c": 3}, links=links) as s:
        s.add_event("dropped")  # the oldest event goes
        s.add_event("kept", {"a": 1, "b": 2, "c": 3})
    [span] = telemetry.spans.get_finished_spans()
    assert span.dropped_attributes and span.dropped_events and span.dropped_links
    assert span.events[0].dropped_attributes and span.links[0].dropped_attributes
    assert_spans_match([span])

    logs = telemetry.logger_provider(Resource({}), LogRecordLimits(max_attributes=2))
    logs.get_logger("l").emit(body="b", attributes={"a": 1, "b": 2, "c": 3})
    [record] = telemetry.logs.get_finished_logs()
    assert record.dropped_attributes == 1
    assert_logs_match([record])


def test_grouping_by_resource_then_scope_in_first_seen_order(telemetry: Telemetry) -> None:
    first = telemetry.tracer_provider(Resource({"service.name": "first"}))
    second = telemetry.tracer_provider(Resource({"service.name": "second"}, "https://s"))
    # A resource equal to the first one but another object: grouped with it, by value.
    first_again = telemetry.tracer_provider(Resource({"service.name": "first"}))
    order = [
        (second, "y"),
        (first, "x"),
        (second, "x"),
        (first_again, "y"),
        (first, "y"),
        (second, "y"),
        (first_again, "x"),
    ]
    for index, (provider, scope) in enumerate(order):
        with provider.get_tracer(scope, "2.0").start_as_current_span(f"span {index}"):
            pass
    spans = telemetry.spans.get_finished_spans()
    assert_spans_match(spans)
    request = ExportTraceServiceRequest.FromString(encode_spans(spans))
    assert [len(r.scope_spans) for r in request.resource_spans] == [2, 2]

    loggers = {
        provider: telemetry.logger_provider(provider.resource)
        for provider in (first, second, first_again)
    }
    for index, (provider, scope) in enumerate(order):
        loggers[provider].get_logger(scope, "2.0").emit(body=index)
    assert_logs_match(telemetry.logs.get_finished_logs())


def test_many_resources_in_one_batch() -> None:
    """More resources than the encoder keeps encoded between calls, each used twice."""
    resources = [Resource({"service.name": f"s{n % 70}"}) for n in range(140)]
    spans = [
        ReadableSpan("s", context=SpanContext(TRACE_ID, n + 1, False), resource=resource)
        for n, resource in enumerate(resources)
    ]
    assert_spans_match(spans)
    assert_spans_match(spans[::-1])


def test_no_scope_and_one_scope_object_under_two_resources() -> None:
    """Spans and records made without a provider: no instrumentation scope (an empty scope
    field, no schema_url), and one scope object shared by two resources."""
    scope = InstrumentationScope("shared", None, "https://scope", {"a": [1, 2]})
    resources = [Resource({"r": 1}), Resource({"r": 2})]
    spans = [
        ReadableSpan(
            "made by hand",
            context=SpanContext(TRACE_ID, 7 + index, is_remote=False),
            resource=resources[index % 2],
            instrumentation_scope=scope if index < 3 else None,
            start_time=None if index == 1 else 10,
            end_time=None if index == 1 else 20,
        )
        for index in range(5)
    ]
    assert_spans_match(spans)
    provider = LoggerProvider()
    exporter = new_log_exporter()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    provider.get_logger("l").emit(body="x")
    [made] = exporter.get_finished_logs()
    records = [
        ReadableLogRecord(
            made.log_record,
            resource=resources[index % 2],
            instrumentation_scope=scope if index < 3 else None,
        )
        for index in range(5)
    ]
    assert_logs_match(records)


BODIES: list[Any] = [
    *SCALARS,
    ["a", 1, [2, [3, {"k": [None]}]], {}],
    ("tuple", 1),
    {"message": "hi", "nested": {"list": [1.5, b"x", True], "none": None}, "": 0},
    {1: "int key", None: "None key", 2.5: "float key"},
    [],
    {},
]


@pytest.mark.parametrize("body", BODIES, ids=[f"body{n}" for n in range(len(BODIES))])
def test_log_bodies(telemetry: Telemetry, body: Any) -> None:
    logger = telemetry.logger_provider(Resource({})).get_logger("l")
    logger.emit(body=body, timestamp=1)
    assert_logs_match(telemetry.logs.get_finished_logs())


def test_log_records_with_and_without_trace_context(telemetry: Telemetry) -> None:
    resource = Resource({"service.name": "agentscore"}, "https://logs")
    logger = telemetry.logger_provider(resource).get_logger(
        "agentscore", "0.1.0", "https://scope", {"scope.attr": True}
    )
    tracer = telemetry.tracer_provider(resource).get_tracer("t")
    # No trace context, no severity, no event name, no timestamp (observed time only).
    logger.emit(body="bare")
    logger.emit(
        timestamp=1_700_000_000_123_456_789,
        severity_number=SeverityNumber.WARN,
        severity_text="WARN",
        body={"k": "v"},
        attributes=ATTRIBUTES,
        event_name="gen_ai.evaluation.result",
    )
    with tracer.start_as_current_span("s"):
        logger.emit(event_name="inside a span", attributes={"a": 1})
    logger.emit(context=remote_parent(), severity_number=SeverityNumber.UNSPECIFIED, body=None)
    records = telemetry.logs.get_finished_logs()
    assert [r.log_record.trace_id != 0 for r in records] == [False, False, True, True]
    assert_logs_match(records)


def test_an_attribute_that_cannot_be_encoded_is_skipped_and_logged(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    tracer = telemetry.tracer_provider(Resource({})).get_tracer("t")
    attributes: dict[str, AnyValue] = {
        "before": 1,
        "too big": 2**64,
        "too small": [-(2**63) - 1],
        "after": 2,
    }
    with tracer.start_as_current_span("s", attributes=attributes):
        pass
    logger = telemetry.logger_provider(Resource({})).get_logger("l")
    logger.emit(body="b", attributes=attributes)
    with caplog.at_level(logging.ERROR, logger="agentscore.telemetry.otlp_encode"):
        assert_spans_match(telemetry.spans.get_finished_spans())
        assert_logs_match(telemetry.logs.get_finished_logs())
    skipped = [
        r.getMessage() for r in caplog.records if r.name == "agentscore.telemetry.otlp_encode"
    ]
    assert len(skipped) == 4
    assert skipped[0].startswith("Failed to encode key too big")
    request = ExportTraceServiceRequest.FromString(
        encode_spans(telemetry.spans.get_finished_spans())
    )
    keys = [kv.key for kv in request.resource_spans[0].scope_spans[0].spans[0].attributes]
    assert keys == ["before", "after"]


@pytest.mark.parametrize("body", [2**64, {"k": {1, 2}}, [object()]])
def test_a_body_that_cannot_be_encoded_fails_as_in_the_sdk(telemetry: Telemetry, body: Any) -> None:
    telemetry.logger_provider(Resource({})).get_logger("l").emit(body=body)
    records = telemetry.logs.get_finished_logs()
    with pytest.raises(Exception):  # noqa: B017, PT011 - the SDK raises a bare Exception too
        sdk_encode_logs(records)
    with pytest.raises((TypeError, ValueError)):
        encode_logs(records)


# Random batches over the cases above: values nested at random, random combinations of
# parents, links, events, statuses, kinds, resources and scopes.
def random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.1:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if depth < 3 and roll < 0.15:
        return {rng.choice(["a", "b", "ü", ""]): random_value(rng, depth + 1) for _ in range(3)}
    if roll < 0.3:
        return rng.randrange(-(2**63), 2**63)
    if roll < 0.4:
        return rng.uniform(-1e6, 1e6)
    if roll < 0.5:
        return "".join(rng.choice("aé✓🎉 ") for _ in range(rng.randrange(200)))
    if roll < 0.55:
        return rng.randbytes(rng.randrange(20))
    return rng.choice(SCALARS)


def random_attributes(rng: random.Random) -> dict[str, Any]:
    return {f"gen_ai.k{n}": random_value(rng) for n in range(rng.randrange(25))}


@contextmanager
def random_span(
    rng: random.Random, tracer: trace.Tracer, context: Context | None
) -> Iterator[trace.Span]:
    links = [
        Link(
            SpanContext(rng.getrandbits(128) or 1, rng.getrandbits(64) or 1, rng.random() < 0.5),
            random_attributes(rng),
        )
        for _ in range(rng.randrange(3))
    ]
    with tracer.start_as_current_span(
        rng.choice(["evaluation faithfulness", "chat gpt-4o-mini", ""]),
        context=context,
        kind=rng.choice(list(SpanKind)),
        attributes=random_attributes(rng),
        links=links,
    ) as span:
        for _ in range(rng.randrange(3)):
            span.add_event(rng.choice(["e", "ë", ""]), random_attributes(rng))
        if rng.random() < 0.5:
            code = rng.choice(list(StatusCode))
            span.set_status(Status(code, "why" if code is StatusCode.ERROR else None))
        yield span


@pytest.mark.parametrize("seed", range(25))
def test_random_batches(telemetry: Telemetry, seed: int) -> None:
    rng = random.Random(seed)
    limits = SpanLimits(max_span_attributes=20, max_events=2, max_event_attributes=20)
    resources = [Resource({"service.name": "a"}), Resource(random_attributes(rng), "https://r")]
    tracers = [
        telemetry.tracer_provider(resource, limits).get_tracer(name, version)
        for resource in resources
        for name, version in (("agentscore", "0.1.0"), ("judge", None))
    ]
    loggers = [
        telemetry.logger_provider(resource, LogRecordLimits(max_attributes=20)).get_logger(name)
        for resource in resources
        for name in ("agentscore", "judge")
    ]
    for _ in range(12):
        context = remote_parent(TraceState([("k", "v")])) if rng.random() < 0.3 else None
        with random_span(rng, rng.choice(tracers), context):
            if rng.random() < 0.5:
                with random_span(rng, rng.choice(tracers), None):
                    pass
            rng.choice(loggers).emit(
                timestamp=rng.choice([None, rng.getrandbits(63)]),
                severity_number=rng.choice([None, *SeverityNumber]),
                severity_text=rng.choice([None, "", "INFO"]),
                body=random_value(rng),
                attributes=random_attributes(rng),
                event_name=rng.choice([None, "", "gen_ai.evaluation.result"]),
                context=rng.choice([None, Context()]),
            )
    spans = telemetry.spans.get_finished_spans()
    records = telemetry.logs.get_finished_logs()
    assert_spans_match(spans)
    assert_logs_match(records)
    # One item at a time too: what an exporter sends for a single evaluation.
    for span in spans[:5]:
        assert_spans_match([span])
    for record in records[:5]:
        assert_logs_match([record])
