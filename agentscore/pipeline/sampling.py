"""Deterministic sampling on the trace id.

The decision is a pure function of the trace id (its low 64 bits, as OpenTelemetry's
TraceIdRatioBased sampler reads them), so scorers with the same rate pick the same traces, a
lower rate picks a subset of a higher one, and a retried request is sampled the same way.
"""

from __future__ import annotations

import hashlib

__all__ = ["sample_point", "sampled", "trace_point"]

_LOW_64_BITS = (1 << 64) - 1


def sample_point(trace_id: str | None, fallback_key: str) -> float:
    """A number in [0, 1] fixed by the trace id, or by `fallback_key` for untraced runs."""
    if trace_id:
        try:
            return trace_point(int(trace_id, 16))
        except ValueError:
            fallback_key = trace_id
    digest = hashlib.sha256(fallback_key.encode()).digest()
    return int.from_bytes(digest[:8], "big") / (1 << 64)


def trace_point(trace_id: int) -> float:
    """`sample_point` of a trace id as a span context holds it (an int)."""
    return (trace_id & _LOW_64_BITS) / (1 << 64)


def sampled(rate: float, point: float) -> bool:
    # A rate of 1 takes every point: the few largest 64-bit values divide to exactly 1.0.
    return rate >= 1.0 or point < rate
