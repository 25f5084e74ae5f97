"""The run at a glance, in the same words on the terminal and in HTML: the headline (hit rate
three ways, throughput against interactivity), the failed requests and their commonest messages,
the options that shaped the run, the client line and the KV-cache gauge, and the warnings."""

from __future__ import annotations

from pathlib import PurePath

from agentx.report.fmt import NA, count, ms, num, pct
from agentx.results.summary import Summary
from agentx.results.summary.run import SATURATED_CPU_PERCENT

MOSTLY_FAILED = 0.5  # share of failed measured requests above which a report shows them in red
MAX_ERROR_KINDS = 5  # kinds of error a report lists, commonest first (summary.json has them all)


def warnings(summary: Summary) -> list[str]:
    """The run's warnings (written by the replay engine), each once, or a note on the client
    without them (a summary that kept the flag but no verdict)."""
    out = list(dict.fromkeys(summary.warnings))
    if not out and summary.client.saturated:
        what = "was CPU-saturated" if _cpu_saturated(summary) else "held the run back"
        out.append(
            f"the client {what}; latencies include client delay "
            "(add --workers or lower --concurrency)"
        )
    return out


# -- the headline: hit rate three ways, throughput vs interactivity --------------------------


def hit_rates(summary: Summary) -> list[tuple[str, str]]:
    """The three hit rates (docs/metrics.md), as (label, value)."""
    c = summary.cache
    block = "?" if c.block_size is None else str(c.block_size)
    return [
        ("reported (usage)", pct(c.reported_hit_rate)),
        ("server /metrics", pct(c.server_metrics_hit_rate)),
        (f"theoretical (block {block})", pct(c.theoretical_hit_rate)),
    ]


def headline(summary: Summary) -> list[tuple[str, str]]:
    """What a reader looks at first, as (label, line): the hit rate three ways, then what the
    server delivered in total (throughput) against what one user saw (interactivity)."""
    tp, lat = summary.throughput, summary.latency_ms
    per_user = summary.per_user_output_tokens_per_s.p50
    c = summary.cache
    return [
        (
            "hit rate",
            f"{pct(c.reported_hit_rate)} reported · {pct(c.server_metrics_hit_rate)} /metrics"
            f" · {pct(c.theoretical_hit_rate)} theoretical",
        ),
        (
            "throughput",
            f"{num(tp.output_tokens_per_s)} output tok/s · {num(tp.requests_per_s)} req/s",
        ),
        (
            "interactivity",
            f"TTFT p50 {ms(lat.ttft.p50)} · ITL p50 {ms(lat.itl.p50)} · per user p50 "
            + (NA if per_user is None else f"{num(per_user)} tok/s"),
        ),
    ]


# -- errors ------------------------------------------------------------------------------------


def failed_share(summary: Summary) -> float | None:
    """The share of the measured requests that failed (``None`` without requests)."""
    total, errors = summary.requests.total, summary.requests.errors
    if not total or errors is None:
        return None
    return errors / total


def mostly_failed(summary: Summary) -> bool:
    """Did more than :data:`MOSTLY_FAILED` of the measured requests fail?"""
    share = failed_share(summary)
    return share is not None and share > MOSTLY_FAILED


def errors_line(summary: Summary) -> str | None:
    """``38 of 48 measured requests failed (79.2%): http 38``; ``None`` when none failed."""
    errors = summary.requests.errors
    if not errors:
        return None
    kinds = ", ".join(f"{k} {count(v)}" for k, v in summary.errors_by_type.items())
    return (
        f"{count(errors)} of {count(summary.requests.total)} measured requests failed "
        f"({pct(failed_share(summary))})" + (f": {kinds}" if kinds else "")
    )


def error_kinds(summary: Summary) -> list[tuple[str, str]]:
    """The commonest kinds of error (``errors.by_kind``, when the summary has it) as (what, the
    first message and its hint): ``("http 400 x48", "...")``."""
    if summary.errors is None:
        return []
    out = []
    for k in summary.errors.by_kind[:MAX_ERROR_KINDS]:
        status = "" if k.status is None else f" {k.status}"
        said = (k.message or "") + (f" ({k.hint})" if k.hint else "")  # and what to change
        out.append((f"{k.kind or '?'}{status} x{count(k.count)}", said))
    return out


