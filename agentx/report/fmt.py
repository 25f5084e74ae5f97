"""Number formatting shared by the terminal and HTML reports. Unknown renders as ``n/a``."""

from __future__ import annotations

from typing import Any

NA = "n/a"


def num(v: float | None) -> str:
    """Three significant-ish figures without scientific notation: 1,234 · 56.7 · 0.89."""
    if v is None:
        return NA
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def ms(v: float | None) -> str:
    """A latency in milliseconds, switched to seconds from 10 s."""
    if v is None:
        return NA
    if abs(v) >= 10_000:
        return f"{v / 1000:.1f} s"
    return f"{num(v)} ms"


def pct(v: float | None) -> str:
    return NA if v is None else f"{100 * v:.1f}%"


def count(v: int | float | None) -> str:
    return NA if v is None else f"{int(v):,}"


def seconds(v: float | None) -> str:
    return NA if v is None else f"{v:,.1f} s"


def get(d: Any, dotted: str) -> Any:
    """``get(summary, "latency_ms.ttft.p50")``; ``None`` when any step is missing."""
    cur = d
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def warnings(summary: dict[str, Any]) -> list[str]:
    """The run's warnings (written by the replay engine), or a saturation note without them."""
    out = [str(w) for w in summary.get("warnings") or []]
    if not out and (summary.get("client") or {}).get("saturated"):
        out.append(
            "the client was CPU-saturated; latencies include client delay "
            "(add --workers or lower --concurrency)"
        )
    return out


STATS = ("p50", "p90", "p99", "mean", "max")  # the columns of a percentile object P

# (label, summary key, formatter) of the latency table, terminal and HTML alike
LATENCY_ROWS = (
    ("TTFT", "latency_ms.ttft", ms),
    ("TTFC", "latency_ms.ttfc", ms),
    ("ITL", "latency_ms.itl", ms),
    ("TPOT", "latency_ms.tpot", ms),
    ("E2E", "latency_ms.e2e", ms),
    ("output tok/s per user", "per_user_output_tokens_per_s", num),
    ("dispatch lag", "schedule.dispatch_lag_ms", ms),
)


def stat_columns(summary: dict[str, Any]) -> list[str]:
    """The columns of the latency table: every ``pNN`` the run reports (``--percentiles`` adds
    some), in ascending order, then ``mean`` and ``max``."""
    keys: set[str] = set()
    for _, key, _ in LATENCY_ROWS:
        p = get(summary, key)
        if isinstance(p, dict):
            keys.update(k for k in p if k.startswith("p"))
    qs = sorted(keys | {"p50", "p90", "p99"}, key=lambda k: float(k[1:]))
    return [*qs, "mean", "max"]


def usd(v: float | None) -> str:
    """Dollars: $1,234 · $12.3 · $0.456 · $0.00123."""
    if v is None:
        return NA
    sign, a = ("-" if v < 0 else ""), abs(v)
    if a >= 100:
        return f"{sign}${a:,.0f}"
    if a >= 1:
        return f"{sign}${a:,.2f}"
    if a == 0:
        return "$0"
    return f"{sign}${a:.3g}"


def cost_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The ``cost`` block as (label, value) rows, terminal and HTML alike; empty without one."""
    c = summary.get("cost")
    if not isinstance(c, dict):
        return []
    rows: list[tuple[str, str]] = []
    hour = c.get("usd_per_gpu_hour")
    parts = c.get("gpu_hour_parts")
    detail = ""
    if isinstance(parts, dict):
        detail = (
            f" (capex {usd(parts['capex_usd_per_hour'])} + power {usd(parts['power_usd_per_hour'])}"
            f" + hosting {usd(parts['hosting_usd_per_hour'])})"
        )
    rows.append(("cost per accelerator-hour", usd(hour) + detail))
    rows.append(
        (
            "accelerators x utilisation",
            f"{c.get('gpus')} x {pct(c.get('utilization'))} = {usd(c.get('usd_per_hour'))}/h",
        )
    )
    for kind in ("input", "output", "total"):
        rows.append(
            (f"cost per million {kind} tokens", usd(c.get(f"usd_per_million_{kind}_tokens")))
        )
    price = c.get("price_usd_per_million_tokens")
    if isinstance(price, dict):
        name = f" ({price['preset']})" if price.get("preset") else ""
        rows.append(
            (
                "price per million tokens" + name,
                f"input {usd(price['input'])} · cached {usd(price['cached'])} · "
                f"output {usd(price['output'])}",
            )
        )
        mix = c.get("token_mix") or {}
        rows.append(("cached share of input (priced as cached)", pct(mix.get("cached_fraction"))))
        rows.append(("revenue per accelerator-hour", usd(c.get("revenue_usd_per_gpu_hour"))))
        rows.append(
            (
                f"licence fee ({pct(c.get('license_fraction'))} of revenue)",
                f"{usd(c.get('license_usd_per_hour'))}/h",
            )
        )
        rows.append(("gross profit", f"{usd(c.get('gross_profit_usd_per_hour'))}/h"))
        rows.append(("gross margin", pct(c.get("gross_margin"))))
        rows.append(("break-even utilisation", pct(c.get("breakeven_utilization"))))
    return rows


def cost_notes(summary: dict[str, Any]) -> list[str]:
    c = summary.get("cost")
    return [str(n) for n in c.get("notes") or []] if isinstance(c, dict) else []


def _fmt_for(key: str) -> Any:
    if key.startswith(("latency_ms.", "schedule.")):
        return ms
    if key.startswith("cost.usd"):
        return usd
    if key.startswith("cache.") or key.endswith(("fraction", "margin")):
        return pct
    if key.startswith("requests."):
        return count
    return num


def compare_cells(row: dict[str, Any]) -> tuple[str, str, str, str]:
    """Base, new, delta and ratio of one ``agentx.compare/1`` row, formatted for its unit."""
    f = _fmt_for(row["key"])
    delta = row["delta"]
    if delta is None:
        d = NA
    elif f is pct:
        d = f"{100 * delta:+.1f} pt"
    elif f is count:
        d = f"{int(delta):+,}"
    else:
        d = ("+" if delta > 0 else "") + f(delta)
    ratio = NA if row["ratio"] is None else f"{row['ratio']:.2f}x"
    return f(row["base"]), f(row["new"]), d, ratio


def config_warnings(cmp: dict[str, Any]) -> list[str]:
    """One line when the compared runs were configured differently, naming what differs."""
    diffs = cmp.get("config_differences") or []
    if not diffs:
        return []
    shown = "; ".join(f"{d['key']} {d['base']!r} -> {d['new']!r}" for d in diffs[:MAX_DIFFS_SHOWN])
    more = f" (and {len(diffs) - MAX_DIFFS_SHOWN} more)" if len(diffs) > MAX_DIFFS_SHOWN else ""
    return [f"the runs were configured differently: {shown}{more}"]


MAX_DIFFS_SHOWN = 8
