"""compare(): deltas, ratios and which way is better, key by key."""

from __future__ import annotations

import pytest

from agentx.report import compare as compare_runs
from agentx.report.compare import (
    KEYS,
    Verdict,
    headline_rows,
    key_label,
    other_rows,
    verdict,
)
from agentx.report.fmt import verdict_line
from agentx.results.compare import SCHEMA, Comparison
from agentx.results.summary import Summary

from .sample import summary


def compare(base: dict, new: dict) -> dict:  # type: ignore[type-arg]
    """The ``agentx.compare/1`` object of two ``summary.json`` objects."""
    return compare_runs(Summary.from_json(base), Summary.from_json(new)).to_json()


def rows(base: dict, new: dict) -> dict[str, dict]:  # type: ignore[type-arg]
    return {r["key"]: r for r in compare(base, new)["metrics"]}


class TestCompare:
    def test_slower_run_is_worse_on_latency(self) -> None:
        base, new = summary(), summary(slow=2.0)
        cmp = compare(base, new)
        assert cmp["schema"] == SCHEMA
        assert cmp["base"]["model"] == base["model"]
        r = rows(base, new)["latency_ms.ttft.p50"]
        assert r["base"] == base["latency_ms"]["ttft"]["p50"]
        assert r["new"] == new["latency_ms"]["ttft"]["p50"]
        assert r["delta"] == pytest.approx(r["new"] - r["base"])
        assert r["ratio"] == pytest.approx(2.0)
        assert r["change"] == "worse"
        assert rows(new, base)["latency_ms.ttft.p50"]["change"] == "better"

    def test_higher_throughput_is_better(self) -> None:
        base, new = summary(slow=2.0), summary()
        assert rows(base, new)["throughput.output_tokens_per_s"]["change"] == "better"

    def test_identical_runs_are_the_same(self) -> None:
        s = summary()
        assert {r["change"] for r in compare(s, s)["metrics"]} == {"same"}

    def test_within_one_percent_is_the_same(self) -> None:
        base, new = summary(), summary()
        new["throughput"]["requests_per_s"] = base["throughput"]["requests_per_s"] * 1.005
        assert rows(base, new)["throughput.requests_per_s"]["change"] == "same"

    def test_unknown_on_one_side(self) -> None:
        base, new = summary(), summary()
        base["cache"]["server_metrics_hit_rate"] = None
        r = rows(base, new)["cache.server_metrics_hit_rate"]
        assert r["base"] is None and r["new"] == 0.61
        assert r["delta"] is None and r["ratio"] is None and r["change"] is None

    def test_zero_base_has_no_ratio(self) -> None:
        base, new = summary(), summary()
        base["requests"]["errors"], new["requests"]["errors"] = 0, 3
        r = rows(base, new)["requests.errors"]
        assert r["delta"] == 3 and r["ratio"] is None and r["change"] == "worse"

    def test_theoretical_hit_rate_is_neutral(self) -> None:
        base, new = summary(), summary()
        new["cache"]["theoretical_hit_rate"] = 0.1
        assert rows(base, new)["cache.theoretical_hit_rate"]["change"] == "changed"


def comparison(base: dict, new: dict) -> Comparison:  # type: ignore[type-arg]
    return compare_runs(Summary.from_json(base), Summary.from_json(new))


class TestHeadlineAndVerdict:
    def test_the_headline_leads_with_the_hit_rates(self) -> None:
        keys = [r.key for r in headline_rows(comparison(summary(), summary()))]
        assert keys[:3] == [
            "cache.reported_hit_rate",
            "cache.server_metrics_hit_rate",
            "cache.theoretical_hit_rate",
        ]
        assert keys[3:7] == [f"latency_ms.{m}.{p}" for m in ("ttft", "itl") for p in ("p50", "p99")]
        assert "throughput.output_tokens_per_s" in keys
        rest = [r.key for r in other_rows(comparison(summary(), summary()))]
        assert not set(keys) & set(rest) and "latency_ms.ttfc.mean" in rest

    def test_every_key_has_a_label(self) -> None:
        for key, _, _ in KEYS:
            assert key_label(key) != key, key
        assert key_label("latency_ms.ttfc.mean") == "TTFC mean"

    def test_verdicts(self) -> None:
        assert verdict(comparison(summary(), summary(slow=2.0))) is Verdict.WORSE
        assert verdict(comparison(summary(slow=2.0), summary())) is Verdict.BETTER
        assert verdict(comparison(summary(), summary())) is Verdict.SAME
        base, new = summary(), summary(slow=2.0)
        new["cache"]["reported_hit_rate"] = 0.95  # slower but more hits
        assert verdict(comparison(base, new)) is Verdict.MIXED

    def test_the_theoretical_hit_rate_never_decides(self) -> None:
        base, new = summary(), summary()
        new["cache"]["theoretical_hit_rate"] = 0.1
        assert verdict(comparison(base, new)) is Verdict.SAME

    def test_the_verdict_line_names_the_largest_moves(self) -> None:
        line = verdict_line(comparison(summary(), summary(slow=2.0)))
        assert line.startswith("worse (") and "0 better" in line
        assert "▲ +100%" in line  # TTFT and ITL doubled
