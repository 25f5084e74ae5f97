"""A self-contained HTML report of one run: inline CSS, inline SVG charts, no scripts, no fetches.

Everything comes from ``summary.json`` (its ``rollups`` carry the per-turn and per-second data),
so ``agentx report DIR --html FILE`` can rebuild it from a results directory alone.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

import orjson

from agentx.report import fmt, svg
from agentx.report.fmt import get

MAX_SESSION_ROWS = 200

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#111827;
max-width:1040px;margin:24px auto;padding:0 16px;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e5e7eb;
padding-bottom:4px}.meta{color:#4b5563}.cards{display:flex;flex-wrap:wrap;gap:10px;margin:16px 0}
.card{border:1px solid #e5e7eb;border-radius:8px;padding:8px 12px;min-width:120px}
.card b{display:block;font-size:20px}.card span{color:#6b7280;font-size:12px}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid #e5e7eb;padding:4px 10px;text-align:right}th{background:#f9fafb}
td:first-child,th:first-child{text-align:left}.pass{color:#15803d;font-weight:600}
.fail{color:#b91c1c;font-weight:600}.warn{background:#fef2f2;border:1px solid #fecaca;padding:8px 12px;
border-radius:8px;color:#991b1b}.charts{display:flex;flex-wrap:wrap;gap:12px}
svg.chart{max-width:100%;height:auto}svg .ct{font-size:13px;font-weight:600;text-anchor:middle}
svg .xt{font-size:11px;text-anchor:middle;fill:#374151}svg .yt{font-size:11px;text-anchor:end;fill:#374151}
svg .al{font-size:11px;text-anchor:middle;fill:#6b7280}svg .lg{font-size:11px;fill:#374151}
svg .gr{stroke:#e5e7eb}svg .ax{stroke:#9ca3af}details pre{background:#f9fafb;padding:8px;overflow:auto}
.note{color:#6b7280;font-size:12px}
"""


