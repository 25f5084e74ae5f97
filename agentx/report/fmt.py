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
