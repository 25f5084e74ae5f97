"""Percentiles: the P object every latency figure of the summary is made of."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentx.core import percentiles as pct
from agentx.core.percentiles import (
    STATS,
    distribution,
    percentile,
    percentiles,
    quantile_curve,
    ratio,
)
from agentx.core.record import RequestRecord
from agentx.metrics import latency as lat

finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)


def rec(ok: bool = True, gaps: tuple[int, ...] = ()) -> RequestRecord:
    return RequestRecord("r", "s", 0, "sess", "t", 0, False, 1, 2, 3, 200, ok, itl_ns=gaps)


class TestPercentiles:
    def test_linear_interpolation_between_closest_ranks(self) -> None:
        # 1..100: rank (n-1)*q -> p50 at 49.5 (50.5), p90 at 89.1 (90.1), p99 at 98.01 (99.01)
        p = percentiles([float(i) for i in range(100, 0, -1)])
        assert p.p50 == pytest.approx(50.5)
        assert p.p90 == pytest.approx(90.1)
        assert p.p99 == pytest.approx(99.01)
        assert p.mean == pytest.approx(50.5)
        assert p.max == 100.0

    def test_single_value_is_every_statistic(self) -> None:
        assert percentiles([7.0]).to_json() == dict.fromkeys(STATS, 7.0)

    def test_empty_is_unknown_not_zero(self) -> None:
        assert percentiles([]).to_json() == dict.fromkeys(STATS, None)
        assert percentiles([math.nan]).to_json() == dict.fromkeys(STATS, None)

    def test_nan_is_dropped(self) -> None:
        assert percentiles([1.0, math.nan, 3.0]).mean == 2.0

    def test_values_are_plain_floats(self) -> None:
        for v in percentiles([1, 2, 3]).to_json().values():
            assert type(v) is float

    @given(st.lists(finite, min_size=1, max_size=200))
    def test_order_and_bounds(self, values: list[float]) -> None:
        p = percentiles(values)
        lo, hi = min(values), max(values)
        assert p.p50 is not None and p.p90 is not None and p.p99 is not None
        assert lo <= p.p50 <= p.p90 <= p.p99 <= hi
        assert p.mean is not None and lo - 1e-6 <= p.mean <= hi + 1e-6
        assert p.max == hi

    @given(st.lists(finite, min_size=1, max_size=400), st.floats(min_value=0, max_value=100))
    def test_one_percentile_agrees_with_numpy_at_any_size(
        self, values: list[float], q: float
    ) -> None:
        import numpy as np

        expected = float(np.percentile(values, q))  # numpy's lerp rounds differently: 1e-12 rel
        assert percentile(values, q) == pytest.approx(expected, rel=1e-12, abs=1e-6)

    def test_accepts_arrays(self) -> None:
        import numpy as np

        assert percentiles(np.array([1.0, 2.0, 3.0])).p50 == 2.0
        assert percentiles(np.array([], dtype=np.float64)).p50 is None

    def test_one_percentile(self) -> None:
        assert percentile([1.0, 2.0, 3.0, 4.0], 0) == 1.0
        assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
        assert percentile([], 50) is None


class TestRatio:
    def test_unknown_or_empty_denominator_is_none(self) -> None:
        assert ratio(1, 0) is None
        assert ratio(None, 4) is None
        assert ratio(1, None) is None
        assert ratio(0, 4) == 0.0
        assert ratio(1, 4) == 0.25


class TestLargeSamples:
    """A long run's pooled gaps: copied only to drop NaNs, reordered in place when handed over,
    and the figures exactly those of the plain computation either way."""

    @given(st.lists(finite | st.just(math.nan), min_size=1, max_size=300), st.booleans())
    def test_handing_the_array_over_changes_no_figure(self, xs: list[float], nan: bool) -> None:
        a = np.array(xs + ([math.nan] if nan else []), dtype=np.float64)
        plain = a[~np.isnan(a)]
        expect: dict[str, float | None] = dict.fromkeys(STATS, None)
        if plain.size:
            p50, p90, p99 = np.percentile(plain, (50, 90, 99)).tolist()
            mean, top = float(plain.mean()), float(plain.max())
            expect = {"p50": p50, "p90": p90, "p99": p99, "mean": mean, "max": top}
        kept = a.copy()
        assert distribution(a, (95.0, 99.9)) == distribution(kept, (95.0, 99.9))
        assert np.array_equal(a, kept, equal_nan=True)  # not handed over: left as it was
        assert percentiles(a.copy(), scratch=True).to_json() == expect
        assert distribution(a.copy(), (95.0,), scratch=True) == distribution(a, (95.0,))
        assert quantile_curve(a.copy(), scratch=True) == quantile_curve(a)

    @given(st.lists(finite | st.just(math.nan), min_size=1, max_size=300), st.booleans())
    def test_a_large_sample_handed_over_is_sorted_with_no_figure_changed(
        self, xs: list[float], ties: bool
    ) -> None:
        """Sorted in place (here from one value on), then read as the summary reads the pooled
        ITL: its P, its extra percentiles, then its CDF, from the same reordered array."""
        a = np.array(xs + (xs[: len(xs) // 2] if ties else []), dtype=np.float64)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(pct, "SORT_AT", 1)
            given_up = a.copy()
            got = distribution(given_up, (95.0, 99.9), scratch=True)
            curve = quantile_curve(given_up, scratch=True)
            alone = percentiles(a.copy(), scratch=True)
        assert alone == percentiles(a)
        assert got == distribution(a, (95.0, 99.9))
        assert curve == quantile_curve(a)

    def test_a_sample_above_the_sort_size_keeps_its_figures(self) -> None:
        rng = np.random.default_rng(7)
        a = rng.integers(0, 5_000, pct.SORT_AT + 17) / 7.0  # many ties
        given_up = a.copy()
        assert distribution(given_up, (95.0, 99.9), scratch=True) == distribution(a, (95.0, 99.9))
        assert quantile_curve(given_up, scratch=True) == quantile_curve(a)
        assert percentiles(a.copy(), scratch=True) == percentiles(a)

    @given(st.lists(st.integers(min_value=0, max_value=2**53 - 1), max_size=50))
    def test_a_requests_gaps_in_ms_are_the_plain_division_of_each(self, gaps: list[int]) -> None:
        assert lat.itl_ms(rec(gaps=tuple(gaps))) == [g / lat.NS_PER_MS for g in gaps]
        assert lat.itl_ms(rec(ok=False, gaps=tuple(gaps))) == []

    def test_pooled_gaps_are_the_plain_division_of_every_gap(self) -> None:
        rows = [rec(gaps=(1_500_000, 7, 3_000_001)), rec(ok=False), rec(gaps=(2,)), rec()]
        got = lat.pooled_itl_ms(rows)
        assert got.dtype == np.float64
        assert got.tolist() == (np.array([1_500_000, 7, 3_000_001, 2]) / 1_000_000).tolist()
        assert lat.pooled_itl_ms([]).size == 0
