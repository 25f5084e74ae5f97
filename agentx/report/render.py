"""Terminal rendering of a summary and of a comparison, with rich.

Tables use rich's Markdown box, so what a terminal shows pastes into a GitHub issue as a table.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from agentx.report import fmt
from agentx.report.fmt import get


def _table(*headers: str) -> Table:
    t = Table(box=box.MARKDOWN, show_edge=True, pad_edge=True, header_style="bold")
    for i, h in enumerate(headers):
        t.add_column(h, justify="left" if i == 0 else "right", no_wrap=i == 0)
    return t


def _header(s: dict[str, Any]) -> Text:
    req = s.get("requests", {})
    errors = s.get("errors_by_type") or {}
    err = ", ".join(f"{k} {v}" for k, v in errors.items())
    line = Text()
    line.append("agentx replay ", style="bold")
    line.append(f"{s.get('model')} @ {s.get('endpoint')}  ·  {s.get('started_at')}")
    line.append(f"  ·  {fmt.seconds(s.get('duration_s'))}")
    if s.get("merged_from"):
        line.append(f"  ·  merged from {len(s['merged_from'])} shards")
    line.append("\n")
    line.append(
        f"requests {fmt.count(req.get('total'))} (ok {fmt.count(req.get('ok'))}, "
        f"errors {fmt.count(req.get('errors'))}{': ' + err if err else ''})"
    )
    sessions = s.get("sessions", {})
    line.append(
        f"  ·  sessions {fmt.count(sessions.get('started'))} started, "
        f"{fmt.count(sessions.get('completed'))} completed"
    )
    if req.get("warmup"):
        line.append(f"  ·  warm-up {fmt.count(req['warmup'])} (excluded)")
    if req.get("drained"):
        line.append(f"  ·  drained {fmt.count(req['drained'])} (apart)")
    return line


def _latency(s: dict[str, Any]) -> Table:
    columns = fmt.stat_columns(s)
    t = _table("latency", *columns)
    for label, key, f in fmt.LATENCY_ROWS:
        p = get(s, key) or {}
        t.add_row(label, *(f(p.get(k)) for k in columns))
    return t


def _cost(s: dict[str, Any]) -> Table | None:
    rows = fmt.cost_rows(s)
    if not rows:
        return None
    t = _table("cost and margin", "value")
    for label, value in rows:
        t.add_row(label, value)
    return t


def _tiers(tiers: dict[str, Any] | None) -> str:
    if not tiers:
        return fmt.NA
    parts = []
    for key, label in (
        ("local_cache_hit", "GPU"),
        ("external_kv_transfer", "offload"),
        ("local_compute", "computed"),
    ):
        part = tiers.get(key)
        if part is not None:
            parts.append(f"{label} {fmt.pct(part.get('fraction'))}")
    return " · ".join(parts) if parts else fmt.NA


def _overview(s: dict[str, Any]) -> Table:
    t = _table("throughput & cache", "value")
    tp, tok, cache = s.get("throughput", {}), s.get("tokens", {}), s.get("cache", {})
    t.add_row("requests/s", fmt.num(tp.get("requests_per_s")))
    t.add_row("input tokens/s", fmt.num(tp.get("input_tokens_per_s")))
    t.add_row("output tokens/s", fmt.num(tp.get("output_tokens_per_s")))
    t.add_row(
        "tokens in / out / cached",
        f"{fmt.count(tok.get('input'))} / {fmt.count(tok.get('output'))} / "
        f"{fmt.count(tok.get('cached'))}",
    )
    t.add_row("hit rate: reported (usage)", fmt.pct(cache.get("reported_hit_rate")))
    t.add_row("hit rate: server /metrics", fmt.pct(cache.get("server_metrics_hit_rate")))
    t.add_row(
        f"hit rate: theoretical (block {cache.get('block_size', '?')})",
        fmt.pct(cache.get("theoretical_hit_rate")),
    )
    if cache.get("tiers"):
        t.add_row("prompt tokens by source", _tiers(cache.get("tiers")))
    usage = cache.get("kv_cache_usage_perc")
    if usage:
        t.add_row("KV cache usage p50 / max", f"{fmt.pct(usage['p50'])} / {fmt.pct(usage['max'])}")
    client = s.get("client", {})
    cpu = f"{fmt.num(client.get('cpu_percent'))}%"
    t.add_row("client CPU", cpu + ("  [bold red]SATURATED[/]" if client.get("saturated") else ""))
    return t


def _slo(slo: dict[str, Any]) -> Table | None:
    if not slo or not slo.get("checks"):
        return None
    t = _table("SLO", "threshold", "value", "result")
    for c in slo["checks"]:
        unit = c.get("unit", "")
        f = fmt.ms if unit == "ms" else fmt.pct if unit == "fraction" else fmt.num
        t.add_row(
            c["metric"],
            f"{c['op']} {f(c['threshold'])}",
            f(c["value"]),
            "[green]pass[/]" if c["passed"] else "[bold red]FAIL[/]",
        )
    gp = slo.get("goodput")
    if gp:
        t.add_row(
            "good requests",
            "meet every per-request SLO",
            f"{fmt.count(gp['good'])}/{fmt.count(gp['requests'])} "
            f"({fmt.num(gp['requests_per_s'])} req/s)",
            "",
        )
    return t


def render_summary(summary: dict[str, Any]) -> RenderableType:
    """The run at a glance: header line, latency table, throughput & cache table, SLO table."""
    parts: list[RenderableType] = [_header(summary), _latency(summary), _overview(summary)]
    for table in (_cost(summary), _slo(summary.get("slo") or {})):
        if table is not None:
            parts.append(table)
    for note in fmt.cost_notes(summary):
        parts.append(Text(f"note: {note}", style="dim"))
    for w in fmt.warnings(summary):
        parts.append(Text(f"warning: {w}", style="bold yellow"))
    return Group(*parts)


def render_compare(cmp: dict[str, Any]) -> RenderableType:
    """A comparison table: base, new, delta and ratio; green better, red worse."""
    head = Text()
    b, n = cmp["base"], cmp["new"]
    head.append("base ", style="bold")
    head.append(f"{b.get('model')} @ {b.get('endpoint')}  ·  {b.get('started_at')}\n")
    head.append("new  ", style="bold")
    head.append(f"{n.get('model')} @ {n.get('endpoint')}  ·  {n.get('started_at')}")
    t = _table("metric", "base", "new", "delta", "ratio")
    styles = {"better": "green", "worse": "red"}
    for row in cmp["metrics"]:
        style = styles.get(row["change"] or "", "")
        t.add_row(row["key"], *fmt.compare_cells(row), style=style)
    parts: list[RenderableType] = [head, t]
    for line in fmt.config_warnings(cmp):
        parts.append(Text(f"warning: {line}", style="bold yellow"))
    return Group(*parts)
