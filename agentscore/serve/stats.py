"""The service's own counters: served on /healthz and exported as OpenTelemetry metrics."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from functools import partial

from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation, get_meter

__all__ = ["COUNTERS", "ServiceStats"]

COUNTERS = (
    "requests_rejected",
    "requests_unauthorized",
    "requests_timed_out",
    "spans_received",
    "generations_found",
    "generations_sampled",
    "traces_found",
    "conversations_over",
    "jobs_queued",
    "over_budget",
    "scored",
    "failed",
    "dropped",
    "delayed",
    "export_failures",
    "delete_failures",
    "forward_failures",
    "judge_requests",
    "judge_tokens",
)


class ServiceStats:
    """Monotonic counts, thread-safe; each also an `agentscore.serve.<name>` OTel counter
    (observable: read at each collection)."""

    def __init__(
        self,
        meter_provider: MeterProvider | None,
        *,
        depth: Callable[[], int],
        oldest_age: Callable[[], float],
    ) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(COUNTERS, 0)
        meter = get_meter("agentscore.serve", meter_provider=meter_provider)

        def observe(
            read: Callable[[], float],
        ) -> Callable[[CallbackOptions], Iterable[Observation]]:
            return lambda _options: [Observation(read())]

        # Read when metrics are collected, not recorded per event: a synchronous counter's
        # `add` would cost the scoring thread CPU on every score, several times a score.
        for name in COUNTERS:
            meter.create_observable_counter(
                f"agentscore.serve.{name}", [observe(partial(self._count, name))]
            )
        meter.create_observable_gauge(
            "agentscore.serve.queue.depth", [observe(depth)], unit="{row}"
        )
        meter.create_observable_gauge(
            "agentscore.serve.queue.oldest_age", [observe(oldest_age)], unit="s"
        )

    def add(self, name: str, amount: int = 1) -> None:
        if amount <= 0:
            return
        with self._lock:
            self._counts[name] += amount

    def _count(self, name: str) -> int:
        with self._lock:
            return self._counts[name]

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)
