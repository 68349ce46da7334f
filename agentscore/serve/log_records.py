"""The service's logger: OpenTelemetry API log records handed on as the SDK's
`ReadableLogRecord`, what every exporter and the service's own OTLP encoder take.

The SDK's path for one record builds it twice (a `ReadWriteLogRecord`, then the outbox's
readable copy), cleans its attributes into a locked mapping, and runs a processor chain
and the logger's own metrics: about 25 µs of the telemetry of each score in
`agentscore serve`, whose one caller is the scoring pipeline's `gen_ai.evaluation.result`
event. This logger keeps what the SDK guarantees a backend (the trace context from
`context`, timestamps, the attribute rules and the `OTEL_ATTRIBUTE_*` limits, through the
SDK's own `BoundedAttributes` whenever a value or the count needs them). An exception is
recorded by its type only: its message and stack may quote a key or message content.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from opentelemetry import _logs
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LogRecordLimits, ReadableLogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.util.types import AnyValue, Attributes

__all__ = ["RecordingLoggerProvider"]

_PLAIN = frozenset((str, bool, int, float))


class RecordingLoggerProvider(_logs.LoggerProvider):
    """Every record emitted through its loggers is passed to `on_emit` as a
    `ReadableLogRecord` of `resource`."""

    def __init__(
        self,
        resource: Resource,
        on_emit: Callable[[ReadableLogRecord], None],
        limits: LogRecordLimits | None = None,
    ) -> None:
        self._resource = resource
        self._on_emit = on_emit
        self._limits = limits or LogRecordLimits()

    def get_logger(
        self,
        name: str,
        version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes | None = None,
    ) -> _logs.Logger:
        return _Logger(self, InstrumentationScope(name, version, schema_url, attributes))

    def shutdown(self) -> None:
        """Nothing is buffered here: a record is handed on as it is emitted."""


class _Logger(_logs.Logger):
    def __init__(self, provider: RecordingLoggerProvider, scope: InstrumentationScope) -> None:
        super().__init__(scope.name, scope.version, scope.schema_url, scope.attributes)
        self._provider = provider
        self._scope = scope

    def enabled(
        self,
        *,
        context: Context | None = None,
        severity_number: _logs.SeverityNumber | None = None,
        event_name: str | None = None,
    ) -> bool:
        return True

    def emit(
        self,
        record: _logs.LogRecord | None = None,
        *,
        timestamp: int | None = None,
        observed_timestamp: int | None = None,
        context: Context | None = None,
        severity_number: _logs.SeverityNumber | None = None,
        severity_text: str | None = None,
        body: AnyValue | None = None,
        attributes: Attributes = None,
        event_name: str | None = None,
        exception: BaseException | None = None,
    ) -> None:
        if record is None:
            record = _logs.LogRecord(
                timestamp=timestamp,
                observed_timestamp=observed_timestamp,
                context=context,
                severity_number=severity_number,
                severity_text=severity_text,
                body=body,
                attributes=attributes,
                event_name=event_name,
                exception=exception,
            )
        record.attributes = self._kept_attributes(record.attributes, record.exception)
        provider = self._provider
        provider._on_emit(
            ReadableLogRecord(
                log_record=record,
                resource=provider._resource,
                instrumentation_scope=self._scope,
                limits=provider._limits,
            )
        )

    def _kept_attributes(
        self, attributes: Attributes, exception: BaseException | None
    ) -> Mapping[str, AnyValue]:
        """The attributes as the SDK keeps them: a plain copy when every value is a plain
        one within the limits (what the pipeline emits), else the SDK's own bounded and
        cleaned mapping."""
        given: dict[str, AnyValue] = dict(attributes or {})
        if exception is not None:  # its type only: the message may quote a key
            given.setdefault("exception.type", type(exception).__qualname__)
        limits = self._provider._limits
        most = limits.max_log_record_attributes
        longest = limits.max_log_record_attribute_length
        if (most is None or len(given) <= most) and all(
            type(key) is str
            and key
            and type(value) in _PLAIN
            and (longest is None or type(value) is not str)
            for key, value in given.items()
        ):
            return given
        return BoundedAttributes(
            maxlen=most, attributes=given, immutable=False, max_value_len=longest
        )
