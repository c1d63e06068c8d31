"""Percentiles and summaries, computed the way the pypaimon baseline computed them."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def percentile(values: Sequence[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), so p99 of 20 values is near the max."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize(values: Sequence[float]) -> dict[str, float]:
    """n, mean, p50, p90, p99 and max of a sample (empty sample: n=0 only)."""
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "p50": percentile(values, 50),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
        "max": max(values),
    }


def window(values: Sequence[T], first: int, last: int) -> list[T]:
    """Commits first..last (1-based, inclusive) of a per-commit series."""
    return list(values[first - 1 : last])


def median_phases(timings: Sequence[dict[str, float]]) -> dict[str, float]:
    """Per phase, the median over commits; a phase missing from a commit counts as 0 ms."""
    names = sorted({name for t in timings for name in t})
    return {name: statistics.median(t.get(name, 0.0) for t in timings) for name in names} if timings else {}
