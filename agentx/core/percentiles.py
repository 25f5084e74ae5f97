"""Distribution summaries: the ``P`` object of the contract (``p50, p90, p99, mean, max``).

Percentiles interpolate linearly between closest ranks (numpy's default, as ``vllm bench serve``
and AIPerf do), so figures from the three tools compare. An empty sample is unknown: every field
is ``None``, never 0.

A long run pools tens of millions of inter-token gaps: a sample is copied only to drop NaNs, and
a caller that hands its array over (``scratch=True``) lets it be reordered in place instead of
copied again; the mean is taken before any reordering, so the figures are the same either way.
A large sample given up is sorted in place once (numpy's vectorised sort takes a fraction of
the time of a partition around many ranks), so every later percentile of it, a CDF's hundred
levels included, is a quick pass over sorted values: the same order statistics, the same figures.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from agentx.core.errors import ShapeError, UsageError
from agentx.core.options import Panel, flag

STATS = ("p50", "p90", "p99", "mean", "max")
CONTRACT_QS = (50.0, 90.0, 99.0)  # the percentiles every P has
# levels (0..100) of the quantile curves the reports draw CDFs from: every percent, a finer tail
CURVE_LEVELS = (*(float(q) for q in range(100)), 99.5, 99.9, 100.0)
Values = Sequence[float] | npt.NDArray[Any]
SORT_AT = 1 << 16  # a sample given up this large is sorted in place rather than partitioned


@dataclass(frozen=True, slots=True)
class P:
    """A distribution as the contract writes it: ``p50``, ``p90``, ``p99``, ``mean`` and
    ``max``, plus the percentiles asked for beyond those (``--percentiles``): ``extra`` holds
    (level, value) pairs in ascending order, none of them a contract level. Unknown is ``None``.
    The JSON object lists every percentile in ascending order, then ``mean`` and ``max``."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    mean: float | None = None
    max: float | None = None
    extra: tuple[tuple[float, float | None], ...] = ()

    @property
    def levels(self) -> list[tuple[float, float | None]]:
        """Every percentile held, (level, value), ascending."""
        contract = ((50.0, self.p50), (90.0, self.p90), (99.0, self.p99))
        return sorted((*contract, *self.extra), key=lambda lv: lv[0])

    def at(self, q: float) -> float | None:
        """The value at percentile ``q`` (``None`` when unknown or not held)."""
        return next((v for level, v in self.levels if level == q), None)

    def stat(self, name: str) -> float | None:
        """A statistic by its JSON key: ``p50``, ``p99.9``, ``mean``, ``max``."""
        if name == "mean":
            return self.mean
        if name == "max":
            return self.max
        return self.at(float(name.removeprefix("p")))

    def to_json(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {key(q): v for q, v in self.levels}
        out["mean"], out["max"] = self.mean, self.max
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> P:
        """The object ``to_json`` writes; a key absent is unknown."""
        values: dict[str, float | None] = {}
        for k, v in d.items():
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
                raise ShapeError(f"{k}: expected a number or null, got {v!r}")
            values[k] = v
        extra: list[tuple[float, float | None]] = []
        for k, v in values.items():
            if k in STATS:
                continue
            try:
                q = float(k.removeprefix("p")) if k.startswith("p") else math.nan
            except ValueError:
                q = math.nan
            if not 0 < q <= 100:
                raise ShapeError(f"{k}: not a percentile key (p50, p99.9, mean, max)")
            if q not in CONTRACT_QS:
                extra.append((q, v))
        return cls(
            values.get("p50"),
            values.get("p90"),
            values.get("p99"),
            values.get("mean"),
            values.get("max"),
            tuple(sorted(extra, key=lambda lv: lv[0])),
        )


EMPTY = P()


def empty() -> P:
    return EMPTY


def percentiles(values: Values, *, scratch: bool = False) -> P:
    """``P`` of ``values``; all ``None`` when there are none. NaNs are dropped. ``scratch``: a
    float64 array the caller gives up (reordered in place rather than copied)."""
    if len(values) == 0:
        return empty()
    a, own = _clean(values, scratch)
    if a.size == 0:
        return empty()
    mean, top = float(a.mean()), float(a.max())  # before any reordering
    if own and a.size >= SORT_AT:
        a.sort()
    p50, p90, p99 = np.percentile(a, (50.0, 90.0, 99.0), overwrite_input=own)
    return P(float(p50), float(p90), float(p99), mean, top)


def key(q: float) -> str:
    """The key of percentile ``q`` in a distribution object: ``p50``, ``p95``, ``p99.9``."""
    return f"p{q:g}"


def parse_percentiles(text: str) -> tuple[float, ...]:
    """``--percentiles 50,90,95,99,99.9`` -> the levels beyond the contract's p50/p90/p99,
    sorted: ``(95.0, 99.9)``. Every level must be in (0, 100]."""
    qs: set[float] = set()
    for item in text.split(","):
        item = item.strip().removeprefix("p")
        if not item:
            continue
        try:
            q = float(item)
        except ValueError:
            raise UsageError(
                f"--percentiles: {item!r} is not a number (e.g. 50,90,95,99,99.9)"
            ) from None
        if not (math.isfinite(q) and 0 < q <= 100):
            raise UsageError(f"--percentiles: {item} is not in (0, 100]")
        qs.add(q)
    return tuple(sorted(qs - set(CONTRACT_QS)))


PERCENTILES = flag(
    "--percentiles",
    parse=parse_percentiles,
    metavar="LIST",
    panel=Panel.OUTPUT,
    help="percentiles to report beyond p50/p90/p99, e.g. 50,90,95,99,99.9",
)


def distribution(values: Values, extra: Iterable[float] = (), *, scratch: bool = False) -> P:
    """``P`` of ``values`` plus the percentiles ``extra`` (:func:`key` names them in its JSON).
    ``scratch`` as :func:`percentiles`."""
    b = percentiles(values, scratch=scratch)
    qs = sorted(set(extra) - set(CONTRACT_QS))
    if not qs:
        return b
    a, own = _clean(values, scratch)
    at: list[float | None] = (
        np.percentile(a, qs, overwrite_input=own).tolist() if a.size else [None] * len(qs)
    )
    return dataclasses.replace(b, extra=tuple(zip(qs, at, strict=True)))


def quantile_curve(values: Values, digits: int = 3, *, scratch: bool = False) -> list[float] | None:
    """``values`` at :data:`CURVE_LEVELS` (for CDF charts), rounded; ``None`` when empty.
    ``scratch`` as :func:`percentiles`."""
    a, own = _clean(values, scratch)
    if a.size == 0:
        return None
    return [round(float(v), digits) for v in np.percentile(a, CURVE_LEVELS, overwrite_input=own)]


def _clean(values: Values, scratch: bool = False) -> tuple[npt.NDArray[np.float64], bool]:
    """``values`` without NaNs as a float64 array, and whether it may be reordered in place:
    a copy made here, or ``values`` itself when the caller gave it up (``scratch``)."""
    a = np.asarray(values, dtype=np.float64)
    nan = np.isnan(a)
    if nan.any():
        return a[~nan], True
    return a, scratch and a is values


def percentile(values: Values, q: float) -> float | None:
    """One percentile (0..100) of ``values`` by the same rule; ``None`` when empty.

    Pure Python below a few hundred values: numpy's per-call overhead dominates the small
    groups of the roll-ups (thousands of sessions and seconds).
    """
    if len(values) > 256:
        a, own = _clean(values)
        return float(np.percentile(a, q, overwrite_input=own)) if a.size else None
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
