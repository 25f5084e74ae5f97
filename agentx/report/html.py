"""A self-contained HTML report of one run: inline CSS, inline SVG charts, no scripts, no fetches.

Everything comes from ``summary.json`` (its ``rollups`` carry the per-turn and per-second data),
so ``agentx report DIR --html FILE`` can rebuild it from a results directory alone. The first
screen holds what a reader looks at first: the errors card when requests failed (red when most
did), the hit rate three ways, throughput against interactivity, and the run's configuration.

Every page carries a marker naming the results it was made from (a digest of their directories,
never the paths): agentx rewrites a page it made from the same results without ``--force``, and
never replaces any other file without it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from html import escape
from pathlib import Path

import orjson

from agentx.core.errors import UsageError
from agentx.core.outputs import check_output, write_atomic
from agentx.report import fmt, glance, svg
from agentx.report.charts import CDF_METRICS, summary_charts
from agentx.results.summary import Summary

MAX_SESSION_ROWS = 200

CSS = (
    """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#111827;
max-width:1040px;margin:24px auto;padding:0 16px;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e5e7eb;
padding-bottom:4px}.meta{color:#4b5563}.cards{display:flex;flex-wrap:wrap;gap:10px;margin:16px 0}
.card{border:1px solid #e5e7eb;border-radius:8px;padding:8px 12px;min-width:120px}
.card b{display:block;font-size:20px}.card span{color:#6b7280;font-size:12px}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid #e5e7eb;padding:4px 10px;text-align:right}th{background:#f9fafb}
td:first-child,th:first-child{text-align:left}td:not(:first-child){white-space:nowrap}.pass{color:#15803d;font-weight:600}
.fail{color:#b91c1c;font-weight:600}.warn{background:#fef2f2;border:1px solid #fecaca;padding:8px 12px;
border-radius:8px;color:#991b1b}.charts{display:flex;flex-wrap:wrap;gap:12px}
svg.chart{max-width:100%;height:auto}.charts>svg{flex:0 1 auto;min-width:0}
details pre{background:#f9fafb;padding:8px;overflow:auto;white-space:pre-wrap;word-break:break-all}
.note{color:#6b7280;font-size:12px}.tw{overflow-x:auto;max-width:100%}
.better{color:#15803d}.worse{color:#b91c1c}.meta{overflow-wrap:anywhere}
.card.err{border:2px solid #d97706;background:#fffbeb}.card.err b{color:#92400e}
.card.bad{border:2px solid #dc2626;background:#fef2f2}.card.bad b{color:#b91c1c}
.card.hit{border-color:#2563eb}.errors{margin:0 0 12px}.errors td,.errors th{text-align:left;white-space:normal}
.config{display:flex;flex-wrap:wrap;gap:4px 16px;margin:8px 0;color:#374151}.config b{color:#111827}
.verdict{font-size:16px;font-weight:600;margin:12px 0}
.replicas th,.replicas td{padding:4px 6px}
@media (max-width:600px){body{margin:12px auto;padding:0 8px}th,td{padding:3px 6px}
.card{min-width:96px}.card b{font-size:17px}}
"""
    + svg.CHART_CSS
)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], raw: bool = False) -> str:
    """A table; cells are escaped unless ``raw`` (for cells this module built itself)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{c if raw else escape(c)}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return (
        f"<div class='tw'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


def _card(value: str, label: str, cls: str = "", ident: str = "") -> str:
    attrs = f' class="card {cls}"' if cls else ' class="card"'
    if ident:
        attrs += f' id="{ident}"'
    return f"<div{attrs}><b>{escape(value)}</b><span>{escape(label)}</span></div>"


def _errors_card(s: Summary) -> str:
    """The errors card: plain at 0, highlighted at any error, red when most requests failed."""
    errors = s.requests.errors
    value = f"{fmt.count(errors)} / {fmt.count(s.requests.total)}"
    if not errors:
        return _card(value, "requests failed", ident="errors")
    cls = "bad" if glance.mostly_failed(s) else "err"
    return _card(value, f"requests failed ({fmt.pct(glance.failed_share(s))})", cls, "errors")


def _error_kinds(s: Summary) -> str:
    """The commonest errors with the first message each, under the cards."""
    kinds = glance.error_kinds(s)
    if not kinds:
        return ""
    cls = "fail" if glance.mostly_failed(s) else ""
    rows = [[f"<span class='{cls}'>{escape(what)}</span>", escape(msg)] for what, msg in kinds]
    return "<div class='errors'>" + table(["error", "first message"], rows, raw=True) + "</div>"


def _config(s: Summary) -> str:
    items = glance.config_items(s)
    if not items:
        return ""
    body = "".join(f"<span>{escape(k)} <b>{escape(v)}</b></span>" for k, v in items)
    return f"<div class='config' id='config'>{body}</div>"


def _header(s: Summary, title: str) -> str:
    cache, cost, tp, lat = s.cache, s.cost, s.throughput, s.latency_ms
    cards = [_errors_card(s)] if s.requests.errors else []
    cards += [
        _card(fmt.pct(cache.reported_hit_rate), "hit rate (usage)", "hit", "hit-rate"),
        _card(fmt.pct(cache.server_metrics_hit_rate), "hit rate (/metrics)", "hit"),
        _card(fmt.pct(cache.theoretical_hit_rate), "hit rate (theoretical)", "hit"),
        _card(fmt.num(tp.output_tokens_per_s), "output tokens/s"),
        _card(fmt.num(tp.requests_per_s), "requests/s"),
        _card(fmt.ms(lat.ttft.p50), "TTFT p50"),
        _card(fmt.ms(lat.itl.p50), "ITL p50"),
        _card(fmt.num(s.per_user_output_tokens_per_s.p50), "tok/s per user p50"),
        _card(fmt.count(s.requests.total), "requests"),
    ]
    if not s.requests.errors:
        cards.append(_errors_card(s))
    if cost is not None and cost.usd_per_million_output_tokens is not None:
        cards.append(_card(fmt.usd(cost.usd_per_million_output_tokens), "per M output tokens"))
    if cost is not None and cost.gross_margin is not None:
        cards.append(_card(fmt.pct(cost.gross_margin), "gross margin"))
    meta = (
        f"{escape(str(s.model))} @ {escape(str(s.endpoint))} · "
        f"{escape(str(s.started_at))} · {escape(fmt.seconds(s.duration_s))} · "
        f"sessions {escape(fmt.count(s.sessions.started))} started, "
        f"{escape(fmt.count(s.sessions.completed))} completed"
    )
    if s.merged_from:
        meta += f" · merged from {len(s.merged_from)} shards"
    out = f"<h1>{escape(title)}</h1><div class='meta'>{meta}</div>" + _config(s)
    out += f"<div class='cards'>{''.join(cards)}</div>" + _error_kinds(s)
    for w in glance.warnings(s):
        out += f"<p class='warn'>{escape(w)}</p>"
    return out


def _charts(charts: dict[str, str], names: Sequence[str]) -> str:
    parts = [charts[n] for n in names if n in charts]
    return f"<div class='charts'>{''.join(parts)}</div>" if parts else ""


def _latency(s: Summary, charts: dict[str, str]) -> str:
    columns = fmt.stat_columns(s)
    rows = []
    for label, dist, f in fmt.LATENCY_ROWS:
        p = dist(s)
        rows.append([label, *(f(p.stat(k)) for k in columns)])
    return (
        "<h2>Latency</h2>"
        + table(["metric", *columns], rows)
        + _charts(charts, [f"{m}_cdf" for m, _ in CDF_METRICS])
    )


def _cost(s: Summary, charts: dict[str, str]) -> str:
    rows = fmt.cost_rows(s)
    if not rows:
        return ""
    notes = "".join(f"<p class='note'>{escape(n)}</p>" for n in fmt.cost_notes(s))
    return (
        "<h2>Cost and margin</h2>"
        + table(["figure", "value"], [list(r) for r in rows])
        + notes
        + _charts(charts, ["margin_vs_utilization"])
        + "<p class='note'>Formulas: docs/metrics.md (cost and margin).</p>"
    )


def _cache(s: Summary, charts: dict[str, str]) -> str:
    c, tok = s.cache, s.tokens
    block = "?" if c.block_size is None else c.block_size
    rows = [
        ["reported (usage cached_tokens / prompt_tokens)", fmt.pct(c.reported_hit_rate)],
        ["server /metrics (prefix-cache counter deltas)", fmt.pct(c.server_metrics_hit_rate)],
        [f"theoretical (unbounded cache, block {block})", fmt.pct(c.theoretical_hit_rate)],
        [
            "tokens in / out / cached",
            f"{fmt.count(tok.input)} / {fmt.count(tok.output)} / {fmt.count(tok.cached)}",
        ],
    ]
    usage = glance.kv_usage(s)
    if usage is not None:
        rows.append(["KV cache usage p50 / max", usage])
    cpu, why = glance.client_line(s)
    rows.append(["client CPU", cpu + (f" · {why}" if why else "")])
    return (
        "<h2>Prefix cache</h2>"
        + table(["hit rate", "value"], rows)
        + _charts(charts, ["prompt_tokens_by_source"])
    )


def _replicas(s: Summary, charts: dict[str, str]) -> str:
    """A routed run's replicas: the policy, the routing loss, the imbalance, each replica."""
    routing = s.routing
    if routing is None:
        return ""
    cards = [
        _card(routing.policy, f"routing over {routing.replicas} replicas"),
        _card(fmt.points(routing.loss_points), "routing loss"),
        _card(fmt.num(routing.imbalance.requests_max_over_mean), "requests max/mean"),
    ]
    per = fmt.replica_rows(s, fmt.REPLICA_PAGE_COLUMNS)
    rows = [
        [str(r.replica), *cells] for r, (_, cells) in zip(routing.per_replica, per, strict=True)
    ]
    lines = fmt.routing_lines(s)  # the endpoints apart: the table stays a laptop's width
    lines.append("replicas: " + ", ".join(label for label, _ in per))
    notes = "".join(f"<p class='note'>{escape(line)}</p>" for line in lines)
    return (
        f"<h2 id='replicas'>Replicas</h2><div class='cards'>{''.join(cards)}</div>{notes}"
        + f"<div class='replicas'>{table(['replica', *fmt.REPLICA_PAGE_COLUMNS], rows)}</div>"
        + _charts(charts, ["hit_rate_by_replica", "requests_by_replica"])
    )


def _per_turn(charts: dict[str, str]) -> str:
    body = _charts(charts, ["ttft_by_turn", "hit_rate_by_turn"])
    return f"<h2>By turn depth</h2>{body}" if body else ""


def _time_series(charts: dict[str, str]) -> str:
    body = _charts(charts, ["requests_over_time", "output_tokens_over_time", "hit_rate_over_time"])
    return f"<h2>Over time</h2>{body}" if body else ""


def _slo(s: Summary) -> str:
    slo = s.slo
    if not slo.checks:
        return ""
    rows = []
    for c in slo.checks:
        f = fmt.slo_format(c.unit)
        verdict = "<span class='pass'>pass</span>" if c.passed else "<span class='fail'>FAIL</span>"
        rows.append(
            [escape(c.metric), escape(f"{c.op} {f(c.threshold)}"), escape(f(c.value)), verdict]
        )
    out = "<h2>SLO</h2>" + table(["check", "threshold", "value", "result"], rows, raw=True)
    gp = slo.goodput
    if gp is not None:
        out += (
            f"<p>Goodput: {escape(fmt.pct(gp.fraction))} of {escape(fmt.count(gp.requests))} "
            f"requests met every per-request SLO ({escape(fmt.num(gp.requests_per_s))} req/s).</p>"
        )
    return out


def _errors_and_windows(s: Summary) -> str:
    out = ""
    if s.errors_by_type:
        out += "<h2>Errors</h2>" + table(
            ["type", "requests"], [[k, fmt.count(v)] for k, v in s.errors_by_type.items()]
        )
    drained = s.windows.drained.requests
    if drained:
        out += (
            f"<p class='note'>{escape(fmt.count(drained))} requests were sent after the "
            "--duration window and are reported apart (not in the figures above).</p>"
        )
    return out


def _sessions(s: Summary) -> str:
    rows = s.rollups.per_session
    if not rows:
        return ""
    body = [
        [
            r.session_id,
            str(r.lane),
            fmt.count(r.requests),
            fmt.count(r.errors),
            fmt.seconds(r.duration_s),
            fmt.count(r.input_tokens),
            fmt.pct(r.reported_hit_rate),
            fmt.pct(r.theoretical_hit_rate),
            fmt.ms(r.ttft_ms_p50),
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
    return "<h2>Sessions</h2>" + table(headers, body) + note


def _options(summary: Summary) -> str:
    """Every option of the run (as ``summary.config`` holds them), visible, and the server's
    counter deltas folded away."""
    config = summary.config
    rows = [
        [escape(k), escape(orjson.dumps(v).decode()) if not isinstance(v, str) else escape(v)]
        for k, v in config.items()
    ]
    server = summary.server
    deltas = orjson.dumps(
        None if server is None else server.to_json(), option=orjson.OPT_INDENT_2
    ).decode()
    out = "<h2>Run configuration</h2>"
    if rows:
        out += table(["option", "value"], rows, raw=True)
    return out + (
        f"<details><summary>server /metrics deltas</summary><pre>{escape(deltas)}</pre></details>"
    )


def run_sections(summary: Summary, title: str) -> str:
    """Everything the page says about one run (the body of its report)."""
    charts = summary_charts(summary)
    return "".join(
        [
            _header(summary, title),
            _cache(summary, charts),
            _replicas(summary, charts),
            _latency(summary, charts),
            _cost(summary, charts),
            _per_turn(charts),
            _time_series(charts),
            _slo(summary),
            _errors_and_windows(summary),
            _sessions(summary),
            _options(summary),
        ]
    )


GENERATOR = "agentx"
SOURCE_META = "agentx-source"
_SOURCE = re.compile(rf'<meta name="{SOURCE_META}" content="([0-9a-f]+)">')
HEAD_BYTES = 4096  # where a page's marker is: in its head, before the styles


def page_source(*dirs: str | os.PathLike[str]) -> str:
    """The marker of a page made from these results directories: a digest of their resolved
    paths (the page never holds the paths themselves)."""
    names = sorted(str(Path(d).resolve()) for d in dirs)
    return hashlib.sha256("\0".join(names).encode()).hexdigest()[:16]


def source_of(path: str | os.PathLike[str]) -> str | None:
    """The marker of an HTML page agentx wrote (``None``: no such file, or not agentx's)."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    m = _SOURCE.search(head)
    return m.group(1) if m else None


def check_page(path: str | os.PathLike[str], source: str | None, *, force: bool) -> None:
    """Refuse ``path`` as a page's output when it exists and is not the page agentx made from
    the same results (``source``), unless ``force``."""
    held = source_of(path)
    if held is not None and held != source and not force:
        raise UsageError(
            f"{path} already exists (agentx's page of other results): pass --force to replace "
            "it, or choose another path"
        )
    check_output(path, force=force or (source is not None and held == source))


def page(title: str, body: str, source: str | None = None) -> str:
    """A self-contained page: inline CSS, no script, nothing fetched; ``source`` is the marker
    of the results it was made from (:func:`page_source`)."""
    marker = "" if source is None else f'<meta name="{SOURCE_META}" content="{source}">'
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f'<meta name="generator" content="{GENERATOR}">{marker}'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>{body}</body></html>\n"
    )


def render_html(
    summary: Summary, title: str = "agentx replay report", source: str | None = None
) -> str:
    """The report page as one string."""
    return page(title, run_sections(summary, title), source)


def write_page(
    html: str, path: str | os.PathLike[str], *, force: bool = True, source: str | None = None
) -> None:
    """Write a page to ``path`` (via a temporary file, so a reader never sees half of it); an
    existing file is refused unless ``force`` or it is the page of the same ``source``."""
    check_page(path, source, force=force)
    write_atomic(path, html, force=True)


def write_html(
    summary: Summary, path: str | os.PathLike[str], *, force: bool = True, source: str | None = None
) -> None:
    """Write the report of one run to ``path``."""
    write_page(render_html(summary, source=source), path, force=force, source=source)
