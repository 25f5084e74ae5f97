"""The chart builders: adaptive time buckets, whole-number and log axes, legends only for what is
drawn, CDFs from the summary's quantile curves, the margin curve."""

from __future__ import annotations

import dataclasses
import itertools
import re

import pytest

from agentx.metrics.cost import CostOptions, Prices, cost_summary
from agentx.report import svg
from agentx.report.charts import (
    MAX_NAMED_REPLICAS,
    Run,
    bucket_width_s,
    buckets,
    latency_cdf,
    margin_curve,
    replica_charts,
    summary_charts,
)
from agentx.report.sweep_view import sweep_charts
from agentx.results.summary import Summary, Throughput, TokenTotals
from agentx.results.summary.rollups import SecondRow
from agentx.results.sweep import Sweep, SweepPoint

from .sample import routed, summary, typed


def second(
    t: int, completed: int = 0, cached: int | None = None, prompt: int | None = None
) -> SecondRow:
    return SecondRow(
        t_s=t,
        started=completed,
        completed=completed,
        errors=0,
        output_tokens=10.0 * completed,
        cached_tokens=cached,
        prompt_tokens=prompt,
        reported_hit_rate=None,
        ttft_ms_p50=None,
        server_hit_rate=None,
        kv_cache_usage_perc=None,
    )


class TestBuckets:
    def test_dense_short_runs_keep_seconds(self) -> None:
        assert bucket_width_s([second(t, 5) for t in range(60)]) == 1

    def test_long_runs_are_capped_at_120_points(self) -> None:
        rows = [second(t, 5) for t in range(3600)]
        width = bucket_width_s(rows)
        assert width == 30 and len(buckets(rows, width)) <= 120

    def test_sparse_runs_merge_until_about_3_completions_a_bucket(self) -> None:
        rows = [second(t, 1 if t % 4 == 0 else 0) for t in range(200)]  # 0.25 per second
        width = bucket_width_s(rows)
        assert width == 15
        assert min(b.completed * width for b in buckets(rows, width)[:-1]) >= 3

    def test_short_sparse_runs_keep_a_few_points(self) -> None:
        rows = [second(t, 1 if t == 0 else 0) for t in range(10)]
        assert len(buckets(rows, bucket_width_s(rows))) >= 5

    def test_rates_per_second_and_hit_rate_from_token_sums(self) -> None:
        rows = [second(0, 2, 50, 100), second(1, 4, 150, 200), second(2, 0)]
        (b, tail) = buckets(rows, 2)
        assert b.completed == 3.0 and b.output_tokens == 30.0
        assert b.reported_hit_rate == pytest.approx(200 / 300)
        assert tail.reported_hit_rate is None  # no usage in that second: unknown, not 0


class TestAxes:
    def test_integer_ticks(self) -> None:
        assert svg.integer_ticks(0, 5) == [0, 1, 2, 3, 4, 5]
        assert all(t == int(t) for t in svg.integer_ticks(0, 3))
        assert svg.integer_ticks(0, 100)[-1] == 100

    def test_log_ticks(self) -> None:
        assert svg.log_ticks(1, 100) == [1, 2, 5, 10, 20, 50, 100]
        assert svg.log_ticks(0.5, 50_000) == [1, 10, 100, 1_000, 10_000]

    def test_legend_only_for_drawn_series(self) -> None:
        chart = svg.line_chart(
            [svg.Series("shown", [(0, 1.0), (1, 2.0)]), svg.Series("empty", [(0, None)])],
            title="t",
            x_label="x",
            y_label="y",
        )
        assert ">shown</text>" in chart and "empty" not in chart
        nothing = svg.line_chart(
            [svg.Series("empty", [(0, None)])], title="t", x_label="x", y_label="y"
        )
        assert "no data" in nothing

    def test_point_labels_and_negative_values(self) -> None:
        chart = svg.line_chart(
            [svg.Series("s", [(1, -0.5), (2, 0.5)], labels=["c1", "c2"])],
            title="t",
            x_label="x",
            y_label="y",
        )
        assert ">c1</text>" in chart and ">c2</text>" in chart  # the last one left of its point
        assert ">-0.4</text>" in chart and ">0</text>" in chart and ">-0</text>" not in chart


