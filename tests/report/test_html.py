"""The HTML report, parsed back with html.parser: self-contained, escaped, with its tables and charts."""

from __future__ import annotations

import itertools
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from agentx.metrics.summary import RunInfo, build_summary
from agentx.report import render_html, write_html
from agentx.report.page import page_source, source_of
from agentx.report.svg import nice_ticks, whole_ticks
from agentx.results.summary import Summary

from .sample import MODEL, ROUTED, routed, summary, typed

VOID = {"meta", "br", "hr", "img", "input", "link", "rect", "line", "circle", "polyline", "path"}


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.unbalanced: list[str] = []
        self.text: list[str] = []
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self.svg_titles: list[str] = []
        self._in: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th"):
            self._cell = []
        self._in.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.unbalanced.append(tag)
        else:
            self.stack.pop()
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None
        if self._in:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._in and self._in[-1] == "title" and "svg" in self.stack:
            self.svg_titles.append(data)

    def count(self, tag: str) -> int:
        return sum(1 for t, _ in self.tags if t == tag)


def parse(html: str) -> Page:
    p = Page()
    p.feed(html)
    p.close()
    return p


class TestHtmlReport:
    def test_self_contained(self) -> None:
        html = render_html(typed())
        page = parse(html)
        assert page.count("script") == 0 and page.count("link") == 0 and page.count("img") == 0
        for _, attrs in page.tags:
            assert "src" not in attrs
            assert "href" not in attrs
        assert "url(" not in html and "@import" not in html
        assert page.count("style") == 1

    def test_well_formed(self) -> None:
        page = parse(render_html(typed()))
        assert page.unbalanced == [] and page.stack == []

    def test_text_is_escaped(self) -> None:
        html = render_html(typed())
        page = parse(html)
        assert MODEL in "".join(page.text)  # shown as text ...
        assert "<&>" not in html  # ... never as markup
        assert not any(t.startswith("&") for t, _ in page.tags)

    def test_summary_tables(self) -> None:
        rows = parse(render_html(typed())).rows
        by_first = {r[0]: r for r in rows if r}
        assert by_first["TTFT"][1:4] == ["165 ms", "195 ms", "195 ms"]
        assert by_first["reported (usage cached_tokens / prompt_tokens)"][1] == "73.4%"
        assert by_first["server /metrics (prefix-cache counter deltas)"][1] == "61.0%"
        assert by_first["ttft_p99"][1:] == ["<= 300 ms", "195 ms", "pass"]
        assert by_first["timeout"][1] == "1"  # errors by type
        assert by_first["session-1"][2] == "6"  # requests of a session

    def test_charts(self) -> None:
        s = summary()
        page = parse(render_html(Summary.from_json(s)))
        titles = set(page.svg_titles)
        for title in (
            "TTFT distribution (CDF)",
            "ITL distribution (CDF)",
            "E2E distribution (CDF)",
            "TTFT by turn depth",
            "Hit rate by turn depth",
            "Requests (per second)",
            "Output tokens (per second)",
            "Hit rate and KV cache usage (per second)",
            "Prompt tokens by source",
        ):
            assert title in titles
        assert page.count("polyline") >= 8
        # the TTFT-by-turn chart has one point per turn depth and series (p50 and p90)
        turns = sum(1 for r in s["rollups"]["per_turn_depth"] if r["ttft_ms"]["p50"] is not None)
        assert len([x for x in page.svg_titles if x.startswith("TTFT p50: ")]) == turns

    def test_warnings(self) -> None:
        s = summary()
        s["warnings"] = ["the client <b>may</b> be the bottleneck"]
        html = render_html(Summary.from_json(s))
        assert "the client <b>may</b> be the bottleneck" in "".join(parse(html).text)
        assert "<b>may" not in html

    def test_slo_failure_is_marked(self) -> None:
        page = parse(render_html(typed(slow=3.0)))
        assert any(a.get("class") == "fail" for t, a in page.tags if t == "span")

    def test_empty_run_renders(self) -> None:
        run = RunInfo(endpoint="e", model="m", started_at="t", duration_s=0.0)
        page = parse(render_html(build_summary(run, [], None, [], 16)))
        assert page.unbalanced == []
        assert "n/a" in "".join(page.text)

    def test_write_html(self, tmp_path: Path) -> None:
        path = tmp_path / "report.html"
        write_html(typed(), path)
        assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
        assert list(tmp_path.iterdir()) == [path]


