"""The spend budget: what judging may cost per clock hour and per day, in the prices' currency.

Windows are fixed and aligned to the clock in UTC: the hour from :00 to :00, the day from
midnight to midnight. A result's cost (`ScoreResult.cost`, at `Telemetry.prices`) is charged
to every window when it comes back; once a window has spent its budget, the pipeline offers
no new run to a scorer whose judge has a price (counted `over_budget` in the ledger) until
that window ends. Runs already being judged finish and are charged, so a window can end a
little over its budget. A judge without a price costs nothing and is never held back.

The state is in memory, per budget object: a process that restarts starts its windows at 0,
and processes sharing a budget split it between them by hand.
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Final

import structlog
from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from agentscore._options import check_number
from agentscore.errors import ConfigurationError
from agentscore.usage import Price

__all__ = ["SPEND_BUDGET_METRIC", "SPEND_METRIC", "SpendBudget", "costs_money", "watch_spend"]

SPEND_METRIC: Final = "agentscore.judge.spend"
SPEND_BUDGET_METRIC: Final = "agentscore.judge.spend.budget"
WINDOW_ATTRIBUTE: Final = "agentscore.spend.window"
_HOUR, _DAY = 3600, 86400
_log = structlog.get_logger("agentscore.spend")


@dataclass(slots=True)
class _Window:
    name: str
    seconds: int
    budget: float
    start: float = -math.inf
    spent: float = 0.0

    @property
    def end(self) -> float:
        return self.start + self.seconds

    def roll(self, now: float) -> None:
        start = now - now % self.seconds  # Unix time counts UTC days of 86,400 s
        if start != self.start:
            self.start, self.spent = start, 0.0

    @property
    def reached(self) -> bool:
        return self.spent >= self.budget


class SpendBudget:
    """At most `per_hour` / `per_day` (either or both) spent on judging, in the currency of
    `Telemetry.prices`; see the module docstring. `clock` gives Unix time (tests move it)."""

    def __init__(
        self,
        per_hour: float | None = None,
        per_day: float | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if per_hour is None and per_day is None:
            raise ConfigurationError("SpendBudget needs per_hour, per_day or both")
        windows = []
        for name, seconds, budget in (("hour", _HOUR, per_hour), ("day", _DAY, per_day)):
            if budget is not None:
                check_number(f"SpendBudget per_{name}", budget, low=0, open_low=True)
                windows.append(_Window(name, seconds, float(budget)))
        self.per_hour = per_hour
        self.per_day = per_day
        self._windows = tuple(windows)
        self._clock = clock
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SpendBudget(per_hour={self.per_hour!r}, per_day={self.per_day!r})"

    def charge(self, cost: float | None) -> None:
        """Add what a result cost to every window; the first charge that reaches a window's
        budget logs `judge_spend_budget_reached`, once for that window."""
        if cost is None or not cost > 0 or not math.isfinite(cost):
            return
        reached: list[tuple[str, float, float, float]] = []
        with self._lock:
            now = self._clock()
            for window in self._windows:
                window.roll(now)
                was_reached = window.reached
                window.spent += cost
                if window.reached and not was_reached:
                    reached.append((window.name, window.budget, window.spent, window.end))
        for name, budget, spent, end in reached:  # logged outside the lock
            _log.warning(
                "judge_spend_budget_reached",
                window=name,
                budget=budget,
                spent=round(spent, 6),
                resumes_at=_iso(end),
            )

    def reached(self) -> bool:
        """True while a window's budget is spent: no new run goes to a priced judge."""
        return any(window.reached for window in self._current())

    def snapshot(self) -> dict[str, dict[str, object]]:
        """Each window: its `budget`, what it has `spent`, when it ends (`window_end`, Unix
        time) and whether its budget is `reached`."""
        return {
            window.name: {
                "budget": window.budget,
                "spent": round(window.spent, 6),
                "window_end": window.end,
                "reached": window.reached,
            }
            for window in self._current()
        }

    def _current(self) -> list[_Window]:
        """Copies of the windows, each rolled to the clock's window."""
        with self._lock:
            now = self._clock()
            for window in self._windows:
                window.roll(now)
            return [replace(window) for window in self._windows]


def costs_money(model: str | None, prices: Mapping[str, Price]) -> bool:
    """Whether a judge of this model name has a price: only those are held back by a spend
    budget (a price of zero costs nothing, so it is not held back either)."""
    price = prices.get(model) if model else None
    return price is not None and (price.input_per_million > 0 or price.output_per_million > 0)


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat().replace("+00:00", "Z")


class _Watched:
    """The spend budgets whose windows one meter provider's gauges report."""

    def __init__(self) -> None:
        self.budgets: weakref.WeakSet[SpendBudget] = weakref.WeakSet()

    def spent(self, options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(window.spent, {WINDOW_ATTRIBUTE: window.name})
            for budget in list(self.budgets)
            for window in budget._current()
        ]

    def budget(self, options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(window.budget, {WINDOW_ATTRIBUTE: window.name})
            for budget in list(self.budgets)
            for window in budget._current()
        ]


_watched: weakref.WeakKeyDictionary[MeterProvider, _Watched] = weakref.WeakKeyDictionary()
_global: _Watched | None = None
_lock = threading.Lock()


def watch_spend(meter_provider: MeterProvider | None, budget: SpendBudget, scope: str) -> None:
    """Report `budget` on `meter_provider`'s spend gauges (None: the global provider's),
    registered once per provider."""
    global _global
    with _lock:
        watched = _global if meter_provider is None else _watched.get(meter_provider)
        new = watched is None
        if watched is None:
            watched = _Watched()
            if meter_provider is None:
                _global = watched
            else:
                _watched[meter_provider] = watched
        watched.budgets.add(budget)
    if not new:
        return
    meter = metrics.get_meter(scope, meter_provider=meter_provider)
    meter.create_observable_gauge(
        SPEND_METRIC,
        [watched.spent],
        unit="{cost}",
        description="What judging has spent in the current window of the spend budget "
        "(agentscore.spend.window = hour, day), in the prices' currency",
    )
    meter.create_observable_gauge(
        SPEND_BUDGET_METRIC,
        [watched.budget],
        unit="{cost}",
        description="The spend budget of each window (agentscore.spend.window = hour, day)",
    )
