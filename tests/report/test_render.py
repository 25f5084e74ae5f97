"""Terminal rendering: the table people paste into issues."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from agentx.metrics.summary import RunInfo, build_summary
from agentx.report import compare, fmt, render_compare, render_summary
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
        s["client"] = {"cpu_percent": 95.0, "saturated": True}
        out = text(render_summary(Summary.from_json(s)))
        assert "SATURATED" in out and "warning: the client was CPU-saturated" in out

    def test_a_client_held_back_at_low_cpu_is_never_called_saturated(self) -> None:
        s = summary()
        s["client"] = {"cpu_percent": 7.5, "saturated": True}
        out = text(render_summary(Summary.from_json(s)))
        assert "SATURATED" not in out and "saturated" not in out
        assert "client-bound" in out and "warning: the client held the run back" in out

    def test_run_warnings_are_shown(self) -> None:
        s = summary()
        s["warnings"] = ["--metrics-url did not answer"]
        assert "warning: --metrics-url did not answer" in text(render_summary(Summary.from_json(s)))


class TestRenderCompare:
    def test_rows_with_delta_and_ratio(self) -> None:
        out = text(render_compare(compare(typed(), typed(slow=2.0))), width=140)
        assert "| TTFT p50 " in out and "latency_ms.ttft.p50" not in out  # a reader's label
        assert "2.00x" in out  # every latency doubled
        assert "+165 ms" in out  # TTFT p50 165 -> 330 ms


def failing(failed: int, total: int = 48, **extra: object) -> Summary:
    s = summary()
    s["requests"].update(total=total, ok=total - failed, errors=failed)
    s["errors_by_type"] = {"http": failed} if failed else {}
    s.update(extra)
    return Summary.from_json(s)


def styled(renderable: object) -> str:
    buf = io.StringIO()
    Console(file=buf, width=120, force_terminal=True, color_system="standard").print(renderable)
    return buf.getvalue()


class TestWhatALeads:
    def test_the_headline_comes_before_the_tables(self) -> None:
        out = text(render_summary(typed()))
        hit = out.index("hit rate       73.4% reported · 61.0% /metrics · 73.4% theoretical")
        interactivity = "interactivity  TTFT p50 165 ms · ITL p50 20.0 ms · per user p50 51.6 tok/s"
        assert hit < out.index("throughput     ") < out.index(interactivity)
        assert hit < out.index("| cache & throughput") < out.index("| latency")
        table = out[out.index("| cache & throughput") :]
        assert table.index("hit rate: reported") < table.index("output tokens/s")

    def test_the_configuration_is_shown(self) -> None:
        s = summary()
        s["config"] = {"trace": "/x/traces/example.parquet", "concurrency": 8, "lanes": 5}
        out = text(render_summary(Summary.from_json(s)))
        assert "config  trace example.parquet · concurrency 8 (5 lanes ran)" in out

    def test_errors_stand_out_and_turn_red_when_most_failed(self) -> None:
        some = styled(render_summary(failing(3)))
        assert "ERRORS  3 of 48 measured requests failed (6.2%): http 3" in some
        assert "\x1b[1;33mERRORS" in some  # bold yellow
        most = styled(render_summary(failing(38)))
        assert "\x1b[1;31mERRORS  38 of 48" in most  # bold red
        assert "ERRORS" not in text(render_summary(failing(0)))

    def test_error_kinds_with_their_first_message(self) -> None:
        by_kind = [
            {"kind": "http", "status": 400, "count": 38, "message": "[rid:x] tool choice"},
            {"kind": "timeout", "status": None, "count": 2, "message": None},
        ]
        out = text(render_summary(failing(40, errors={"by_kind": by_kind})))
        assert "http 400 x38  [rid:x] tool choice" in out  # as text: brackets are not markup
        assert "timeout x2" in out


class TestFiguresWithoutMeaning:
    def test_a_kv_gauge_that_never_moved_is_unknown(self) -> None:
        s = summary()
        s["cache"]["kv_cache_usage_perc"] = {k: 0.0 for k in ("p50", "p90", "p99", "mean", "max")}
        out = text(render_summary(Summary.from_json(s)))
        line = next(ln for ln in out.splitlines() if ln.startswith("| KV cache usage"))
        assert "n/a (0 in every scrape while requests ran: not measured)" in line
        assert "0.0% / 0.0%" not in out

    def test_a_gauge_at_zero_without_requests_is_zero(self) -> None:
        s = summary()
        s["requests"]["ok"] = 0
        s["cache"]["kv_cache_usage_perc"] = {k: 0.0 for k in ("p50", "p90", "p99", "mean", "max")}
        assert "0.0% / 0.0%" in text(render_summary(Summary.from_json(s)))


def verdict(cause: str, cpu_max: float) -> dict[str, object]:
    return {
        "bottleneck": "client",
        "cause": cause,
        "client_cpu_percent_max": cpu_max,
        "dispatch_lag_p99_ms": 80.0,
        "loop_late_p99_ms": 40.0,
        "loop_ran_when_late": 0.5,
        "loop_waited_when_late": 0.1,
        "server_waiting_max": None,
        "server_waiting_share": None,
        "ttft_p50_first_ms": None,
        "ttft_p50_last_ms": None,
    }


class TestClientLine:
    @pytest.mark.parametrize(
        ("cause", "cpu", "shown"),
        [
            ("cpu", 95.0, "SATURATED"),
            ("cpu", 7.5, "client-bound (busy in bursts)"),
            ("blocked", 50.9, "client-bound (blocked: I/O or a thread)"),
            ("starved", 40.0, "client-bound (starved of CPU)"),
        ],
    )
    def test_the_cpu_line_says_what_the_verdict_says(
        self, cause: str, cpu: float, shown: str
    ) -> None:
        s = summary()
        s["client"] = {"cpu_percent": cpu, "saturated": True}
        s["bottleneck"] = verdict(cause, cpu)
        out = text(render_summary(Summary.from_json(s)))
        line = next(ln for ln in out.splitlines() if ln.startswith("| client CPU "))
        assert line.rstrip(" |").endswith(f"| {fmt.num(cpu)}%  {shown}".lstrip("| ")), line
        if shown != "SATURATED":
            assert "SATURATED" not in out

    def test_no_verdict_no_word(self) -> None:
        s = summary()
        s["bottleneck"] = {**verdict("cpu", 95.0), "bottleneck": "server", "cause": "queue"}
        out = text(render_summary(Summary.from_json(s)))
        assert "SATURATED" not in out and "client-bound" not in out


class TestCompareView:
    def test_verdict_first_then_the_headline_then_the_rest(self) -> None:
        out = text(render_compare(compare(typed(), typed(slow=2.0))), width=160)
        lines = out.splitlines()
        assert lines[4].startswith("verdict: worse (")  # after the two runs' lines
        head = out.index("| headline")
        assert head < out.index("| hit rate: reported (usage)") < out.index("| every other figure")
        assert out.index("| TTFT p99 ") < out.index("| every other figure")
        assert out.index("| TTFC p50 ") > out.index("| every other figure")

    def test_changes_read_without_colour(self) -> None:
        out = text(render_compare(compare(typed(), typed(slow=2.0))), width=160)
        ttft = next(ln for ln in out.splitlines() if ln.startswith("| TTFT p50 "))
        assert ttft.rstrip(" |").endswith("▲ worse")
        tps = next(ln for ln in out.splitlines() if ln.startswith("| output tokens/s "))
        assert tps.rstrip(" |").endswith("▼ worse")
        same = next(ln for ln in out.splitlines() if ln.startswith("| hit rate: reported"))
        assert same.rstrip(" |").endswith("= same")
        assert "\x1b[" not in out
