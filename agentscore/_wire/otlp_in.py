"""OTLP in: trace export requests (OTLP/HTTP protobuf or JSON, optionally gzip or deflate)
decoded by OpenTelemetry's own messages (`opentelemetry-proto`) into the caller's span
records. Read by `agentscore serve` (HTTP and gRPC ingest) and `agentscore eval --traces`."""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterator, Mapping
from typing import Any, Protocol, TypeVar

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from agentscore.errors import AgentScoreError

__all__ = [
    "JSON",
    "PROTOBUF",
    "OtlpDecodeError",
    "SpanFactory",
    "decode_traces",
    "success_response",
]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# OTLP span flags: bit 8 says whether bit 9 (the parent is remote) is known.
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200
_ID_FIELDS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


_Record = TypeVar("_Record", covariant=True)


class SpanFactory(Protocol[_Record]):
    """Makes the caller's record of one span (`agentscore.spans.SpanRecord` has this shape)."""

    def __call__(
        self,
        *,
        trace_id: int,
        span_id: int,
        parent_span_id: int | None,
        name: str,
        attributes: Mapping[str, Any],
        end_time: int,
        parent_is_remote: bool,
        scope: str,
        start_time: int,
        error: str | None,
    ) -> _Record: ...


class OtlpDecodeError(AgentScoreError, ValueError):
    """The request body is not an OTLP trace export this service can read (answered 400)."""


def decode_traces(
    body: bytes,
    content_type: str,
    content_encoding: str = "",
    *,
    max_size: int,
    into: SpanFactory[_Record],
) -> list[_Record]:
    """Every span of an `ExportTraceServiceRequest` body, in the order it was sent, made by
    `into`."""
    raw = _decompress(body, content_encoding.strip().lower(), max_size)
    media = content_type.split(";")[0].strip().lower()
    if media not in (PROTOBUF, JSON):
        raise OtlpDecodeError(f"unsupported content type {media!r}")
    request = ExportTraceServiceRequest()
    try:
        if media == PROTOBUF:
            request.ParseFromString(raw)
        else:
            json_format.ParseDict(_hex_ids_to_base64(json.loads(raw)), request, True)
        return list(_records(request, into))
    except (DecodeError, json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        # A 400, not a 503: retrying a body that cannot be read would never end.
        raise OtlpDecodeError(f"unreadable OTLP {media} body: {type(exc).__name__}") from exc


def success_response(content_type: str) -> tuple[bytes, str]:
    """The empty `ExportTraceServiceResponse`, encoded like the request was."""
    if content_type.split(";")[0].strip().lower() == JSON:
        return b"{}", JSON
    return ExportTraceServiceResponse().SerializeToString(), PROTOBUF


def _decompress(body: bytes, encoding: str, max_size: int) -> bytes:
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise OtlpDecodeError(f"unsupported content encoding {encoding!r}")
    # Bounded: a small gzip bomb must not take the service's memory.
    wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
    decompressor = zlib.decompressobj(wbits)
    try:
        raw = decompressor.decompress(body, max_size + 1)
    except zlib.error as exc:
        raise OtlpDecodeError(f"unreadable {encoding} body") from exc
    if len(raw) > max_size:
        raise OtlpDecodeError(f"body larger than {max_size} bytes once decompressed")
    return raw


def _hex_ids_to_base64(value: Any) -> Any:
    # OTLP/JSON writes ids as hex; the protobuf JSON mapping expects base64 bytes.
    if isinstance(value, list):
        return [_hex_ids_to_base64(item) for item in value]
    if not isinstance(value, dict):
        return value
    converted: dict[str, Any] = {}
    for key, item in value.items():
        if key in _ID_FIELDS and isinstance(item, str):
            converted[key] = base64.b64encode(bytes.fromhex(item)).decode()
        else:
            converted[key] = _hex_ids_to_base64(item)
    return converted


def _records(request: ExportTraceServiceRequest, into: SpanFactory[_Record]) -> Iterator[_Record]:
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            for span in scope_spans.spans:
                parent = int.from_bytes(span.parent_span_id, "big") if span.parent_span_id else 0
                yield into(
                    trace_id=int.from_bytes(span.trace_id, "big"),
                    span_id=int.from_bytes(span.span_id, "big"),
                    parent_span_id=parent or None,
                    name=span.name,
                    attributes={kv.key: _value(kv.value) for kv in span.attributes},
                    end_time=span.end_time_unix_nano,
                    parent_is_remote=bool(
                        parent and span.flags & _HAS_IS_REMOTE and span.flags & _IS_REMOTE
                    ),
                    scope=scope,
                    start_time=span.start_time_unix_nano,
                    error=_error(span),
                )


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(_value(item) for item in value.array_value.values)
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, kind)


def _error(span: Span) -> str | None:
    """The error a span's status reports (its description, else its `error.type`)."""
    if span.status.code != Status.STATUS_CODE_ERROR:
        return None
    if span.status.message:
        return span.status.message[:1000]
    for attribute in span.attributes:
        if attribute.key == "error.type":
            return str(_value(attribute.value))[:1000]
    return "error"
