"""The service's tracer (agentscore/serve/spans.py) against the OpenTelemetry SDK's: the same
calls give the same spans, field for field and byte for byte once encoded, except for an
exception's message, which it never records."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator
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

from agentscore.serve.spans import RecordingTracerProvider
from agentscore.telemetry.otlp_encode import encode_spans

RESOURCE = Resource({"service.name": "agentscore-serve"})
REMOTE_PARENT = SpanContext(
    trace_id=0x5B8EFFF798038103D269B633813FC60C,
    span_id=0xEEE19B7EC3C1B174,
    is_remote=True,
    trace_flags=TraceFlags(TraceFlags.SAMPLED),
    trace_state=TraceState([("vendor", "value")]),
)


class Counting(IdGenerator):
    def __init__(self) -> None:
        self.next = 0

    def generate_span_id(self) -> int:
        self.next += 1
        return self.next

    def generate_trace_id(self) -> int:
        self.next += 1
        return 0xABC0000 + self.next


class Collect(SpanProcessor):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def sdk_spans(calls: Callable[[trace.Tracer], None], limits: SpanLimits) -> list[ReadableSpan]:
    collect = Collect()
    provider = TracerProvider(resource=RESOURCE, id_generator=Counting(), span_limits=limits)
    provider.add_span_processor(collect)
    calls(provider.get_tracer("agentscore", "1.0", "https://schema"))
    return collect.spans


def our_spans(calls: Callable[[trace.Tracer], None], limits: SpanLimits) -> list[ReadableSpan]:
    spans: list[ReadableSpan] = []
    provider = RecordingTracerProvider(RESOURCE, Counting(), spans.append, limits)
    calls(provider.get_tracer("agentscore", "1.0", "https://schema"))
    return spans


class Opaque:
    """No __str__ or __repr__ of its own: the SDK drops such a value."""

    __str__ = object.__str__
    __repr__ = object.__repr__


class Named:
    def __str__(self) -> str:
        return "named"


def attributes_of_every_kind(tracer: trace.Tracer) -> None:
    span = tracer.start_span(
        "evaluation faithfulness", kind=SpanKind.INTERNAL, start_time=1, attributes={"a": 1}
    )
    span.set_attributes(
        {
            "text": "x" * 40,
            "flag": True,
            "count": 3,
            "ratio": 0.25,
            "names": ["a", "b"],
            "numbers": (1, 2, 3),
            "mapping": {"inner": [1, 2], "": 3},
            "named": Named(),  # type: ignore[dict-item]  # wrong on purpose
            "opaque": Opaque(),  # type: ignore[dict-item]
        }
    )
    span.set_attribute("a", 2)  # set again: moves to the end, as in the SDK
    span.set_attribute("", "no key")
    span.end(end_time=2)


def over_the_limits(tracer: trace.Tracer) -> None:
    span = tracer.start_span("full", start_time=1)
    for index in range(6):
        span.set_attribute(f"key{index}", "y" * 30)
    span.set_attribute("key5", "again")
    for index in range(4):
        span.add_event(f"event {index}", {"a": index, "b": "z" * 30}, timestamp=10 + index)
    span.end(end_time=2)


def links_past_their_limits(tracer: trace.Tracer) -> None:
    nowhere = SpanContext(0, 0, is_remote=False)
    links = [Link(nowhere)]  # points at nothing: dropped
    links += [
        Link(SpanContext(n + 1, n + 1, is_remote=True), {"a": n, "b": "v" * 30}) for n in range(4)
    ]
    span = tracer.start_span("linked", links=links, start_time=1)
    span.end(end_time=2)


def statuses_parents_and_nesting(tracer: trace.Tracer) -> None:
    remote = trace.set_span_in_context(NonRecordingSpan(REMOTE_PARENT))
    with tracer.start_as_current_span(
        "evaluation", context=remote, start_time=1, end_on_exit=False
    ) as outer:
        outer.set_status(Status(StatusCode.UNSET))
        outer.set_status(StatusCode.ERROR, "JudgeTimeoutError")
        inner = tracer.start_span(
            "chat gpt-4o-mini",
            kind=SpanKind.CLIENT,
            start_time=2,
            links=[Link(REMOTE_PARENT, {"why": "same run"})],
        )
        inner.set_status(Status(StatusCode.OK), "ignored: a Status carries its own")
        inner.set_status(StatusCode.ERROR, "after OK: ignored")
        inner.update_name("chat gpt-4o-mini-2024-07-18")
        inner.end(end_time=3)
        inner.end(end_time=4)  # a second end changes nothing and hands nothing on
        inner.set_attribute("late", True)
        inner.set_status(StatusCode.ERROR)
        inner.update_name("late")
        outer.end(end_time=5)
    lone = tracer.start_span("no parent", start_time=6)
    lone.set_status(StatusCode.OK, "an OK status drops its description")
    lone.end(end_time=7)


def fields(span: ReadableSpan) -> dict[str, object]:
    status = span.status
    return {
        "name": span.name,
        "context": span.context,
        "parent": span.parent,
        "kind": span.kind,
        "start": span.start_time,
        "end": span.end_time,
        "attributes": list(dict(span.attributes or {}).items()),
        "dropped_attributes": span.dropped_attributes,
        "events": [
            (event.name, dict(event.attributes or {}), event.timestamp) for event in span.events
        ],
        "links": [(link.context, dict(link.attributes or {})) for link in span.links],
        "dropped_links": span.dropped_links,
        "dropped_events": span.dropped_events,
        "status": (status.status_code, status.description),
        "resource": span.resource.attributes,
        "scope": span.instrumentation_scope,
    }


LIMITS = {
    "defaults": SpanLimits(),
    "tight": SpanLimits(
        max_span_attributes=4,
        max_attribute_length=12,
        max_events=3,
        max_event_attributes=1,
        max_links=2,
        max_link_attributes=1,
    ),
}


@pytest.mark.parametrize("limits", LIMITS.values(), ids=LIMITS.keys())
@pytest.mark.parametrize(
    "calls",
    [
        attributes_of_every_kind,
        over_the_limits,
        links_past_their_limits,
        statuses_parents_and_nesting,
    ],
)
def test_the_same_calls_give_the_sdks_spans(
    calls: Callable[[trace.Tracer], None], limits: SpanLimits
) -> None:
    expected = sdk_spans(calls, limits)
    ours = our_spans(calls, limits)
    assert [fields(span) for span in ours] == [fields(span) for span in expected]
    assert encode_spans(ours) == encode_spans(expected)
    assert [span.to_json() for span in ours] == [span.to_json() for span in expected]  # JSONL


def test_spans_take_the_parents_trace_and_new_spans_a_new_one() -> None:
    spans = our_spans(statuses_parents_and_nesting, SpanLimits())
    inner, outer, lone = spans
    assert outer.parent == REMOTE_PARENT and outer.context is not None
    assert outer.context.trace_id == REMOTE_PARENT.trace_id
    assert outer.context.trace_state == REMOTE_PARENT.trace_state
    assert inner.parent == outer.context
    assert lone.parent is None and lone.context is not None
    assert lone.context.trace_id not in (0, REMOTE_PARENT.trace_id)
    assert (inner.status.status_code, outer.status.status_code) == (StatusCode.OK, StatusCode.ERROR)


def test_an_exception_is_recorded_by_its_type_only() -> None:
    secret = "sk-live-0123456789abcdef"

    def fail(tracer: trace.Tracer) -> None:
        with (
            pytest.raises(RuntimeError),
            tracer.start_as_current_span("evaluation", set_status_on_exception=False),
        ):
            raise RuntimeError(f"judge said: bad key {secret}")

    (span,) = our_spans(fail, SpanLimits())
    (event,) = span.events
    assert event.name == "exception"
    assert dict(event.attributes or {}) == {
        "exception.type": "RuntimeError",
        "exception.escaped": "False",
    }
    assert secret not in span.to_json()
    assert span.status.status_code is StatusCode.UNSET


def test_the_current_span_is_the_open_one() -> None:
    seen: list[trace.Span] = []

    def nest(tracer: trace.Tracer) -> None:
        with tracer.start_as_current_span("outer") as outer:
            seen.append(trace.get_current_span())
            assert outer.is_recording()
        seen.append(trace.get_current_span())
        seen.append(outer)

    spans = our_spans(nest, SpanLimits())
    assert len(spans) == 1
    inside, after, outer = seen
    assert inside is outer and not outer.is_recording()
    assert after is not outer


def test_the_limits_come_from_the_environment_as_the_sdks_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "2")
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "5")

    def three(tracer: trace.Tracer) -> None:
        span = tracer.start_span("s", start_time=1)
        span.set_attributes({"a": "123456789", "b": 1, "c": 2})
        span.end(end_time=2)

    (span,) = our_spans(three, SpanLimits())
    assert dict(span.attributes or {}) == {"b": 1, "c": 2}
    assert span.dropped_attributes == 1
    assert fields(span) == fields(sdk_spans(three, SpanLimits())[0])
