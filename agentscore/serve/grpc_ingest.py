"""OTLP/gRPC ingest: the trace service's `Export` method on its own port (4317 by default),
beside OTLP/HTTP, so the Collector's `loadbalancing` exporter and gRPC exporters reach the
service directly.

A request takes the same path as an OTLP/HTTP one (`ServeApp.take`: the same reading of the
same protobuf bytes, the same forward), and is answered OK only once it is on disk. Refusals
say whether to try again the way OTLP exporters read them: RESOURCE_EXHAUSTED (queue or
open-trace bytes full) and UNAVAILABLE (draining, disk, forward backend) carry a
`google.rpc.RetryInfo`, both as the status details the Collector reads and as the
`google.rpc.retryinfo-bin` trailer the Python exporter reads; INVALID_ARGUMENT,
UNAUTHENTICATED and a request larger than the open-trace budget (RESOURCE_EXHAUSTED without
retry information) are final. The ingest token, TLS certificate and byte bounds are the
HTTP side's.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NoReturn

import grpc
import structlog
from google.protobuf.any_pb2 import Any as AnyMessage
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)

from agentscore._wire.otlp_in import PROTOBUF, OtlpDecodeError
from agentscore.errors import ConfigurationError
from agentscore.serve.app import ServeApp
from agentscore.serve.auth import bearer_allowed
from agentscore.serve.forward import ForwardError
from agentscore.serve.ingest import OverBudget
from agentscore.serve.stats import ServiceStats

__all__ = ["EXPORT_METHOD", "GrpcIngest"]

EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
_EMPTY_RESPONSE = ExportTraceServiceResponse().SerializeToString()

_log = structlog.get_logger("agentscore.serve")


class GrpcIngest:
    """Bound at construction (a taken port is a `ConfigurationError` before anything starts);
    serves between `start()` and `stop()`."""

    def __init__(
        self,
        app: ServeApp,
        stats: ServiceStats,
        *,
        host: str,
        port: int,
        tls: tuple[str, str] | None = None,
        threads: int = 8,
        max_calls: int = 64,
    ) -> None:
        self._app = app
        self._stats = stats
        # No (de)serializers: bytes in, bytes out, read by the same code as OTLP/HTTP bodies.
        handler: grpc.RpcMethodHandler[bytes, bytes] = grpc.unary_unary_rpc_method_handler(
            self._export
        )
        self._server = grpc.server(
            ThreadPoolExecutor(max_workers=threads, thread_name_prefix="agentscore-grpc"),
            handlers=[grpc.method_handlers_generic_handler(_SERVICE, {"Export": handler})],
            # Calls past `max_calls` (each may hold a message of up to `max_body`) are refused
            # by gRPC itself, so waiting calls cannot take the memory; exporters send one
            # call at a time, the Collector one per sending-queue consumer (10 by default).
            maximum_concurrent_rpcs=max_calls,
            options=[
                ("grpc.max_receive_message_length", app.max_body),
                # gRPC shares a port with another process by default on Linux: a second
                # service on the same port would take half the traffic, silently.
                ("grpc.so_reuseport", 0),
            ],
        )
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            if tls is None:
                self.port = self._server.add_insecure_port(address)
            else:  # the certificate and key of --ssl-certfile / --ssl-keyfile
                self.port = self._server.add_secure_port(address, _credentials(*tls))
        except RuntimeError as exc:
            raise ConfigurationError(f"--grpc-port: cannot listen on {address} ({exc})") from None

    def start(self) -> None:
        self._server.start()

    def stop(self, grace: float) -> None:
        """Finish the calls in progress (up to `grace` seconds), refuse new ones."""
        self._server.stop(grace).wait()

    def _export(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        # Two values are as good as none, as over HTTP (which one would count?).
        values = [v for k, v in context.invocation_metadata() if k == "authorization"]
        presented = values[0] if len(values) == 1 else None
        if not bearer_allowed(self._app.ingest_token, presented):
            self._stats.add("requests_unauthorized")
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        reason = self._app.refusal(len(request))
        if reason is not None:
            self._stats.add("requests_rejected")
            draining = reason == "draining"
            code = grpc.StatusCode.UNAVAILABLE if draining else grpc.StatusCode.RESOURCE_EXHAUSTED
            self._abort_retryable(context, code, reason)
        failure: str | None = None
        try:
            self._app.take(request, PROTOBUF, "")  # gRPC has already decompressed it
        except OtlpDecodeError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except OverBudget as exc:
            # Larger than the whole open-trace budget: without retry information, which
            # tells exporters not to send it again.
            if exc.never:
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
            self._stats.add("requests_rejected")
            self._abort_retryable(context, grpc.StatusCode.RESOURCE_EXHAUSTED, "open traces full")
        except ForwardError as exc:
            self._stats.add("forward_failures")
            failure = str(exc)
        except Exception as exc:  # the disk, most likely: the exporter should try again
            _log.error("serve_ingest_failed", error_type=type(exc).__name__, transport="grpc")
            failure = type(exc).__name__
        if failure is not None:
            self._abort_retryable(context, grpc.StatusCode.UNAVAILABLE, failure)
        return _EMPTY_RESPONSE

    def _abort_retryable(
        self, context: grpc.ServicerContext, code: grpc.StatusCode, message: str
    ) -> NoReturn:
        info = RetryInfo(retry_delay=Duration(seconds=self._app.retry_after))
        detail = AnyMessage()
        detail.Pack(info)
        status = Status(code=code.value[0], message=message, details=[detail])
        context.set_trailing_metadata(
            (
                ("grpc-status-details-bin", status.SerializeToString()),
                ("google.rpc.retryinfo-bin", info.SerializeToString()),
            )
        )
        context.abort(code, message)


def _credentials(certificate: str, key: str) -> grpc.ServerCredentials:
    try:
        pair = (Path(key).read_bytes(), Path(certificate).read_bytes())
    except OSError as exc:  # the path only: the key's bytes stay out of messages
        problem = f"{exc.strerror}: {exc.filename}"
        raise ConfigurationError(f"--ssl-certfile/--ssl-keyfile: {problem}") from None
    return grpc.ssl_server_credentials([pair])
