"""Numbers a writer computes from the context rather than copies from it: a margin ("won by
7" from 105 and 98), a total ("combined for 40 points"), a share ("shot 50 percent" from 5 of
10), a count of listed things ("three players"). The local judge cannot check arithmetic or
counting, so a verdict that rests on such a number is never one it decides alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from agentscore.judges.local._numbers import Number

__all__ = ["MAX_OPERANDS", "SMALL_COUNT", "derivable", "next_year"]

# Counts and ranks up to here are mostly counted or ranked from the context ("two goals",
# "third straight win"), not copied, and the context rarely writes them down.
SMALL_COUNT = 12
# Operands looked at: a table or box score has a few hundred numbers; beyond that the pairs
# a margin could come from are too many for a match to mean anything.
MAX_OPERANDS = 400
_SHARE_OPERANDS = 60  # shares are compared pair by pair, so on fewer numbers


def derivable(number: Number, operands: Sequence[Number]) -> bool:
    """Whether `number` is a small count or rank, or the sum, difference or percentage share
    of two of `operands` (the numbers of the context near the claim's evidence)."""
    if number.kind in ("num", "ord") and number.high is None and 0 <= number.value <= SMALL_COUNT:
        return True
    if number.kind in ("date", "year") or len(operands) > MAX_OPERANDS:
        return False
    values = sorted({n.value for n in operands if n.kind not in ("date", "year")})
    present = set(values)
    target = number.value
    for a in values:
        # Two different numbers: "60 days" is not derived from "30 days" and itself.
        for b in (target - a, a - target, a + target):
            if not math.isclose(a, b) and _has(present, b):
                return True
    if number.kind == "pct":
        few = values[:_SHARE_OPERANDS]
        return any(b and abs(100 * a / b - target) < 0.5 for a in few for b in few if a < b)
    return False


def next_year(number: Number, operands: Sequence[Number]) -> bool:
    """Whether `number` is a year next to one of `operands` ("the following season", "within
    a year of"): a writer's step from a year the context gives, when the context gives none
    for this fact. Not for a year the evidence gives otherwise: that is a contradiction."""
    return number.kind == "year" and any(
        n.kind == "year" and abs(n.value - number.value) == 1 for n in operands
    )


def _has(values: set[float], value: float) -> bool:
    # Decimal sums carry float noise (0.1 + 0.2): compare at a precision numbers are written in.
    return value in values or round(value, 6) in values
