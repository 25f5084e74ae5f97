"""Terminal rendering: the table people paste into issues."""

from __future__ import annotations

import io

from rich.console import Console

from agentx.metrics.summary import RunInfo, build_summary
from agentx.report import compare, render_compare, render_summary
from agentx.results.summary import Summary

from .sample import MODEL, summary, typed


def text(renderable: object, width: int = 120) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(renderable)
    return buf.getvalue()


class TestRenderSummary:
    def test_headline_figures(self) -> None:
        s = typed()
        out = text(render_summary(s))
        assert MODEL in out and "http://127.0.0.1:8011" in out
        assert "errors 1: timeout 1" in out
        assert "| TTFT " in out and "165 ms" in out  # p50 TTFT of the sample
        assert "73.4%" in out  # reported and theoretical hit rate
        assert "61.0%" in out  # server /metrics hit rate
        assert "GPU 60.0% · offload 1.0% · computed 39.0%" in out
        assert "warm-up 1 (excluded)" in out

    def test_is_a_markdown_table(self) -> None:
        lines = [ln.strip() for ln in text(render_summary(typed())).splitlines()]
        table = [ln for ln in lines if ln.startswith("|")]
        assert table and all(ln.endswith("|") for ln in table)
        assert any(set(ln) <= set("|-: ") for ln in table)  # the header rule

    def test_unknown_figures_render_as_na(self) -> None:
        run = RunInfo(endpoint="e", model="m", started_at="t", duration_s=0.0)
        out = text(render_summary(build_summary(run, [], None, [], 16)))
        assert "n/a" in out
        assert "hit rate: server /metrics" in out

    def test_slo_results_and_failure(self) -> None:
        out = text(render_summary(typed(slow=3.0)))
        assert "FAIL" in out and "ttft_p99" in out and "<= 300 ms" in out

    def test_saturated_client_warns(self) -> None:
        s = summary()
        s["client"]["saturated"] = True
        out = text(render_summary(Summary.from_json(s)))
        assert "SATURATED" in out and "warning: the client was CPU-saturated" in out

    def test_run_warnings_are_shown(self) -> None:
        s = summary()
        s["warnings"] = ["--metrics-url did not answer"]
        assert "warning: --metrics-url did not answer" in text(render_summary(Summary.from_json(s)))


class TestRenderCompare:
    def test_rows_with_delta_and_ratio(self) -> None:
        out = text(render_compare(compare(typed(), typed(slow=2.0))), width=140)
        assert "latency_ms.ttft.p50" in out
        assert "2.00x" in out  # every latency doubled
        assert "+165 ms" in out  # TTFT p50 165 -> 330 ms