# -- the run's configuration ----------------------------------------------------------------

# (config key, label), in the order a reader asks: what was replayed, how hard, how it was sent;
# a key a run does not have, or holds at its quiet default, is left out
CONFIG_ITEMS: tuple[tuple[str, str], ...] = (
    ("trace", "trace"),
    ("scenario", "scenario"),
    ("concurrency", "concurrency"),
    ("session_rate", "sessions/s"),
    ("request_rate", "requests/s"),
    ("time_scale", "time scale"),
    ("max_think_s", "max think s"),
    ("sessions", "sessions"),
    ("max_requests", "max requests"),
    ("duration_s", "duration s"),
    ("warmup", "warm-up per lane"),
    ("api", "api"),
    ("assistant", "assistant"),
    ("ignore_eos", "ignore_eos"),
    ("salt", "salt"),
    ("seed", "seed"),
    ("workers", "workers"),
    ("shard", "shard"),
    ("server_kind", "server"),
    ("cache_reset", "cache reset"),
)
QUIET: dict[str, object] = {"warmup": 0, "workers": 1, "shard": "0/1"}


def _config_value(key: str, v: object) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if key == "trace" and isinstance(v, str):
        return PurePath(v).name or v
    return str(v)


def config_items(summary: Summary) -> list[tuple[str, str]]:
    """The options that shaped what was measured, as (label, value); ``concurrency`` says how
    many lanes ran when fewer did (a trace with fewer sessions)."""
    config = summary.config
    out = []
    for k, name in CONFIG_ITEMS:
        v = config.get(k)
        if v is None or (k in QUIET and v == QUIET[k]):
            continue
        text = _config_value(k, v)
        lanes = config.get("lanes")
        if k == "concurrency" and isinstance(lanes, int) and lanes != v:
            text += f" ({lanes} lanes ran)"
        out.append((name, text))
    return out


# -- the client -------------------------------------------------------------------------------

# what held a client back, in the words of the client line (the warning has the figures)
CLIENT_CAUSES = {
    "cpu": "busy in bursts",
    "starved": "starved of CPU",
    "blocked": "blocked: I/O or a thread",
}


def _cpu_saturated(summary: Summary) -> bool:
    v = summary.bottleneck
    if v is not None:
        return v.cpu_saturated
    # no verdict kept (a merge): the flag, with the busiest process's CPU
    cpu = summary.client.cpu_percent
    return bool(summary.client.saturated) and cpu is not None and cpu >= SATURATED_CPU_PERCENT


def client_line(summary: Summary) -> tuple[str, str | None]:
    """The client's CPU and, when the client held the run back, why: ``SATURATED`` only when
    its busiest process used nearly a whole core, else the cause the verdict named."""
    known = summary.client.cpu_percent
    cpu = NA if known is None else f"{num(known)}%"  # a recovered run's is unknown
    if _cpu_saturated(summary):
        return cpu, "SATURATED"
    v = summary.bottleneck
    if v is not None and v.bottleneck == "client":
        cause = CLIENT_CAUSES.get(v.cause or "", "event loop late")
        return cpu, f"client-bound ({cause})"
    if v is None and summary.client.saturated:
        return cpu, "client-bound"
    return cpu, None


def kv_usage(summary: Summary) -> str | None:
    """KV cache usage p50 / max; ``n/a`` with the reason when the gauge read 0 in every scrape
    while requests ran (it was never seen busy: unknown, not an empty cache)."""
    usage = summary.cache.kv_cache_usage_perc
    if usage is None:
        return None
    if usage.max == 0 and (summary.requests.ok or 0) > 0:
        return f"{NA} (0 in every scrape while requests ran: not measured)"
    return f"{pct(usage.p50)} / {pct(usage.max)}"
