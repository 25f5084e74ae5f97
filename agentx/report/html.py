"""A self-contained HTML report of one run: inline CSS, inline SVG charts, no scripts, no fetches.

Everything comes from ``summary.json`` (its ``rollups`` carry the per-turn and per-second data),
so ``agentx report DIR --html FILE`` can rebuild it from a results directory alone. The first
screen holds what a reader looks at first: the errors card when requests failed (red when most
did), the hit rate three ways, throughput against interactivity, and the run's configuration.

The page around it, its styles and the marker that lets agentx rewrite its own page are
:mod:`agentx.report.page`'s.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from html import escape

import orjson

from agentx.report import fmt, glance
from agentx.report.charts import CDF_METRICS, summary_charts
from agentx.report.page import page, table, write_page
from agentx.results.summary import Summary

MAX_SESSION_ROWS = 200


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


def render_html(
    summary: Summary, title: str = "agentx replay report", source: str | None = None
) -> str:
    """The report page as one string."""
    return page(title, run_sections(summary, title), source)


def write_html(
    summary: Summary, path: str | os.PathLike[str], *, force: bool = True, source: str | None = None
) -> None:
    """Write the report of one run to ``path``."""
    write_page(render_html(summary, source=source), path, force=force, source=source)
