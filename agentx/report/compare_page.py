"""The HTML page of ``agentx report NEW --compare BASE --html FILE``: the comparison first (a
one-line verdict, what was configured differently, the headline deltas, the latency CDFs of both
runs overlaid, every other figure), then the new run's own report."""

from __future__ import annotations

from html import escape

from agentx.report import fmt
from agentx.report.charts import Run, latency_cdfs
from agentx.report.compare import headline_rows, key_label, other_rows
from agentx.report.html import run_sections
from agentx.report.page import page, table
from agentx.results.compare import Comparison, MetricRow, RunRef
from agentx.results.summary import Summary


def _who(label: str, run: RunRef) -> str:
    return (
        f"<b>{escape(label)}</b> {escape(str(run.model))} @ "
        f"{escape(str(run.endpoint))} · {escape(str(run.started_at))} · "
        f"{escape(fmt.seconds(run.duration_s))}"
    )


def _rows(rows: list[MetricRow]) -> list[list[str]]:
    out = []
    for row in rows:
        cls = row.change if row.change in ("better", "worse") else ""
        cells = [
            escape(key_label(row.key)),
            *(escape(c) for c in fmt.compare_cells(row)),
            escape(fmt.change(row)),
        ]
        out.append([f"<span class='{cls}'>{c}</span>" if cls else c for c in cells])
    return out


HEADERS = ["metric", "base", "new", "delta", "ratio", "change"]


def comparison_section(base: Summary, new: Summary, cmp: Comparison) -> str:
    warn = "".join(f"<p class='warn'>{escape(w)}</p>" for w in fmt.config_warnings(cmp))
    diffs = cmp.config_differences
    detail = ""
    if diffs:
        detail = "<details><summary>every option that differs</summary>" + table(
            ["option", "base", "new"],
            [[d.key, repr(d.base), repr(d.new)] for d in diffs],
        )
        detail += "</details>"
    charts = latency_cdfs([Run("base", base, dash=True), Run("new", new)])
    rest = other_rows(cmp)
    return (
        "<h1>agentx comparison</h1>"
        f"<div class='meta'>{_who('new', cmp.new)}<br>{_who('base', cmp.base)}</div>"
        f"<p class='verdict' id='verdict'>verdict: {escape(fmt.verdict_line(cmp))}</p>"
        + warn
        + detail
        + "<h2>Headline</h2>"
        + table(HEADERS, _rows(headline_rows(cmp)), raw=True)
        + f"<p class='note'>{escape(fmt.COMPARE_LEGEND)}</p>"
        + "<h2>Latency distributions (base dashed)</h2>"
        + f"<div class='charts'>{''.join(charts.values())}</div>"
        + ("<h2>Every other figure</h2>" + table(HEADERS, _rows(rest), raw=True) if rest else "")
    )


def render_compare_html(
    base: Summary, new: Summary, cmp: Comparison, source: str | None = None
) -> str:
    """The comparison page as one string: the comparison, then the new run's report."""
    title = "agentx comparison"
    body = comparison_section(base, new, cmp) + run_sections(new, "The new run")
    return page(title, body, source)
