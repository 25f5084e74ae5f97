"""Terminal rendering of a summary and of a comparison, with rich.

A report leads with what a reader looks at first: which run, what it replayed, whether requests
failed, the hit rate three ways and throughput against interactivity; the tables follow. Tables
are :mod:`agentx.core.tables` tables: rich boxes on a terminal, Markdown pipes in a pipe or a
file (they paste into a GitHub issue as tables). Nothing here relies on colour alone: a failure
says FAIL, a comparison says better or worse.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table as Grid
from rich.text import Text

from agentx.core.tables import Table, table
from agentx.report import fmt, glance
from agentx.report.compare import headline_rows, key_label, other_rows
from agentx.results.compare import Comparison, MetricRow
from agentx.results.summary import Summary
from agentx.results.summary.server import Tiers
from agentx.results.summary.slo import Slo


def _header(s: Summary) -> Text:
    req = s.requests
    err = ", ".join(f"{k} {v}" for k, v in s.errors_by_type.items())
    line = Text()
    line.append("agentx replay ", style="bold")
    line.append(f"{s.model} @ {s.endpoint}\n")
    line.append(f"{s.started_at}  ·  {fmt.seconds(s.duration_s)}")
    if s.merged_from:
        line.append(f"  ·  merged from {len(s.merged_from)} shards")
    line.append(
        f"  ·  sessions {fmt.count(s.sessions.started)} started, "
        f"{fmt.count(s.sessions.completed)} completed\n"
    )
    line.append(
        f"requests {fmt.count(req.total)} (ok {fmt.count(req.ok)}, "
        f"errors {fmt.count(req.errors)}{': ' + err if err else ''})"
    )
    if req.warmup:
        line.append(f"  ·  warm-up {fmt.count(req.warmup)} (excluded)")
    if req.drained:
        line.append(f"  ·  drained {fmt.count(req.drained)} (apart)")
    return line


def _grid(rows: list[tuple[str, str]], label_style: str = "bold") -> Grid:
    g = Grid.grid(padding=(0, 2))
    g.add_column(style=label_style, no_wrap=True)
    g.add_column()
    for label, value in rows:
        g.add_row(Text(label), Text(value))  # a server's message is text, never markup
    return g


def _errors(s: Summary) -> RenderableType | None:
    """The failed requests, in red when most failed, with the commonest messages."""
    line = glance.errors_line(s)
    if line is None:
        return None
    style = "bold red" if glance.mostly_failed(s) else "bold yellow"
    parts: list[RenderableType] = [Text(f"ERRORS  {line}", style=style)]
    kinds = glance.error_kinds(s)
    if kinds:
        parts.append(_grid([(what, message) for what, message in kinds], label_style=style))
    return Group(*parts)


def _latency(s: Summary) -> Table:
    columns = fmt.stat_columns(s)
    t = table("latency", *columns)
    for label, dist, f in fmt.LATENCY_ROWS:
        p = dist(s)
        t.add_row(label, *(f(p.stat(k)) for k in columns))
    return t


def _cost(s: Summary) -> Table | None:
    rows = fmt.cost_rows(s)
    if not rows:
        return None
    t = table("cost and margin", "value")
    for label, value in rows:
        t.add_row(label, value)
    return t


def _tiers(tiers: Tiers | None) -> str:
    if tiers is None:
        return fmt.NA
    parts = []
    for key, label in (
        ("local_cache_hit", "GPU"),
        ("external_kv_transfer", "offload"),
        ("local_compute", "computed"),
    ):
        part = tiers.part(key)
        if part is not None:
            parts.append(f"{label} {fmt.pct(part.fraction)}")
    return " · ".join(parts) if parts else fmt.NA


def _overview(s: Summary) -> Table:
    t = table("cache & throughput", "value")
    tp, tok, cache = s.throughput, s.tokens, s.cache
    for label, value in glance.hit_rates(s):
        t.add_row(f"hit rate: {label}", value)
    if cache.tiers is not None and cache.tiers.to_json():
        t.add_row("prompt tokens by source", _tiers(cache.tiers))
    t.add_row("output tokens/s", fmt.num(tp.output_tokens_per_s))
    t.add_row("input tokens/s", fmt.num(tp.input_tokens_per_s))
    t.add_row("requests/s", fmt.num(tp.requests_per_s))
    t.add_row(
        "tokens in / out / cached",
        f"{fmt.count(tok.input)} / {fmt.count(tok.output)} / {fmt.count(tok.cached)}",
    )
    usage = glance.kv_usage(s)
    if usage is not None:
        t.add_row("KV cache usage p50 / max", usage)
    cpu, why = glance.client_line(s)
    t.add_row("client CPU", cpu + (f"  [bold red]{why}[/]" if why else ""))
    return t


def _replicas(s: Summary) -> list[RenderableType]:
    rows = fmt.replica_rows(s)
    if not rows:
        return []
    t = table("replica", *fmt.REPLICA_COLUMNS)
    for label, cells in rows:
        t.add_row(label, *cells)
    return [t, *(Text(line) for line in fmt.routing_lines(s))]


def _slo(slo: Slo) -> Table | None:
    if not slo.checks:
        return None
    t = table("SLO", "threshold", "value", "result")
    for c in slo.checks:
        f = fmt.slo_format(c.unit)
        t.add_row(
            c.metric,
            f"{c.op} {f(c.threshold)}",
            f(c.value),
            "[green]pass[/]" if c.passed else "[bold red]FAIL[/]",
        )
    gp = slo.goodput
    if gp is not None:
        t.add_row(
            "good requests",
            "meet every per-request SLO",
            f"{fmt.count(gp.good)}/{fmt.count(gp.requests)} ({fmt.num(gp.requests_per_s)} req/s)",
            "",
        )
    return t


def render_summary(summary: Summary) -> RenderableType:
    """The run at a glance: which run and what it replayed, its errors, the headline (hit rate
    three ways, throughput vs interactivity), then the cache & throughput, latency, cost and
    SLO tables, notes and each warning once."""
    parts: list[RenderableType] = [_header(summary)]
    config = glance.config_items(summary)
    if config:
        parts.append(_grid([("config", " · ".join(f"{k} {v}" for k, v in config))]))
    errors = _errors(summary)
    if errors is not None:
        parts.append(errors)
    parts += [Text(""), _grid(glance.headline(summary)), _overview(summary), _latency(summary)]
    parts += _replicas(summary)
    cost = _cost(summary)
    if cost is not None:
        parts.append(cost)
        parts += [Text(f"note: {note}", style="bold") for note in fmt.cost_notes(summary)]
    slo = _slo(summary.slo)
    if slo is not None:
        parts.append(slo)
    for w in glance.warnings(summary):
        parts.append(Text(f"warning: {w}", style="bold yellow"))
    return Group(*parts)


def _compare_table(title: str, rows: list[MetricRow]) -> Table:
    t = table(title, "base", "new", "delta", "ratio", "change")
    styles = {"better": "green", "worse": "red"}
    for row in rows:
        style = styles.get(row.change or "", "")
        t.add_row(key_label(row.key), *fmt.compare_cells(row), fmt.change(row), style=style)
    return t


def render_compare(cmp: Comparison) -> RenderableType:
    """The comparison: which runs, a one-line verdict, the headline figures (hit rates, TTFT and
    ITL p50/p99, tokens/s), then every other figure; each change in words and an arrow
    (``▲ worse``), so it reads without colour and through a pipe."""
    head = _grid(
        [
            (
                side,
                f"{run.model} @ {run.endpoint}\n{run.started_at}  ·  {fmt.seconds(run.duration_s)}",
            )
            for side, run in (("base", cmp.base), ("new", cmp.new))
        ]
    )
    parts: list[RenderableType] = [
        head,
        Text(f"verdict: {fmt.verdict_line(cmp)}", style="bold"),
        _compare_table("headline", headline_rows(cmp)),
    ]
    rest = other_rows(cmp)
    if rest:
        parts.append(_compare_table("every other figure", rest))
    parts.append(Text(fmt.COMPARE_LEGEND, style="dim"))
    for line in fmt.config_warnings(cmp):
        parts.append(Text(f"warning: {line}", style="bold yellow"))
    return Group(*parts)
