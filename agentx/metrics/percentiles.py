"""Distribution summaries: the ``P`` object of the contract (``p50, p90, p99, mean, max``).

Percentiles interpolate linearly between closest ranks (numpy's default, as ``vllm bench serve``
and AIPerf do), so figures from the three tools compare. An empty sample is unknown: every field
is ``None``, never 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

STATS = ("p50", "p90", "p99", "mean", "max")
Values = Sequence[float] | npt.NDArray[Any]


class P(TypedDict):
    p50: float | None
    p90: float | None
    p99: float | None
    mean: float | None
    max: float | None


def empty() -> P:
    return {"p50": None, "p90": None, "p99": None, "mean": None, "max": None}


def percentiles(values: Values) -> P:
    """``P`` of ``values``; all ``None`` when there are none. NaNs are dropped."""
    if len(values) == 0:
        return empty()
    a = np.asarray(values, dtype=np.float64)
    a = a[~np.isnan(a)]
    if a.size == 0:
        return empty()
    p50, p90, p99 = np.percentile(a, (50.0, 90.0, 99.0))
    return {
        "p50": float(p50),
        "p90": float(p90),
        "p99": float(p99),
        "mean": float(a.mean()),
        "max": float(a.max()),
    }


def percentile(values: Values, q: float) -> float | None:
    """One percentile (0..100) of ``values`` by the same rule; ``None`` when empty.

    Pure Python below a few hundred values: numpy's per-call overhead dominates the small
    groups of the roll-ups (thousands of sessions and seconds).
    """
    if len(values) > 256:
        a = np.asarray(values, dtype=np.float64)
        a = a[~np.isnan(a)]
        return float(np.percentile(a, q)) if a.size else None
    xs = sorted(float(v) for v in values if not math.isnan(v))
    if not xs:
        return None
    rank = (len(xs) - 1) * q / 100.0
    lo = math.floor(rank)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (rank - lo)


def ratio(num: float | None, den: float | None) -> float | None:
    """``num / den``, or ``None`` when either is unknown or the denominator is not positive."""
    if num is None or den is None or den <= 0:
        return None
    return num / den
