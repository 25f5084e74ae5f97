"""Percentiles: the P object every latency figure of the summary is made of."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentx.metrics.percentiles import STATS, percentile, percentiles, ratio

finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)


class TestPercentiles:
    def test_linear_interpolation_between_closest_ranks(self) -> None:
        # 1..100: rank (n-1)*q -> p50 at 49.5 (50.5), p90 at 89.1 (90.1), p99 at 98.01 (99.01)
        p = percentiles([float(i) for i in range(100, 0, -1)])
        assert p["p50"] == pytest.approx(50.5)
        assert p["p90"] == pytest.approx(90.1)
        assert p["p99"] == pytest.approx(99.01)
        assert p["mean"] == pytest.approx(50.5)
        assert p["max"] == 100.0

    def test_single_value_is_every_statistic(self) -> None:
        assert percentiles([7.0]) == dict.fromkeys(STATS, 7.0)

    def test_empty_is_unknown_not_zero(self) -> None:
        assert percentiles([]) == dict.fromkeys(STATS, None)
        assert percentiles([math.nan]) == dict.fromkeys(STATS, None)

    def test_nan_is_dropped(self) -> None:
        assert percentiles([1.0, math.nan, 3.0])["mean"] == 2.0

    def test_values_are_plain_floats(self) -> None:
        for v in percentiles([1, 2, 3]).values():
            assert type(v) is float

    @given(st.lists(finite, min_size=1, max_size=200))
    def test_order_and_bounds(self, values: list[float]) -> None:
        p = percentiles(values)
        lo, hi = min(values), max(values)
        assert p["p50"] is not None and p["p90"] is not None and p["p99"] is not None
        assert lo <= p["p50"] <= p["p90"] <= p["p99"] <= hi
        assert p["mean"] is not None and lo - 1e-6 <= p["mean"] <= hi + 1e-6
        assert p["max"] == hi

    @given(st.lists(finite, min_size=1, max_size=400), st.floats(min_value=0, max_value=100))
    def test_one_percentile_agrees_with_numpy_at_any_size(
        self, values: list[float], q: float
    ) -> None:
        import numpy as np

        expected = float(np.percentile(values, q))  # numpy's lerp rounds differently: 1e-12 rel
        assert percentile(values, q) == pytest.approx(expected, rel=1e-12, abs=1e-6)

    def test_accepts_arrays(self) -> None:
        import numpy as np

        assert percentiles(np.array([1.0, 2.0, 3.0]))["p50"] == 2.0
        assert percentiles(np.array([], dtype=np.float64))["p50"] is None

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