class TestReplicas:
    """A routed run's section: its figures as the rows give them (sample.routed: replica 0
    holds lanes 0 and 2 with the failed request, replica 1 lane 1; lane 2's own cache hits a
    16-token block less than the shared one on each of its six turns after the first)."""

    def test_a_routed_run_shows_its_replicas(self) -> None:
        html = render_html(routed())
        page = parse(html)
        assert page.unbalanced == [] and page.stack == []
        assert ("h2", {"id": "replicas"}) in page.tags
        at = next(i for i, r in enumerate(page.rows) if r and r[0] == "replica")
        header = page.rows[at]
        a, b = (dict(zip(header, row, strict=True)) for row in page.rows[at + 1 : at + 3])
        assert (a["replica"], b["replica"]) == ("0", "1")
        assert (a["requests"], a["errors"], b["requests"], b["errors"]) == ("12", "1", "6", "0")
        # the prompt tokens sent: lane 0 turns 1-5 and lane 2 turns 0-5 with the failed 5800
        assert (a["prompt tokens"], b["prompt tokens"]) == ("40,800", "18,000")
        # lane 1 is alone on replica 1: reported = theoretical = 12960 / 18000
        assert b["hit rate: reported"] == b["theoretical"] == "72.0%"
        assert b["eviction loss"] == "0.0 pts"
        assert a["theoretical"] == f"{100 * (2 * 12960 + 4992 - 6 * 16) / 40800:.1f}%"
        assert (a["/metrics"], b["/metrics"]) == ("50.0%", "70.0%")
        assert (a["KV peak"], b["KV peak"]) == ("40.0%", "60.0%")
        assert (a["TTFT p50"], a["TTFT p99"], b["ITL p90"]) == ("165 ms", "195 ms", "20.0 ms")
        text = "".join(page.text)
        assert f"replicas: 0: {ROUTED[0]}, 1: {ROUTED[1]}" in text
        # one shared cache hits 6 x 16 tokens more of the 58800 sent: 0.16 points
        assert "routing loss" in text and "0.2 pts" in text
        assert "requests max/mean 1.33" in text  # 12 of a mean 9

    def test_its_charts_leave_an_unknown_rate_out(self) -> None:
        s = routed()
        page = parse(render_html(s))
        titles = set(page.svg_titles)
        assert {"Hit rate per replica (session routing)", "Requests per replica"} <= titles
        assert "replica 1 /metrics: 70.0%" in titles
        assert "replica 0 requests: 12" in titles and "replica 0 errors: 1" in titles
        routing = s.routing
        assert routing is not None
        unknown = replace(
            routing,
            per_replica=(
                replace(routing.per_replica[0], metrics_hit_rate=None),
                *routing.per_replica[1:],
            ),
        )
        titles = set(parse(render_html(replace(s, routing=unknown))).svg_titles)
        assert "replica 1 /metrics: 70.0%" in titles
        assert not any(t.startswith("replica 0 /metrics") for t in titles)  # not drawn as 0

    def test_an_unrouted_run_has_no_replicas_section(self) -> None:
        html = render_html(typed())
        page = parse(html)
        assert not any(a.get("id") == "replicas" for _, a in page.tags)
        assert "Replicas" not in "".join(page.text)
        assert not any("per replica" in t for t in page.svg_titles)


class TestTicks:
    def test_round_steps_covering_the_range(self) -> None:
        assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
        assert nice_ticks(0, 195) == [0, 50, 100, 150, 200]
        ticks = nice_ticks(3, 3)
        assert ticks[0] <= 3 <= ticks[-1]

    @given(st.floats(0.5, 1e9))
    def test_whole_ticks_count_from_zero_past_the_top(self, hi: float) -> None:
        ticks = whole_ticks(hi)
        assert ticks[0] == 0 and ticks[-1] >= hi
        assert all(t == int(t) for t in ticks) and len(ticks) <= 7
        assert len({b - a for a, b in itertools.pairwise(ticks)}) == 1  # one step


def with_errors(failed: int, total: int = 48, **extra: object) -> Summary:
    s = summary()
    s["requests"].update(total=total, ok=total - failed, errors=failed)
    s["errors_by_type"] = {"http": failed} if failed else {}
    s.update(extra)
    return Summary.from_json(s)


def errors_card(page: Page) -> str:
    (cls,) = [a.get("class") or "" for t, a in page.tags if t == "div" and a.get("id") == "errors"]
    return cls


class TestFirstScreen:
    def test_the_errors_card_stands_out_at_any_error_and_is_red_when_most_failed(self) -> None:
        assert errors_card(parse(render_html(with_errors(0)))) == "card"
        assert errors_card(parse(render_html(with_errors(1)))) == "card err"
        assert errors_card(parse(render_html(with_errors(24)))) == "card err"  # half: not most
        assert errors_card(parse(render_html(with_errors(38)))) == "card bad"

    def test_the_errors_card_leads_when_requests_failed(self) -> None:
        html = render_html(with_errors(38))
        assert html.index('id="errors"') < html.index('id="hit-rate"')
        html = render_html(with_errors(0))
        assert html.index('id="hit-rate"') < html.index('id="errors"')

    def test_the_commonest_errors_with_their_message(self) -> None:
        kinds = [
            {"kind": "http", "status": 404, "count": 48, "message": "The model `x` <does not>"}
        ]
        page = parse(render_html(with_errors(48, errors={"by_kind": kinds})))
        assert ["http 404 x48", "The model `x` <does not>"] in page.rows

    def test_the_configuration_is_visible_near_the_top(self) -> None:
        s = summary()
        s["config"] = {"concurrency": 8, "lanes": 5, "time_scale": 0.0, "api": "chat"}
        html = render_html(Summary.from_json(s))
        assert html.index("id='config'") < html.index("<h2>")  # in the header, before sections
        assert "concurrency <b>8 (5 lanes ran)</b>" in html
        options = html[html.index("<h2>Run configuration</h2>") :]
        assert options.index("<td>time_scale</td><td>0.0</td>") < options.index("<details>")

    def test_pages_carry_the_marker_of_their_results(self, tmp_path: Path) -> None:
        source = page_source(tmp_path / "run")
        path = tmp_path / "r.html"
        write_html(typed(), path, source=source)
        assert source_of(path) == source == page_source(tmp_path / "." / "run")
        assert source_of(tmp_path / "missing.html") is None
        assert str(tmp_path) not in path.read_text().split("<style>")[0]
