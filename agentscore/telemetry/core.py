"""Where agentscore's spans, log records and metrics go: the global providers or yours."""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from opentelemetry import _logs, metrics, trace
from opentelemetry.metrics import (
    CallbackOptions,
    Counter,
    Histogram,
    Meter,
    MeterProvider,
    Observation,
)
from opentelemetry.trace import Tracer, TracerProvider

__all__ = [
    "AGENTSCORE_SCOPE",
    "CAPTURE_CONTENT_ENV",
    "GAUGES",
    "Telemetry",
    "current_telemetry",
    "reset_telemetry",
    "scoring_in_progress",
    "scoring_scope",
    "use_telemetry",
]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
AGENTSCORE_SCOPE = "agentscore"
_VERSION = "0.1.0"


def _capture_from_env() -> bool:
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in ("1", "true", "yes")


@dataclass(slots=True)
class _Instruments:
    scores: Histogram
    runs: Counter
    cascade_runs: Counter
    cascade_claims: Counter


@dataclass(slots=True)
class Telemetry:
    """Providers for agentscore's telemetry; None means the global one (never replaced).

    `capture_content`: put message content (prompts, answers, tool arguments and results,
    scorer explanations that quote the answer) on spans and log records. Off unless set here
    or by OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
    """

    tracer_provider: TracerProvider | None = None
    logger_provider: _logs.LoggerProvider | None = None
    meter_provider: MeterProvider | None = None
    capture_content: bool = field(default_factory=_capture_from_env)
    tracer: Tracer = field(init=False, repr=False)
    logger: _logs.Logger = field(init=False, repr=False)
    _instruments: _Instruments | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        # Proxies when the globals are not set yet: they follow a provider installed later.
        self.tracer = trace.get_tracer(
            AGENTSCORE_SCOPE, _VERSION, tracer_provider=self.tracer_provider
        )
        self.logger = _logs.get_logger(
            AGENTSCORE_SCOPE, _VERSION, logger_provider=self.logger_provider
        )

    @property
    def instruments(self) -> _Instruments:
        if self._instruments is None:
            meter: Meter = metrics.get_meter(AGENTSCORE_SCOPE, meter_provider=self.meter_provider)
            self._instruments = _Instruments(
                scores=meter.create_histogram(
                    "gen_ai.evaluation.score",
                    description="Scores of live evaluations, per scorer and agent",
                ),
                runs=meter.create_counter(
                    "agentscore.evaluation.runs",
                    unit="{run}",
                    description="Sampled scorer runs by outcome: scored, no_context, failed, "
                    "dropped",
                ),
                cascade_runs=meter.create_counter(
                    "agentscore.cascade.runs",
                    unit="{run}",
                    description="Runs a cascade judge answered, by route (local, escalated, ...)",
                ),
                cascade_claims=meter.create_counter(
                    "agentscore.cascade.claims",
                    unit="{claim}",
                    description="Claims a cascade judge decided, by who decided them",
                ),
            )
            for name, (unit, description, sources) in GAUGES.items():
                meter.create_observable_gauge(
                    name, [_reader(sources)], unit=unit, description=description
                )
        return self._instruments


Observer = Callable[[], Iterable[Observation]]
# Gauges read when metrics are collected, fed by the layers that hold the state (a cascade
# judge adds its observer at import); telemetry imports none of them.
GAUGES: dict[str, tuple[str, str, list[Observer]]] = {
    "agentscore.cascade.agreement": (
        "1",
        "Share of a cascade's confident local verdicts the LLM agreed with, per verdict "
        "kind, over its rolling window",
        [],
    ),
    "agentscore.cascade.local_deciding": (
        "1",
        "1 while a cascade's local stage decides alone, 0 while it is paused",
        [],
    ),
}


def _reader(sources: list[Observer]) -> Callable[[CallbackOptions], Iterable[Observation]]:
    def read(options: CallbackOptions) -> Iterable[Observation]:
        return [observation for source in sources for observation in source()]

    return read


_current: contextvars.ContextVar[Telemetry | None] = contextvars.ContextVar(
    "agentscore_telemetry", default=None
)
_default = Telemetry()


def current_telemetry() -> Telemetry:
    """The telemetry of the evaluation running in this context, else the global default."""
    return _current.get() or _default


def use_telemetry(telemetry: Telemetry) -> contextvars.Token[Telemetry | None]:
    return _current.set(telemetry)


def reset_telemetry(token: contextvars.Token[Telemetry | None]) -> None:
    _current.reset(token)


# Set while a scorer runs, in its context (and the threads it hands work to), so that the span
# processor never reads the judge's own spans as generations to score: no scoring of scoring.
_scoring: contextvars.ContextVar[bool] = contextvars.ContextVar("agentscore_scoring", default=False)


def scoring_in_progress() -> bool:
    return _scoring.get()


@contextmanager
def scoring_scope() -> Iterator[None]:
    token = _scoring.set(True)
    try:
        yield
    finally:
        _scoring.reset(token)
