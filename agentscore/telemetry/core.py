"""Where agentscore's spans, log records and metrics go: the global providers or yours."""

from __future__ import annotations

import contextvars
import functools
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import structlog
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
from pydantic import ValidationError

from agentscore.errors import ConfigurationError
from agentscore.telemetry.ledger import Ledger, ledger_for
from agentscore.telemetry.spend import SpendBudget, watch_spend
from agentscore.usage import Price

__all__ = [
    "AGENTSCORE_SCOPE",
    "CAPTURE_CONTENT_ENV",
    "GAUGES",
    "PRICES_ENV",
    "SCORE_BOUNDARIES",
    "Telemetry",
    "current_telemetry",
    "prices_from_env",
    "reset_telemetry",
    "scoring_in_progress",
    "scoring_scope",
    "use_telemetry",
]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
AGENTSCORE_SCOPE = "agentscore"
PRICES_ENV = "AGENTSCORE_JUDGE_PRICES"
_VERSION = "0.1.0"
_log = structlog.get_logger("agentscore.telemetry")

# The score histogram's buckets: tenths of the scales scores are given on (a fraction, 0 to
# 10, a percentage). A histogram has one set of buckets whatever the attributes, and the SDK
# keeps the first set advised for a name, so it cannot follow each scorer's own `scale`: a
# score on another scale falls into coarser buckets, or into a View of your own (a View wins
# over the advice).
SCORE_BOUNDARIES: tuple[float, ...] = tuple(
    sorted({round(scale * tenth / 10, 6) for scale in (1, 10, 100) for tenth in range(11)})
)


def _capture_from_env() -> bool:
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in ("1", "true", "yes")


def prices_from_env() -> dict[str, Price]:
    """AGENTSCORE_JUDGE_PRICES: a JSON object of model -> [input, output] per million tokens
    (or {"input_per_million": ..., "output_per_million": ...}); {} when unset. A value that
    does not read is logged and ignored: no price means no cost, never a wrong one."""
    return dict(_read_prices(os.environ.get(PRICES_ENV, "")))


@functools.cache
def _read_prices(text: str) -> tuple[tuple[str, Price], ...]:
    if not text.strip():
        return ()
    try:
        table = json.loads(text)
        if not isinstance(table, dict):
            raise ValueError("not a JSON object")
        return tuple((str(model), _price(value)) for model, value in table.items())
    except (ValueError, ValidationError, TypeError) as exc:
        _log.error("judge_prices_unreadable", variable=PRICES_ENV, error_type=type(exc).__name__)
        return ()


def _price(value: object) -> Price:
    if isinstance(value, Price):
        return value
    if isinstance(value, list | tuple) and len(value) == 2:
        return Price(input_per_million=value[0], output_per_million=value[1])
    return Price.model_validate(value)


def _checked_prices(prices: Mapping[str, Price]) -> dict[str, Price]:
    if not isinstance(prices, Mapping):
        raise ConfigurationError(
            f"prices must map a model name to a Price, got {type(prices).__name__}"
        )
    checked: dict[str, Price] = {}
    for model, value in prices.items():
        if not isinstance(model, str) or not model:
            raise ConfigurationError(f"prices: a model name must be a non-empty string: {model!r}")
        try:
            checked[model] = _price(value)
        except (ValidationError, TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"prices[{model!r}] must be a Price(input_per_million=..., "
                "output_per_million=...) of numbers >= 0"
            ) from exc
    return checked


@dataclass(slots=True)
class _Instruments:
    scores: Histogram
    delayed: Counter
    judge_requests: Counter
    judge_tokens: Counter
    judge_cost: Counter
    cascade_runs: Counter
    cascade_claims: Counter


@dataclass(slots=True)
class Telemetry:
    """Providers for agentscore's telemetry; None means the global one (never replaced).

    `capture_content`: put message content (prompts, answers, tool arguments and results,
    scorer explanations that quote the answer) on spans and log records. Off unless set here
    or by OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.

    `prices`: what each judge model's tokens cost, by the judge's model name:
    `{"gpt-4o-mini": Price(input_per_million=0.15, output_per_million=0.6)}`. Each result
    then carries its `cost`, also on its evaluation span and the `agentscore.judge.cost`
    counter. Unset: read from AGENTSCORE_JUDGE_PRICES (JSON), else none. A model without a
    price has no cost.

    `spend`: a `SpendBudget` (per clock hour, per day, in the prices' currency) shared by
    every evaluation that goes here: once a window's budget is spent, runs are no longer
    offered to judges that have a price (counted `over_budget`) until the window ends.
    """

    tracer_provider: TracerProvider | None = None
    logger_provider: _logs.LoggerProvider | None = None
    meter_provider: MeterProvider | None = None
    capture_content: bool = field(default_factory=_capture_from_env)
    prices: Mapping[str, Price] = field(default_factory=prices_from_env)
    spend: SpendBudget | None = None
    tracer: Tracer = field(init=False, repr=False)
    logger: _logs.Logger = field(init=False, repr=False)
    ledger: Ledger = field(init=False, repr=False)
    _instruments: _Instruments | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.prices = _checked_prices(self.prices)
        self.ledger = ledger_for(self.meter_provider, AGENTSCORE_SCOPE)
        if self.spend is not None:
            if not isinstance(self.spend, SpendBudget):
                raise ConfigurationError(
                    f"spend must be a SpendBudget, got {type(self.spend).__name__}"
                )
            watch_spend(self.meter_provider, self.spend, AGENTSCORE_SCOPE)
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
                    explicit_bucket_boundaries_advisory=SCORE_BOUNDARIES,
                ),
                delayed=meter.create_counter(
                    "agentscore.evaluation.delayed",
                    unit="{attempt}",
                    description="Attempts whose judge failed for a passing reason: the run is "
                    "tried again and ends as one of the runs' outcomes",
                ),
                judge_requests=meter.create_counter(
                    "agentscore.judge.requests",
                    unit="{request}",
                    description="Requests sent to judge models, per scorer and model",
                ),
                judge_tokens=meter.create_counter(
                    "agentscore.judge.tokens",
                    unit="{token}",
                    description="Judge tokens by gen_ai.token.type (input, output), per "
                    "scorer and model",
                ),
                judge_cost=meter.create_counter(
                    "agentscore.judge.cost",
                    unit="{cost}",
                    description="What judge requests cost at the prices set, in their "
                    "currency, per scorer and model",
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
