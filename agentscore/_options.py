"""Validation of options where they are taken, so a wrong one is a `ConfigurationError`
naming the option, not a `TypeError` (or a failure of every run, or a silent misreading such
as `user_facts="no"` read as true) later."""

from __future__ import annotations

import difflib
import math
from collections.abc import Collection, Iterable, Mapping

from agentscore.errors import ConfigurationError

__all__ = ["check_flag", "check_known", "check_mapping", "check_number", "check_text"]


def check_flag(name: str, value: object) -> None:
    """Raise `ConfigurationError` unless `value` is a bool: "no" and 0 are not flags."""
    if not isinstance(value, bool):
        raise ConfigurationError(f"{name} must be True or False, not {type(value).__name__}")


def check_known(given: Iterable[str], known: Collection[str]) -> None:
    """Raise `ConfigurationError` naming the first option of `given` not in `known`, with the
    nearest known name: an option taken as `**options` and misspelt would be ignored."""
    for name in given:
        if name not in known:
            near = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {near[0]!r}?" if near else f"the options: {', '.join(known)}"
            raise ConfigurationError(f"unknown option {name!r}; {hint}")


def check_mapping(name: str, value: object) -> None:
    """Raise `ConfigurationError` unless `value` is None or a mapping (a dict)."""
    if value is not None and not isinstance(value, Mapping):
        raise ConfigurationError(f"{name} must be a dict (a mapping), not {type(value).__name__}")


def check_text(name: str, value: object) -> None:
    """Raise `ConfigurationError` unless `value` is None or a string."""
    if value is not None and not isinstance(value, str):
        raise ConfigurationError(f"{name} must be a string, not {type(value).__name__}")


def check_number(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    integer: bool = False,
    infinite: bool = False,
) -> None:
    """Raise `ConfigurationError` unless `value` is a finite int (or float, unless `integer`)
    in [low, high], or (low, high] with `open_low`; with `infinite`, +inf passes too."""
    kind = "an integer" if integer else "a number"
    # bool is an int to Python, but `max_retries=True` is a mistake, not 1.
    allowed = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, allowed):
        raise ConfigurationError(f"{name} must be {kind}, not {type(value).__name__}")
    if not math.isfinite(value) and not (infinite and value == math.inf):
        raise ConfigurationError(f"{name} must be finite, got {value!r}")
    if low is not None and (value <= low if open_low else value < low):
        bound = "greater than" if open_low else "at least"
        raise ConfigurationError(f"{name} must be {bound} {low:g}, got {value!r}")
    if high is not None and value > high:
        raise ConfigurationError(f"{name} must be at most {high:g}, got {value!r}")
