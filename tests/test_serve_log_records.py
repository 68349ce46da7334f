"""The service's logger (agentscore/serve/log_records.py) against the OpenTelemetry SDK's:
the same calls give the same records, as JSON and as OTLP bytes, except for an exception,
which it records by its type only."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from opentelemetry import _logs, trace
from opentelemetry.sdk._logs import (
    LoggerProvider,
    LogRecordLimits,
    LogRecordProcessor,
    ReadableLogRecord,
    ReadWriteLogRecord,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from agentscore.serve.log_records import RecordingLoggerProvider
from agentscore.telemetry.otlp_encode import encode_logs

RESOURCE = Resource({"service.name": "agentscore-serve"})
AGENT_SPAN = SpanContext(
    trace_id=0x5B8EFFF798038103D269B633813FC60C,
    span_id=0xEEE19B7EC3C1B174,
    is_remote=False,
    trace_flags=TraceFlags(TraceFlags.SAMPLED),
)


class Collect(LogRecordProcessor):
    """As the service's outbox took the SDK's records: a readable copy of each."""

    def __init__(self) -> None:
        self.records: list[ReadableLogRecord] = []

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        self.records.append(
            ReadableLogRecord(
                log_record=log_record.log_record,
                resource=log_record.resource or RESOURCE,
                instrumentation_scope=log_record.instrumentation_scope,
                limits=log_record.limits,
            )
        )

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        pass


Calls = Callable[[_logs.Logger], None]


def sdk_records(calls: Calls, limits: LogRecordLimits) -> list[ReadableLogRecord]:
    collect = Collect()
    provider = LoggerProvider(resource=RESOURCE, log_record_limits=limits)
    provider.add_log_record_processor(collect)
    calls(provider.get_logger("agentscore", "1.0", "https://schema"))
    return collect.records


def our_records(calls: Calls, limits: LogRecordLimits) -> list[ReadableLogRecord]:
    records: list[ReadableLogRecord] = []
    provider = RecordingLoggerProvider(RESOURCE, records.append, limits)
    calls(provider.get_logger("agentscore", "1.0", "https://schema"))
    return records


def an_evaluation_event(logger: _logs.Logger) -> None:
    logger.emit(
        timestamp=10,
        observed_timestamp=11,
        event_name="gen_ai.evaluation.result",
        context=trace.set_span_in_context(NonRecordingSpan(AGENT_SPAN)),
        attributes={
            "gen_ai.evaluation.name": "faithfulness",
            "gen_ai.evaluation.score.value": 0.5,
            "agentscore.judge.calls": 1,
            "agentscore.cached": False,
            "gen_ai.evaluation.explanation": "2 claims: 1 supported, 1 unverifiable",
        },
    )


def values_that_need_cleaning(logger: _logs.Logger) -> None:
    with trace.use_span(NonRecordingSpan(AGENT_SPAN)):  # the current span's context
        logger.emit(
            timestamp=20,
            observed_timestamp=21,
            body={"text": "x" * 40, "parts": [1, 2]},
            attributes={
                "names": ["a", "b"],
                "nested": {"inner": (1, 2)},
                "long": "y" * 40,
                "": "no key",
                "a": 1,
                "b": 2,
            },
        )


def a_record_made_first(logger: _logs.Logger) -> None:
    logger.emit(
        _logs.LogRecord(
            timestamp=30,
            observed_timestamp=31,
            severity_number=_logs.SeverityNumber.WARN,
            severity_text="WARN",
            body="judge slow",
            attributes={"k": "v"},
        )
    )


LIMITS = {
    "defaults": LogRecordLimits(),
    "tight": LogRecordLimits(max_attributes=3, max_attribute_length=12),
}


# The SDK warns when its record drops an attribute; here it does so on purpose.
@pytest.mark.filterwarnings("ignore:Log record attributes were dropped")
@pytest.mark.parametrize("limits", LIMITS.values(), ids=LIMITS.keys())
@pytest.mark.parametrize(
    "calls", [an_evaluation_event, values_that_need_cleaning, a_record_made_first]
)
def test_the_same_calls_give_the_sdks_records(calls: Calls, limits: LogRecordLimits) -> None:
    expected = sdk_records(calls, limits)
    ours = our_records(calls, limits)
    assert [record.to_json() for record in ours] == [record.to_json() for record in expected]
    assert encode_logs(ours) == encode_logs(expected)
    assert [record.dropped_attributes for record in ours] == [
        record.dropped_attributes for record in expected
    ]


def test_an_evaluation_event_carries_the_agent_spans_context() -> None:
    (record,) = our_records(an_evaluation_event, LogRecordLimits())
    assert (record.log_record.trace_id, record.log_record.span_id) == (
        AGENT_SPAN.trace_id,
        AGENT_SPAN.span_id,
    )
    assert record.log_record.event_name == "gen_ai.evaluation.result"


def test_an_exception_is_recorded_by_its_type_only() -> None:
    secret = "sk-live-0123456789abcdef"

    def failed(logger: _logs.Logger) -> None:
        logger.emit(body="scoring failed", exception=RuntimeError(f"bad key {secret}"))

    (record,) = our_records(failed, LogRecordLimits())
    assert dict(record.log_record.attributes or {}) == {"exception.type": "RuntimeError"}
    assert secret not in record.to_json()
