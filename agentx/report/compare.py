"""Compare two runs key by key: base vs new, delta, ratio, and whether the change is for the better."""

from __future__ import annotations

from typing import Any

from agentx.report.fmt import get

SCHEMA = "agentx.compare/1"
SAME_WITHIN = 0.01  # |ratio - 1| below this is "same"

LOWER, HIGHER, NEUTRAL = "lower", "higher", "neutral"
_LAT = ("p50", "p90", "p99", "mean")

# (dotted key in summary.json, which way is better), in display order
KEYS: tuple[tuple[str, str], ...] = (
    ("requests.total", NEUTRAL),
    ("requests.ok", HIGHER),
    ("requests.errors", LOWER),
    ("throughput.requests_per_s", HIGHER),
    ("throughput.input_tokens_per_s", HIGHER),
    ("throughput.output_tokens_per_s", HIGHER),
    *((f"latency_ms.{m}.{s}", LOWER) for m in ("ttft", "ttfc", "itl", "tpot", "e2e") for s in _LAT),
    *((f"per_user_output_tokens_per_s.{s}", HIGHER) for s in _LAT),
    ("cache.reported_hit_rate", HIGHER),
    ("cache.server_metrics_hit_rate", HIGHER),
    ("cache.theoretical_hit_rate", NEUTRAL),  # a property of the trace, not of the server
    ("schedule.dispatch_lag_ms.p99", LOWER),
    ("slo.goodput.fraction", HIGHER),
    ("client.cpu_percent", LOWER),
    ("cost.usd_per_million_output_tokens", LOWER),
    ("cost.usd_per_million_total_tokens", LOWER),
    ("cost.gross_margin", HIGHER),
)
# config keys that differ between any two runs and say nothing about what was measured
INCIDENTAL = frozenset(
    {"output_dir", "progress", "interrupted", "metrics_url", "cost", "percentiles"}
)


def _change(base: float, new: float, better: str) -> str:
    if base == new or (base != 0 and abs(new / base - 1) < SAME_WITHIN):
        return "same"
    if better == NEUTRAL:
        return "changed"
    return "better" if (new < base) == (better == LOWER) else "worse"


def _run(s: dict[str, Any]) -> dict[str, Any]:
    return {k: s.get(k) for k in ("endpoint", "model", "started_at", "duration_s")}


def config_differences(base: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """The run options (``summary.config``, plus model and endpoint) that differ between two runs:
    a comparison of runs that replayed different things measures the difference too."""
    out = []
    for key in ("model", "endpoint"):
        if base.get(key) != new.get(key):
            out.append({"key": key, "base": base.get(key), "new": new.get(key)})
    bc, nc = base.get("config") or {}, new.get("config") or {}
    for key in sorted(set(bc) | set(nc)):
        if key in INCIDENTAL or key in ("model",):
            continue
        if bc.get(key) != nc.get(key):
            out.append({"key": f"config.{key}", "base": bc.get(key), "new": nc.get(key)})
    return out


def compare(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``agentx.compare/1``: one row per key either run has, ``None`` where a run lacks it;
    ``config_differences`` lists the options that differ (a warning when not empty)."""
    rows = []
    for key, better in KEYS:
        b, n = get(base, key), get(new, key)
        if b is None and n is None:
            continue
        both = isinstance(b, int | float) and isinstance(n, int | float)
        rows.append(
            {
                "key": key,
                "base": b,
                "new": n,
                "delta": n - b if both else None,
                "ratio": n / b if both and b != 0 else None,
                "better": better,
                "change": _change(b, n, better) if both else None,
            }
        )
    return {
        "schema": SCHEMA,
        "base": _run(base),
        "new": _run(new),
        "metrics": rows,
        "config_differences": config_differences(base, new),
    }