class TestCharts:
    def test_cdf_overlay_dashes_the_base(self) -> None:
        s = typed()
        chart = latency_cdf([Run("base", s, dash=True), Run("new", s)], "ttft", "TTFT")
        assert chart.count("<polyline") == 2 and 'stroke-dasharray="6 4"' in chart
        assert ">base</text>" in chart and ">new</text>" in chart

    def test_summary_without_curves_says_no_data(self) -> None:
        s = summary()
        del s["rollups"]["latency_quantiles_ms"]
        assert "no data" in summary_charts(Summary.from_json(s))["ttft_cdf"]

    def test_margin_curve_crosses_zero_at_break_even(self) -> None:
        s = Summary(
            throughput=Throughput(input_tokens_per_s=19_000.0, output_tokens_per_s=1_000.0),
            tokens=TokenTotals(input=1_900_000, output=100_000, cached=1_710_000),
        )
        cost = cost_summary(
            CostOptions(
                usd_per_gpu_hour=2.0, gpus=8, prices=Prices(3, 0.3, 15), license_fraction=0.3
            ),
            s,
        )
        curve = dict(margin_curve(cost))
        u = cost.breakeven_utilization
        assert u is not None
        below = max(x for x in curve if x < u)
        above = min(x for x in curve if x > u)
        assert curve[below] < 0 < curve[above]
        assert curve[1.0] == pytest.approx(cost.gross_margin)


def _level(c: int, reported: float | None, theory: float | None) -> SweepPoint:
    return SweepPoint(
        c, 1.0, 10.0, 5.0, 100.0, 200.0, 20.0, reported, theory, 0, 10, 1.0, False, f"c{c}",
        None, None, None,
    )  # fmt: skip


def test_a_sweep_charts_the_hit_rate_it_got_beside_the_theoretical() -> None:
    data = Sweep("e", "t", "m", (_level(4, 0.42, 0.9), _level(1, 0.88, 0.9)))
    chart = sweep_charts(data)["hit_rate_vs_concurrency"]
    assert "reported by the server" in chart and "theoretical (unbounded cache)" in chart
    assert "42.0%" in chart and "88.0%" in chart  # each level's reported rate in its tooltip
    # a server that reports no cached tokens: only the theoretical line, named as such
    only = sweep_charts(Sweep("e", "t", "m", (_level(1, None, 0.9),)))["hit_rate_vs_concurrency"]
    assert "theoretical" in only and "reported by the server" not in only
    # nothing to draw: no chart rather than an empty one
    assert "hit_rate_vs_concurrency" not in sweep_charts(
        Sweep("e", "t", "m", (_level(1, None, None),))
    )


def test_replica_charts_are_a_routed_runs_only_and_name_a_long_row_by_index() -> None:
    assert "hit_rate_by_replica" not in summary_charts(typed())
    s = routed()
    charts = replica_charts(s)
    assert set(charts) == {"hit_rate_by_replica", "requests_by_replica"}
    assert ">replica 1</text>" in charts["hit_rate_by_replica"]
    routing = s.routing
    assert routing is not None
    many = tuple(
        dataclasses.replace(routing.per_replica[0], replica=i)
        for i in range(MAX_NAMED_REPLICAS + 2)
    )
    wide = replica_charts(
        dataclasses.replace(s, routing=dataclasses.replace(routing, per_replica=many))
    )
    assert ">replica" not in wide["requests_by_replica"]
    assert f'class="xt">{MAX_NAMED_REPLICAS + 1}</text>' in wide["requests_by_replica"]
    # requests are counted in whole numbers: whole, evenly spaced ticks (no 2.5 shown as "2")
    ticks = [int(t) for t in re.findall(r'class="yt">([^<]*)<', wide["requests_by_replica"])]
    assert len(ticks) > 2 and len({b - a for a, b in itertools.pairwise(ticks)}) == 1
