"""Validation of numeric options at construction, so a wrong one is a `ConfigurationError`
naming the option, not a `TypeError` (or a failure of every run) later."""

from __future__ import annotations

import math

from agentscore.errors import ConfigurationError

__all__ = ["check_number"]


def check_number(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    integer: bool = False,
) -> None:
    """Raise `ConfigurationError` unless `value` is a finite int (or float, unless `integer`)
    in [low, high], or (low, high] with `open_low`."""
    kind = "an integer" if integer else "a number"
    # bool is an int to Python, but `max_retries=True` is a mistake, not 1.
    allowed = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, allowed):
        raise ConfigurationError(f"{name} must be {kind}, not {type(value).__name__}")
    if not math.isfinite(value):
        raise ConfigurationError(f"{name} must be finite, got {value!r}")
    if low is not None and (value <= low if open_low else value < low):
        bound = "greater than" if open_low else "at least"
        raise ConfigurationError(f"{name} must be {bound} {low:g}, got {value!r}")
    if high is not None and value > high:
        raise ConfigurationError(f"{name} must be at most {high:g}, got {value!r}")
