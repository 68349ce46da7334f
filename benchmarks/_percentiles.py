"""Percentiles of latencies, and how sure a difference between two arms is.

A p99 of a few thousand Poisson requests moves by 1 to 2 ms between runs on a small machine,
so a difference of two arms' p99s means little without its spread. The arms of the latency
benchmarks run in rounds (or blocks) that share their arrivals, so rounds pair up: resampling
the same rounds for both arms (a paired bootstrap) gives an interval for the difference that
the machine's drift between rounds widens, as it should.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

__all__ = ["added_interval", "pct"]


def pct(values: Sequence[int], q: float) -> float:
    """The `q` quantile of latencies in microseconds, in milliseconds; NaN for none (an arm
    too short to hold a request)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000


def added_interval(
    base: Sequence[Sequence[int]],
    arm: Sequence[Sequence[int]],
    q: float,
    *,
    share: float = 0.9,
    resamples: int = 400,
    seed: int = 0,
) -> tuple[float, float]:
    """The central `share` interval of (arm's `q` quantile - base's), resampling paired rounds.

    `base[i]` and `arm[i]` are the latencies of round i of each arm (the same arrivals)."""
    rounds = min(len(base), len(arm))
    if rounds < 2:
        added = pct([v for r in arm for v in r], q) - pct([v for r in base for v in r], q)
        return added, added
    chooser = random.Random(seed)
    differences: list[float] = []
    for _ in range(resamples):
        picked = [chooser.randrange(rounds) for _ in range(rounds)]
        arm_values = [v for i in picked for v in arm[i]]
        base_values = [v for i in picked for v in base[i]]
        difference = pct(arm_values, q) - pct(base_values, q)
        if not math.isnan(difference):  # a resample of empty rounds only says nothing
            differences.append(difference)
    if not differences:
        return math.nan, math.nan
    differences.sort()
    tail = (1 - share) / 2
    low = differences[int(tail * (len(differences) - 1))]
    high = differences[int((1 - tail) * (len(differences) - 1))]
    return low, high
