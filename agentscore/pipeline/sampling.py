"""Deterministic sampling on the trace id.

The decision is a pure function of the trace id (its low 64 bits, as OpenTelemetry's
TraceIdRatioBased sampler reads them), so scorers with the same rate pick the same traces, a
lower rate picks a subset of a higher one, and a retried request is sampled the same way.
"""

from __future__ import annotations

import hashlib

__all__ = ["sample_point", "sampled"]

_LOW_64_BITS = (1 << 64) - 1


def sample_point(trace_id: str | None, fallback_key: str) -> float:
    """A number in [0, 1) fixed by the trace id, or by `fallback_key` for untraced runs."""
    if trace_id:
        try:
            return (int(trace_id, 16) & _LOW_64_BITS) / (1 << 64)
        except ValueError:
            fallback_key = trace_id
    digest = hashlib.sha256(fallback_key.encode()).digest()
    return int.from_bytes(digest[:8], "big") / (1 << 64)


def sampled(rate: float, point: float) -> bool:
    return point < rate
