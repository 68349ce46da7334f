"""One OTLP trace export over gRPC with the body as raw bytes, as a client the service does not
control could send it."""

from __future__ import annotations

import grpc

from agentscore.serve.grpc_ingest import EXPORT_METHOD


def export_raw(
    target: str, body: bytes, metadata: tuple[tuple[str, str], ...] = ()
) -> tuple[grpc.StatusCode, grpc.Call]:
    with grpc.insecure_channel(target) as channel:
        # No serializers: bytes both ways.
        export: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(EXPORT_METHOD)
        try:
            _, call = export.with_call(body, metadata=metadata, timeout=10)
            return grpc.StatusCode.OK, call
        except grpc.RpcError as error:
            failed = error
    assert isinstance(failed, grpc.Call)  # the channel's errors are calls too
    return failed.code(), failed