def _pct_tick(v: float) -> str:
    return f"{100 * v:.0f}%"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], raw: bool = False) -> str:
    """A table; cells are escaped unless ``raw`` (for cells this module built itself)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{c if raw else escape(c)}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _card(value: str, label: str) -> str:
    return f'<div class="card"><b>{escape(value)}</b><span>{escape(label)}</span></div>'


def _header(s: dict[str, Any], title: str) -> str:
    req = s.get("requests", {})
    cards = [
        _card(fmt.count(req.get("total")), "requests"),
        _card(fmt.count(req.get("errors")), "errors"),
        _card(fmt.num(get(s, "throughput.requests_per_s")), "requests/s"),
        _card(fmt.num(get(s, "throughput.output_tokens_per_s")), "output tokens/s"),
        _card(fmt.ms(get(s, "latency_ms.ttft.p50")), "TTFT p50"),
        _card(fmt.pct(get(s, "cache.reported_hit_rate")), "hit rate (usage)"),
        _card(fmt.pct(get(s, "cache.server_metrics_hit_rate")), "hit rate (/metrics)"),
        _card(fmt.pct(get(s, "cache.theoretical_hit_rate")), "hit rate (theoretical)"),
    ]
    meta = (
        f"{escape(str(s.get('model')))} @ {escape(str(s.get('endpoint')))} · "
        f"{escape(str(s.get('started_at')))} · {escape(fmt.seconds(s.get('duration_s')))} · "
        f"sessions {escape(fmt.count(get(s, 'sessions.started')))} started, "
        f"{escape(fmt.count(get(s, 'sessions.completed')))} completed"
    )
    out = f"<h1>{escape(title)}</h1><div class='meta'>{meta}</div>"
    out += f"<div class='cards'>{''.join(cards)}</div>"
    for w in fmt.warnings(s):
        out += f"<p class='warn'>{escape(w)}</p>"
    return out


def _latency(s: dict[str, Any]) -> str:
    rows = []
    for label, key, f in fmt.LATENCY_ROWS:
        p = get(s, key) or {}
        rows.append([label, *(f(p.get(k)) for k in fmt.STATS)])
    charts = []
    for name in ("ttft", "ttfc", "itl", "tpot", "e2e"):
        p = get(s, f"latency_ms.{name}") or {}
        charts.append(
            svg.bar_chart(
                [(name.upper(), [(k, p.get(k)) for k in ("p50", "p90", "p99")])],
                title=f"{name.upper()} (ms)",
                y_format=fmt.num,
                width=200,
            )
        )
    return (
        "<h2>Latency</h2>"
        + _table(["metric", *fmt.STATS], rows)
        + f"<div class='charts'>{''.join(charts)}</div>"
    )


def _cache(s: dict[str, Any]) -> str:
    c = s.get("cache", {})
    tok = s.get("tokens", {})
    rows = [
        ["reported (usage cached_tokens / prompt_tokens)", fmt.pct(c.get("reported_hit_rate"))],
        [
            "server /metrics (prefix-cache counter deltas)",
            fmt.pct(c.get("server_metrics_hit_rate")),
        ],
        [
            f"theoretical (unbounded cache, block {c.get('block_size', '?')})",
            fmt.pct(c.get("theoretical_hit_rate")),
        ],
        [
            "tokens in / out / cached",
            f"{fmt.count(tok.get('input'))} / {fmt.count(tok.get('output'))} / {fmt.count(tok.get('cached'))}",
        ],
    ]
    usage = c.get("kv_cache_usage_perc")
    if usage:
        rows.append(
            ["KV cache usage p50 / max", f"{fmt.pct(usage['p50'])} / {fmt.pct(usage['max'])}"]
        )
    out = "<h2>Prefix cache</h2>" + _table(["hit rate", "value"], rows)
    tiers = c.get("tiers") or {}
    parts = [
        (label, float(tiers[key]["fraction"]))
        for key, label in (
            ("local_cache_hit", "GPU hit"),
            ("external_kv_transfer", "offload hit"),
            ("local_compute", "computed"),
        )
        if isinstance(tiers.get(key), dict) and tiers[key].get("fraction") is not None
    ]
    if parts:
        out += svg.share_bar(parts, title="Prompt tokens by source (server /metrics)")
    return out


def _per_turn(s: dict[str, Any]) -> str:
    rows = get(s, "rollups.per_turn_depth") or []
    if not rows:
        return ""
    ttft = svg.line_chart(
        [
            svg.Series(
                "TTFT p50", [(r["turn"], r["ttft_ms"]["p50"]) for r in rows], svg.PALETTE[0]
            ),
            svg.Series(
                "TTFT p90", [(r["turn"], r["ttft_ms"]["p90"]) for r in rows], svg.PALETTE[1]
            ),
        ],
        title="TTFT by turn depth",
        x_label="turn (position in its thread)",
        y_label="ms",
        y_format=fmt.num,
        width=500,
    )
    hit = svg.line_chart(
        [
            svg.Series(
                "reported", [(r["turn"], r["reported_hit_rate"]) for r in rows], svg.PALETTE[0]
            ),
            svg.Series(
                "theoretical",
                [(r["turn"], r["theoretical_hit_rate"]) for r in rows],
                svg.PALETTE[2],
            ),
        ],
        title="Hit rate by turn depth",
        x_label="turn (position in its thread)",
        y_label="hit rate",
        y_format=fmt.pct,
        tick_format=_pct_tick,
        y_max=1.0,
        width=500,
    )
    return f"<h2>By turn depth</h2><div class='charts'>{ttft}{hit}</div>"


def _time_series(s: dict[str, Any]) -> str:
    rows = get(s, "rollups.time_series") or []
    if not rows:
        return ""
    rate = svg.line_chart(
        [
            svg.Series(
                "completed req/s", [(r["t_s"], r["completed"]) for r in rows], svg.PALETTE[0]
            ),
            svg.Series("errors/s", [(r["t_s"], r["errors"]) for r in rows], svg.PALETTE[1]),
        ],
        title="Requests per second",
        x_label="seconds since the first measured request",
        y_label="requests/s",
        width=500,
    )
    tokens = svg.line_chart(
        [
            svg.Series(
                "output tokens/s", [(r["t_s"], r["output_tokens"]) for r in rows], svg.PALETTE[2]
            )
        ],
        title="Output tokens per second",
        x_label="seconds since the first measured request",
        y_label="tokens/s",
        y_format=fmt.num,
        width=500,
    )
    hit = svg.line_chart(
        [
            svg.Series(
                "reported", [(r["t_s"], r["reported_hit_rate"]) for r in rows], svg.PALETTE[0]
            ),
            svg.Series(
                "server /metrics", [(r["t_s"], r["server_hit_rate"]) for r in rows], svg.PALETTE[3]
            ),
            svg.Series(
                "KV usage", [(r["t_s"], r["kv_cache_usage_perc"]) for r in rows], svg.PALETTE[4]
            ),
        ],
        title="Hit rate and KV cache usage per second",
        x_label="seconds since the first measured request",
        y_label="fraction",
        y_format=fmt.pct,
        tick_format=_pct_tick,
        y_max=1.0,
        width=1000,
    )
    return f"<h2>Over time</h2><div class='charts'>{rate}{tokens}{hit}</div>"


def _slo(s: dict[str, Any]) -> str:
    slo = s.get("slo") or {}
    if not slo.get("checks"):
        return ""
    rows = []
    for c in slo["checks"]:
        unit = c.get("unit", "")
        f = fmt.ms if unit == "ms" else fmt.pct if unit == "fraction" else fmt.num
        verdict = (
            "<span class='pass'>pass</span>" if c["passed"] else "<span class='fail'>FAIL</span>"
        )
        rows.append(
            [
                escape(c["metric"]),
                escape(f"{c['op']} {f(c['threshold'])}"),
                escape(f(c["value"])),
                verdict,
            ]
        )
    out = "<h2>SLO</h2>" + _table(["check", "threshold", "value", "result"], rows, raw=True)
    gp = slo.get("goodput")
    if gp:
        out += (
            f"<p>Goodput: {escape(fmt.pct(gp['fraction']))} of {escape(fmt.count(gp['requests']))} "
            f"requests met every per-request SLO ({escape(fmt.num(gp['requests_per_s']))} req/s).</p>"
        )
    return out


def _errors_and_windows(s: dict[str, Any]) -> str:
    out = ""
    errors = s.get("errors_by_type") or {}
    if errors:
        out += "<h2>Errors</h2>" + _table(
            ["type", "requests"], [[k, fmt.count(v)] for k, v in errors.items()]
        )
    drained = get(s, "windows.drained") or {}
    if drained.get("requests"):
        out += (
            f"<p class='note'>{escape(fmt.count(drained['requests']))} requests were sent after the "
            "--duration window and are reported apart (not in the figures above).</p>"
        )
    return out


def _sessions(s: dict[str, Any]) -> str:
    rows = get(s, "rollups.per_session") or []
    if not rows:
        return ""
    body = [
        [
            str(r["session_id"]),
            str(r["lane"]),
            fmt.count(r["requests"]),
            fmt.count(r["errors"]),
            fmt.seconds(r["duration_s"]),
            fmt.count(r["input_tokens"]),
            fmt.pct(r["reported_hit_rate"]),
            fmt.pct(r["theoretical_hit_rate"]),
            fmt.ms(r["ttft_ms_p50"]),
        ]
        for r in rows[:MAX_SESSION_ROWS]
    ]
    note = ""
    if len(rows) > MAX_SESSION_ROWS:
        note = f"<p class='note'>first {MAX_SESSION_ROWS} of {len(rows)} sessions; all are in summary.json.</p>"
    headers = [
        "session",
        "lane",
        "requests",
        "errors",
        "duration",
        "input tokens",
        "hit rate",
        "theoretical",
        "TTFT p50",
    ]
    return "<h2>Sessions</h2>" + _table(headers, body) + note


def render_html(summary: dict[str, Any], title: str = "agentx replay report") -> str:
    """The report page as one string."""
    config = orjson.dumps(
        {"config": summary.get("config"), "server": summary.get("server")},
        option=orjson.OPT_INDENT_2,
    ).decode()
    body = "".join(
        [
            _header(summary, title),
            _latency(summary),
            _cache(summary),
            _per_turn(summary),
            _time_series(summary),
            _slo(summary),
            _errors_and_windows(summary),
            _sessions(summary),
            f"<h2>Run configuration</h2><details><summary>options and server deltas</summary>"
            f"<pre>{escape(config)}</pre></details>",
        ]
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>{body}</body></html>\n"
    )


def write_html(summary: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write the report to ``path`` (via a temporary file, so a reader never sees half of it)."""
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(render_html(summary), encoding="utf-8")
    tmp.replace(p)
