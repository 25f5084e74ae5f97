"""Terminal rendering of a summary and of a comparison, with rich.

Tables use rich's Markdown box, so what a terminal shows pastes into a GitHub issue as a table.
"""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from agentx.report import fmt
from agentx.results.compare import Comparison
from agentx.results.summary import Summary
from agentx.results.summary.server import Tiers
from agentx.results.summary.slo import Slo


def _table(*headers: str) -> Table:
    t = Table(box=box.MARKDOWN, show_edge=True, pad_edge=True, header_style="bold")
    for i, h in enumerate(headers):
        t.add_column(h, justify="left" if i == 0 else "right", no_wrap=i == 0)
    return t


def _header(s: Summary) -> Text:
    req = s.requests
    err = ", ".join(f"{k} {v}" for k, v in s.errors_by_type.items())
    line = Text()
    line.append("agentx replay ", style="bold")
    line.append(f"{s.model} @ {s.endpoint}  ·  {s.started_at}")
    line.append(f"  ·  {fmt.seconds(s.duration_s)}")
    if s.merged_from:
        line.append(f"  ·  merged from {len(s.merged_from)} shards")
    line.append("\n")
    line.append(
        f"requests {fmt.count(req.total)} (ok {fmt.count(req.ok)}, "
        f"errors {fmt.count(req.errors)}{': ' + err if err else ''})"
    )
    line.append(
        f"  ·  sessions {fmt.count(s.sessions.started)} started, "
        f"{fmt.count(s.sessions.completed)} completed"
    )
    if req.warmup:
        line.append(f"  ·  warm-up {fmt.count(req.warmup)} (excluded)")
    if req.drained:
        line.append(f"  ·  drained {fmt.count(req.drained)} (apart)")
    return line


def _latency(s: Summary) -> Table:
    columns = fmt.stat_columns(s)
    t = _table("latency", *columns)
    for label, dist, f in fmt.LATENCY_ROWS:
        p = dist(s)
        t.add_row(label, *(f(p.stat(k)) for k in columns))
    return t


def _cost(s: Summary) -> Table | None:
    rows = fmt.cost_rows(s)
    if not rows:
        return None
    t = _table("cost and margin", "value")
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
    t = _table("throughput & cache", "value")
    tp, tok, cache = s.throughput, s.tokens, s.cache
    t.add_row("requests/s", fmt.num(tp.requests_per_s))
    t.add_row("input tokens/s", fmt.num(tp.input_tokens_per_s))
    t.add_row("output tokens/s", fmt.num(tp.output_tokens_per_s))
    t.add_row(
        "tokens in / out / cached",
        f"{fmt.count(tok.input)} / {fmt.count(tok.output)} / {fmt.count(tok.cached)}",
    )
    t.add_row("hit rate: reported (usage)", fmt.pct(cache.reported_hit_rate))
    t.add_row("hit rate: server /metrics", fmt.pct(cache.server_metrics_hit_rate))
    t.add_row(
        f"hit rate: theoretical (block {_block(cache.block_size)})",
        fmt.pct(cache.theoretical_hit_rate),
    )
    if cache.tiers is not None and cache.tiers.to_json():
        t.add_row("prompt tokens by source", _tiers(cache.tiers))
    usage = cache.kv_cache_usage_perc
    if usage is not None:
        t.add_row("KV cache usage p50 / max", f"{fmt.pct(usage.p50)} / {fmt.pct(usage.max)}")
    cpu = f"{fmt.num(s.client.cpu_percent)}%"
    t.add_row("client CPU", cpu + ("  [bold red]SATURATED[/]" if s.client.saturated else ""))
    return t


def _block(size: int | None) -> str:
    return "?" if size is None else str(size)


def _slo(slo: Slo) -> Table | None:
    if not slo.checks:
        return None
    t = _table("SLO", "threshold", "value", "result")
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
    """The run at a glance: header line, latency table, throughput & cache table, SLO table."""
    parts: list[RenderableType] = [_header(summary), _latency(summary), _overview(summary)]
    for table in (_cost(summary), _slo(summary.slo)):
        if table is not None:
            parts.append(table)
    for note in fmt.cost_notes(summary):
        parts.append(Text(f"note: {note}", style="dim"))
    for w in fmt.warnings(summary):
        parts.append(Text(f"warning: {w}", style="bold yellow"))
    return Group(*parts)


def render_compare(cmp: Comparison) -> RenderableType:
    """A comparison table: base, new, delta and ratio; green better, red worse."""
    head = Text()
    b, n = cmp.base, cmp.new
    head.append("base ", style="bold")
    head.append(f"{b.model} @ {b.endpoint}  ·  {b.started_at}\n")
    head.append("new  ", style="bold")
    head.append(f"{n.model} @ {n.endpoint}  ·  {n.started_at}")
    t = _table("metric", "base", "new", "delta", "ratio")
    styles = {"better": "green", "worse": "red"}
    for row in cmp.metrics:
        style = styles.get(row.change or "", "")
        t.add_row(row.key, *fmt.compare_cells(row), style=style)
    parts: list[RenderableType] = [head, t]
    for line in fmt.config_warnings(cmp):
        parts.append(Text(f"warning: {line}", style="bold yellow"))
    return Group(*parts)
