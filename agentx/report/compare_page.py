"""The HTML page of ``agentx report NEW --compare BASE --html FILE``: the comparison first (deltas,
the latency CDFs of both runs overlaid, what was configured differently), then the new run's own
report."""

from __future__ import annotations

from html import escape

from agentx.report import fmt
from agentx.report.charts import Run, latency_cdfs
from agentx.report.html import page, run_sections, table
from agentx.results.compare import Comparison, RunRef
from agentx.results.summary import Summary


def _who(label: str, run: RunRef) -> str:
    return (
        f"<b>{escape(label)}</b> {escape(str(run.model))} @ "
        f"{escape(str(run.endpoint))} · {escape(str(run.started_at))} · "
        f"{escape(fmt.seconds(run.duration_s))}"
    )


def comparison_section(base: Summary, new: Summary, cmp: Comparison) -> str:
    rows = []
    for row in cmp.metrics:
        cls = row.change if row.change in ("better", "worse") else ""
        key = escape(row.key).replace(".", ".<wbr>")  # narrow screens break keys at dots
        cells = [key, *(escape(c) for c in fmt.compare_cells(row))]
        rows.append([f"<span class='{cls}'>{c}</span>" if cls else c for c in cells])
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
    return (
        "<h1>agentx comparison</h1>"
        f"<div class='meta'>{_who('new', cmp.new)}<br>{_who('base', cmp.base)}</div>"
        + warn
        + detail
        + "<h2>New vs base</h2>"
        + "<p class='note'>green: better, red: worse, by more than 1 %; "
        "ratio = new / base.</p>"
        + table(["metric", "base", "new", "delta", "ratio"], rows, raw=True)
        + "<h2>Latency distributions (base dashed)</h2>"
        + f"<div class='charts'>{''.join(charts.values())}</div>"
    )


def render_compare_html(base: Summary, new: Summary, cmp: Comparison) -> str:
    """The comparison page as one string: the comparison, then the new run's report."""
    title = "agentx comparison"
    body = comparison_section(base, new, cmp) + run_sections(new, "The new run")
    return page(title, body)
