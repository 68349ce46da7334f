"""OTLP protobuf requests for the spans and log records `agentscore serve` exports, written as
wire bytes.

The OpenTelemetry SDK's encoders (opentelemetry.exporter.otlp.proto.common) build a protobuf
message object per span, attribute and value only to serialize the tree once: about 180 µs
for an evaluation's two spans and log record, against about 50 µs for writing the same bytes
directly, as here (benchmarks/otlp_encode.py). What is encoded, and how, follows those
encoders (version 1.45) field for field: grouping by resource then scope in first-seen order,
which fields they leave unset, an attribute that fails to encode is logged and skipped.
Fields go out in field-number order, as upb serializes them, so the bytes match the SDK's too.

Wire format in brief: a field is a tag (field number << 3 | wire type, as a varint) then a
varint (type 0), 8 little-endian bytes (type 1), a varint length and that many bytes (type 2:
strings, bytes, submessages) or 4 little-endian bytes (type 5). proto3 leaves a scalar at its
default (0, "", b"") out; a submessage the SDK sets is written even when empty.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

__all__ = ["encode_logs", "encode_spans"]

_logger = logging.getLogger(__name__)

_fixed64 = struct.Struct("<Q").pack
_fixed32 = struct.Struct("<I").pack
_double = struct.Struct("<d").pack

_MASK64 = (1 << 64) - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1

# Nearly every length and count is below 128: one byte, looked up rather than computed.
_ONE_BYTE = tuple(bytes((n,)) for n in range(0x80))
_SMALL_INT = tuple(b"\x18" + byte for byte in _ONE_BYTE)  # AnyValue.int_value 0..127

_SPAN_KIND = {
    SpanKind.INTERNAL: b"\x30\x01",
    SpanKind.SERVER: b"\x30\x02",
    SpanKind.CLIENT: b"\x30\x03",
    SpanKind.PRODUCER: b"\x30\x04",
    SpanKind.CONSUMER: b"\x30\x05",
}
# Span.flags / Link.flags (fixed32): SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE, and with it IS_REMOTE.
_SPAN_FLAGS_LOCAL = b"\x85\x01" + _fixed32(0x100)
_SPAN_FLAGS_REMOTE = b"\x85\x01" + _fixed32(0x300)
_LINK_FLAGS_LOCAL = b"\x35" + _fixed32(0x100)
_LINK_FLAGS_REMOTE = b"\x35" + _fixed32(0x300)
# Span.status (15) with only its code (3), as nearly every span has it.
_STATUS_WITHOUT_MESSAGE = {
    StatusCode.UNSET: b"\x7a\x00",
    StatusCode.OK: b"\x7a\x02\x18\x01",
    StatusCode.ERROR: b"\x7a\x02\x18\x02",
}

# Encoded KeyValue.key fields (with the value's tag after them), by key. Attribute keys are
# a small fixed set in practice; the bound keeps arbitrary keys from growing it forever.
_KEYS: dict[str, bytes] = {}
_KEYS_MAX = 1024

_Key = TypeVar("_Key")
_Value = TypeVar("_Value")
_Shared = TypeVar("_Shared", Resource, InstrumentationScope | None)
_ENCODED: dict[int, tuple[object, bytes]] = {}
_ENCODED_MAX = 64


def encode_spans(spans: Sequence[ReadableSpan]) -> bytes:
    """The serialized ExportTraceServiceRequest of `spans`."""
    return _request(
        (span.resource, span.instrumentation_scope or None, _span(span)) for span in spans
    )


def encode_logs(records: Sequence[ReadableLogRecord]) -> bytes:
    """The serialized ExportLogsServiceRequest of `records`."""
    return _request(
        (record.resource, record.instrumentation_scope or None, _log_record(record))
        for record in records
    )


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _ONE_BYTE[n]
    if n < 0x4000:
        return bytes((n & 0x7F | 0x80, n >> 7))
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class _Groups(Generic[_Key, _Value]):
    """Values by key in first-seen order, keys matched as a dict matches them (the SDK groups
    in dicts), but hashed only once a second key object turns up: Resource hashes by dumping
    its attributes to JSON, and a batch nearly always has one resource and few scopes."""

    def __init__(self) -> None:
        self.items: list[tuple[_Key, _Value]] = []
        self._by_identity: dict[int, _Value] = {}
        self._by_value: dict[_Key, _Value] | None = None

    def get(self, key: _Key, new: Callable[[], _Value]) -> _Value:
        value = self._by_identity.get(id(key))
        if value is not None:
            return value
        if self.items and self._by_value is None:
            self._by_value = dict(self.items)
        if self._by_value is not None:
            value = self._by_value.get(key)
        if value is None:
            value = new()
            self.items.append((key, value))
            if self._by_value is not None:
                self._by_value[key] = value
        self._by_identity[id(key)] = value
        return value


def _request(items: Iterable[tuple[Resource, InstrumentationScope | None, bytes]]) -> bytes:
    """ExportTraceServiceRequest and ExportLogsServiceRequest have the same shape: field 1
    resources, each with its resource (1), scopes (2) and schema_url (3), each scope with its
    scope (1), items (2) and schema_url (3); so one function writes both."""
    groups: _Groups[Resource, _Groups[InstrumentationScope | None, list[bytes]]] = _Groups()
    last: tuple[Resource, InstrumentationScope | None] | None = None
    last_items: list[bytes] = []
    for resource, scope, encoded in items:
        if last is None or resource is not last[0] or scope is not last[1]:
            last_items = groups.get(resource, _Groups).get(scope, list)
            last = resource, scope
        last_items.append(encoded)

    out = bytearray()
    for resource, scopes in groups.items:
        resource_body = _cached(resource, _resource)
        body = bytearray(b"\x0a")
        body += _varint(len(resource_body))
        body += resource_body
        for scope, encoded_items in scopes.items:
            scope_body = _cached(scope, _scope)
            group = bytearray(b"\x0a")
            group += _varint(len(scope_body))
            group += scope_body
            for encoded in encoded_items:
                group += b"\x12"
                group += _varint(len(encoded))
                group += encoded
            if scope is not None:
                _string(group, b"\x1a", scope.schema_url)
            body += b"\x12"
            body += _varint(len(group))
            body += group
        _string(body, b"\x1a", resource.schema_url)
        out += b"\x0a"
        out += _varint(len(body))
        out += body
    return bytes(out)


def _cached(obj: _Shared, encode: Callable[[_Shared], bytes]) -> bytes:
    """`encode(obj)`, kept across calls: a resource's and a scope's attributes are immutable
    (BoundedAttributes(immutable=True)), and a process exports under one resource and a few
    scopes, whose encoding (about 3 µs for Resource.create's five attributes) is then paid
    once, not per request. The entry holds the object, so its id is not reused while cached."""
    entry = _ENCODED.get(id(obj))
    if entry is not None and entry[0] is obj:
        return entry[1]
    encoded = encode(obj)
    if len(_ENCODED) >= _ENCODED_MAX:
        _ENCODED.clear()
    _ENCODED[id(obj)] = (obj, encoded)
    return encoded


def _resource(resource: Resource) -> bytes:
    out = bytearray()
    _attributes(out, b"\x0a", resource.attributes)
    return bytes(out)


def _scope(scope: InstrumentationScope | None) -> bytes:
    # No scope is still a scope field, an empty one.
    if scope is None:
        return b""
    out = bytearray()
    _string(out, b"\x0a", scope.name)
    _string(out, b"\x12", scope.version)
    _attributes(out, b"\x1a", scope.attributes)
    return bytes(out)


def _span(span: ReadableSpan) -> bytes:
    context = span.get_span_context()
    if context is None:
        raise ValueError(f"span {span.name!r} has no span context")
    out = bytearray(b"\x0a\x10")
    out += context.trace_id.to_bytes(16, "big")
    out += b"\x12\x08"
    out += context.span_id.to_bytes(8, "big")
    trace_state = context.trace_state
    if trace_state:  # None and an empty one both leave the field out
        _string(out, b"\x1a", ",".join([f"{key}={value}" for key, value in trace_state.items()]))
    parent = span.parent
    if parent:
        out += b"\x22\x08"
        out += parent.span_id.to_bytes(8, "big")
    _string(out, b"\x2a", span.name)
    out += _SPAN_KIND[span.kind]
    if span.start_time:
        out += b"\x39"
        out += _fixed64(span.start_time)
    if span.end_time:
        out += b"\x41"
        out += _fixed64(span.end_time)
    _attributes(out, b"\x4a", span.attributes)
    _uint(out, b"\x50", span.dropped_attributes)
    for event in span.events:
        event_body = bytearray()
        if event.timestamp:
            event_body += b"\x09"
            event_body += _fixed64(event.timestamp)
        _string(event_body, b"\x12", event.name)
        _attributes(event_body, b"\x1a", event.attributes)
        _uint(event_body, b"\x20", event.dropped_attributes)
        out += b"\x5a"
        out += _varint(len(event_body))
        out += event_body
    _uint(out, b"\x60", span.dropped_events)
    for link in span.links:
        link_body = _link(link)
        out += b"\x6a"
        out += _varint(len(link_body))
        out += link_body
    _uint(out, b"\x70", span.dropped_links)
    status = span.status
    if status is not None:
        out += _status(status)
    out += _SPAN_FLAGS_REMOTE if parent and parent.is_remote else _SPAN_FLAGS_LOCAL
    return bytes(out)


def _link(link: Link) -> bytes:
    # The SDK leaves a link's trace_state out.
    context = link.context
    out = bytearray(b"\x0a\x10")
    out += context.trace_id.to_bytes(16, "big")
    out += b"\x12\x08"
    out += context.span_id.to_bytes(8, "big")
    _attributes(out, b"\x22", link.attributes)
    _uint(out, b"\x28", link.dropped_attributes)
    out += _LINK_FLAGS_REMOTE if context.is_remote else _LINK_FLAGS_LOCAL
    return bytes(out)


def _status(status: Status) -> bytes:
    """The status field, present even when unset (code 0, no message)."""
    if not status.description:
        return _STATUS_WITHOUT_MESSAGE[status.status_code]
    body = bytearray()
    _string(body, b"\x12", status.description)
    _uint(body, b"\x18", status.status_code.value)
    return b"\x7a" + _varint(len(body)) + body


def _log_record(record: ReadableLogRecord) -> bytes:
    log = record.log_record
    out = bytearray()
    if log.timestamp:
        out += b"\x09"
        out += _fixed64(log.timestamp)
    # An int severity (not a SeverityNumber) has no .value: the SDK leaves it out.
    severity: int | None = getattr(log.severity_number, "value", None)
    if severity:
        out += b"\x10"
        out += _varint(severity)
    _string(out, b"\x1a", log.severity_text)
    # The body is always set, so even a None body is an (empty) AnyValue field.
    body = _any_value(log.body)
    out += b"\x2a"
    out += _varint(len(body))
    out += body
    _attributes(out, b"\x32", log.attributes)
    _uint(out, b"\x38", record.dropped_attributes)
    flags = int(log.trace_flags)
    if flags:
        out += b"\x45"
        out += _fixed32(flags)
    # A zero id means no trace context; None is an error, as in the SDK.
    if log.trace_id != 0:
        out += b"\x4a\x10"
        out += log.trace_id.to_bytes(16, "big")
    if log.span_id != 0:
        out += b"\x52\x08"
        out += log.span_id.to_bytes(8, "big")
    if log.observed_timestamp:
        out += b"\x59"
        out += _fixed64(log.observed_timestamp)
    _string(out, b"\x62", log.event_name)
    return bytes(out)


def _string(out: bytearray, tag: bytes, value: str | None) -> None:
    if value:
        encoded = value.encode()
        out += tag
        out += _varint(len(encoded))
        out += encoded


def _uint(out: bytearray, tag: bytes, value: int) -> None:
    if value:
        out += tag
        out += _varint(value)


def _attributes(out: bytearray, tag: bytes, attributes: Mapping[str, Any] | None) -> None:
    # The hot loop (an evaluation has about 50 attributes): lengths below 128 are looked up
    # inline rather than through _varint.
    if not attributes:
        return
    for key, value in attributes.items():
        try:
            head = _KEYS.get(key) or _attribute_key_head(key)
            body = _any_value(value)
        except Exception as error:
            # As the SDK does: one attribute that cannot be encoded does not lose the rest.
            _logger.exception("Failed to encode key %s: %s", key, error)
            continue
        size = len(body)
        key_value = head + (_ONE_BYTE[size] if size < 0x80 else _varint(size)) + body
        size = len(key_value)
        out += tag
        out += _ONE_BYTE[size] if size < 0x80 else _varint(size)
        out += key_value


def _attribute_key_head(key: str) -> bytes:
    # Only attribute keys are kept: the keys of a map in a log body can be anything.
    head = _key_head(key)
    if len(_KEYS) < _KEYS_MAX:
        _KEYS[key] = head
    return head


def _key_head(key: str) -> bytes:
    """A KeyValue's key field (none for "") and the tag of its value field."""
    encoded = key.encode()
    return (b"\x0a" + _varint(len(encoded)) + encoded if encoded else b"") + b"\x12"


def _any_value(value: Any) -> bytes:
    """An AnyValue message's body. Its value is a oneof, whose members are written even at
    their default (0, "", False); None is the empty message."""
    # Exact types first: the common case, and disjoint, so their order does not matter.
    kind = type(value)
    if kind is str:
        encoded: bytes = value.encode()
        size = len(encoded)
        return b"\x0a" + (_ONE_BYTE[size] if size < 0x80 else _varint(size)) + encoded
    if kind is int:
        return _SMALL_INT[value] if 0 <= value < 0x80 else _int_value(value)
    if kind is float:
        return b"\x21" + _double(value)
    if kind is bool:
        return b"\x10\x01" if value else b"\x10\x00"
    if kind is tuple or kind is list:
        return _array_value(value)
    # Subclasses and other containers, in the SDK's order: bool before int, str and bytes
    # before Sequence.
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        # str.encode, not str(): a str enum's __str__ is not its value.
        encoded = str.encode(value)
        return b"\x0a" + _varint(len(encoded)) + encoded
    if isinstance(value, int):
        return _int_value(value)
    if isinstance(value, float):
        return b"\x21" + _double(value)
    if isinstance(value, bytes):
        return b"\x3a" + _varint(len(value)) + value
    if isinstance(value, Sequence):
        return _array_value(value)
    if isinstance(value, Mapping):
        return _kvlist_value(value)
    raise TypeError(f"Invalid type {type(value)} of value {value}")


def _int_value(value: int) -> bytes:
    # int64 on the wire: a negative is its 64-bit two's complement, ten bytes as a varint.
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"Value out of range: {value}")
    return b"\x18" + _varint(value & _MASK64)


def _array_value(values: Sequence[Any]) -> bytes:
    out = bytearray()
    for value in values:
        body = _any_value(value)
        out += b"\x0a"
        out += _varint(len(body))
        out += body
    return b"\x2a" + _varint(len(out)) + out


def _kvlist_value(values: Mapping[Any, Any]) -> bytes:
    # Unlike attributes, a value in a map that fails fails the whole record, as in the SDK.
    out = bytearray()
    for key, value in values.items():
        body = _any_value(value)
        key_value = _key_head(str(key)) + _varint(len(body)) + body
        out += b"\x0a"
        out += _varint(len(key_value))
        out += key_value
    return b"\x32" + _varint(len(out)) + out
