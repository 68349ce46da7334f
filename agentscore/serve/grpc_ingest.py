"""OTLP/gRPC ingest: the trace service's `Export` method on its own port (4319 by default:
4317 is a Collector's and Phoenix's, often on the same host), beside OTLP/HTTP, so the
Collector's `loadbalancing` exporter and gRPC exporters reach the service directly.

A request takes the same path as an OTLP/HTTP one (`ServeApp.take`: the same reading of the
same protobuf bytes, the same forward), and is answered OK only once it is on disk. Refusals
say whether to try again the way OTLP exporters read them: RESOURCE_EXHAUSTED (queue or
open-trace bytes full) and UNAVAILABLE (draining, disk, forward backend) carry a
`google.rpc.RetryInfo`, both as the status details the Collector reads and as the
`google.rpc.retryinfo-bin` trailer the Python exporter reads; INVALID_ARGUMENT,
UNAUTHENTICATED and a request larger than the open-trace budget (RESOURCE_EXHAUSTED without
retry information) are final. The ingest token, TLS certificate and byte bounds are the
HTTP side's.

Nothing of a call is read before its credentials pass: the token is checked from the call's
metadata on gRPC's polling thread, and a call without it is answered UNAUTHENTICATED while
its message is still unread (the method is served as client-streaming so that gRPC hands
over the call before its message; a call carrying more than one message is
INVALID_ARGUMENT). Only calls that passed take one of the call slots (`CallSlots`); a call
finding none free is RESOURCE_EXHAUSTED with retry information. Connections are bounded in
number, in the time they may take to open (`handshake_timeout`), to sit idle and to live.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, TypeAlias

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
from agentscore.serve.call_slots import CallSlots
from agentscore.serve.forward import ForwardError
from agentscore.serve.ingest import OverBudget
from agentscore.serve.listen import check_port, grpc_endpoint, log_listening
from agentscore.serve.stats import ServiceStats

__all__ = ["EXPORT_METHOD", "GrpcIngest", "GrpcLimits"]

EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
_EMPTY_RESPONSE = ExportTraceServiceResponse().SerializeToString()

_log = structlog.get_logger("agentscore.serve")

# Subscripted only in grpcio's type stubs: a string, so nothing evaluates it at run time.
Behavior: TypeAlias = "grpc.RpcMethodHandler[bytes, bytes]"


@dataclass(frozen=True, slots=True)
class GrpcLimits:
    """What clients may hold. Times in seconds."""

    max_calls: int = 64  # calls read or processed at once
    max_connections: int = 1000
    handshake_timeout: float = 10.0  # to open a connection: TLS and HTTP/2 settings
    idle_timeout: float = 5.0  # a connection with no call in progress
    max_age: float = 600.0  # then its calls have `grace` to finish before it closes
    grace: float = 30.0


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
        limits: GrpcLimits | None = None,
    ) -> None:
        limits = limits or GrpcLimits()
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        # gRPC says only "Failed to bind" (and logs an error line of its own): a taken port
        # is found first, and said in the terms of the option that moves it.
        check_port(host, port, "--grpc-port")
        self._app = app
        self._stats = stats
        self._slots = CallSlots(limits.max_calls)
        # No (de)serializers: bytes in, bytes out, read by the same code as OTLP/HTTP bodies.
        self._accepted: Behavior = grpc.stream_unary_rpc_method_handler(self._export)
        self._unauthenticated: Behavior = grpc.stream_unary_rpc_method_handler(
            _refuse_unauthenticated
        )
        self._server = grpc.server(
            ThreadPoolExecutor(max_workers=threads, thread_name_prefix="agentscore-grpc"),
            handlers=[_Dispatch(self._handler)],
            options=[
                ("grpc.max_receive_message_length", app.max_body),
                # gRPC shares a port with another process by default on Linux: a second
                # service on the same port would take half the traffic, silently.
                ("grpc.so_reuseport", 0),
                # Past it a new connection is closed as soon as it is accepted, so its
                # descriptor comes back at once.
                ("grpc.max_allowed_incoming_connections", limits.max_connections),
                ("grpc.server_handshake_timeout_ms", _ms(limits.handshake_timeout)),
                ("grpc.max_connection_idle_ms", _ms(limits.idle_timeout)),
                ("grpc.max_connection_age_ms", _ms(limits.max_age)),
                ("grpc.max_connection_age_grace_ms", _ms(limits.grace)),
                # One connection needs no more streams than there are call slots.
                ("grpc.max_concurrent_streams", limits.max_calls),
                # Window growth by bandwidth-delay probing lets a peer push megabytes of a
                # message before anyone asked for it, its token unchecked; without it a call
                # sends at most HTTP/2's initial 64 KiB window ahead of being read.
                ("grpc.http2.bdp_probe", 0),
            ],
        )
        try:
            if tls is None:
                self.port = self._server.add_insecure_port(address)
            else:  # the certificate and key of --ssl-certfile / --ssl-keyfile
                self.port = self._server.add_secure_port(address, _credentials(*tls))
        except RuntimeError as exc:
            check_port(host, port, "--grpc-port")  # taken since: say so
            raise ConfigurationError(f"--grpc-port: cannot listen on {address} ({exc})") from None
        self.endpoint = grpc_endpoint(host, self.port, tls=tls is not None)

    def start(self) -> None:
        self._server.start()
        log_listening("OTLP/gRPC", self.endpoint)

    def stop(self, grace: float) -> None:
        """Finish the calls in progress (up to `grace` seconds), refuse new ones."""
        self._server.stop(grace).wait()

    def _handler(self, details: grpc.HandlerCallDetails) -> Behavior | None:
        """Runs on gRPC's polling thread, before anything of the call's message is read:
        it must not wait."""
        if details.method != EXPORT_METHOD:
            return None
        # Two values are as good as none, as over HTTP (which one would count?).
        values = [v for k, v in details.invocation_metadata if k == "authorization"]
        presented = values[0] if len(values) == 1 else None
        if not bearer_allowed(self._app.ingest_token, presented):
            self._stats.add("requests_unauthorized")
            return self._unauthenticated
        if not self._slots.take():
            self._stats.add("requests_rejected")
            delay = self._slots.retry_delay()
            return grpc.stream_unary_rpc_method_handler(
                lambda _requests, context: _abort_retryable(
                    context, grpc.StatusCode.RESOURCE_EXHAUSTED, "busy: no call slot", delay
                )
            )
        return self._accepted

    def _export(self, requests: Iterator[bytes], context: grpc.ServicerContext) -> bytes:
        started = time.monotonic()
        try:
            request = next(requests, None)
            if request is None or next(requests, None) is not None:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "Export takes one message")
            return self._take(request, context)
        finally:
            self._slots.give_back(time.monotonic() - started)

    def _take(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        retry_after = float(self._app.retry_after)
        reason = self._app.refusal(len(request))
        if reason is not None:
            self._stats.add("requests_rejected")
            draining = reason == "draining"
            code = grpc.StatusCode.UNAVAILABLE if draining else grpc.StatusCode.RESOURCE_EXHAUSTED
            _abort_retryable(context, code, reason, retry_after)
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
            _abort_retryable(
                context, grpc.StatusCode.RESOURCE_EXHAUSTED, "open traces full", retry_after
            )
        except ForwardError as exc:
            self._stats.add("forward_failures")
            failure = str(exc)
        except Exception as exc:  # the disk, most likely: the exporter should try again
            _log.error("serve_ingest_failed", error_type=type(exc).__name__, transport="grpc")
            failure = type(exc).__name__
        if failure is not None:
            _abort_retryable(context, grpc.StatusCode.UNAVAILABLE, failure, retry_after)
        return _EMPTY_RESPONSE


class _Dispatch(grpc.GenericRpcHandler):
    def __init__(self, handler: Callable[[grpc.HandlerCallDetails], Behavior | None]) -> None:
        self._handler = handler

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Behavior | None:
        return self._handler(handler_call_details)


def _refuse_unauthenticated(_requests: Iterator[bytes], context: grpc.ServicerContext) -> bytes:
    context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")


def _abort_retryable(
    context: grpc.ServicerContext, code: grpc.StatusCode, message: str, delay: float
) -> NoReturn:
    duration = Duration()
    duration.FromNanoseconds(round(delay * 1e9))
    info = RetryInfo(retry_delay=duration)
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


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _credentials(certificate: str, key: str) -> grpc.ServerCredentials:
    try:
        pair = (Path(key).read_bytes(), Path(certificate).read_bytes())
    except OSError as exc:  # the path only: the key's bytes stay out of messages
        problem = f"{exc.strerror}: {exc.filename}"
        raise ConfigurationError(f"--ssl-certfile/--ssl-keyfile: {problem}") from None
    return grpc.ssl_server_credentials([pair])
