"""``--slo``: service-level checks on a run, and goodput.

A spec is a comma-separated list of ``<metric><op><threshold>[unit]``, for example
``ttft_p99<=2s,itl_p50<=50ms,e2e_p90<=30s,output_tps_per_user_p50>=20,error_rate<=1%,goodput>=0.9``.

- Latency: ``{ttft,ttfc,itl,tpot,e2e,dispatch_lag}_{pNN,mean,min,max}`` with ``s``, ``ms`` (the
  default) or ``us``. Any percentile works (``ttft_p95``): the five of the summary are read from
  it, others computed from the records. A bare name means every request: ``ttft<=2s`` is
  ``ttft_max<=2s`` and ``output_tps_per_user>=20`` is ``output_tps_per_user_min>=20``.
- Per-user speed: ``output_tps_per_user_{pNN,mean,min,max}`` in tokens/s.
- Throughput: ``output_tps``, ``input_tps``, ``requests_per_s`` (alias ``rps``).
- Fractions (``0.9`` or ``90%``): ``error_rate``, ``reported_hit_rate``, ``server_metrics_hit_rate``,
  ``theoretical_hit_rate``, ``goodput``. ``goodput_rps`` is goodput as a rate (requests/s).

Goodput (as ``vllm bench serve --goodput``): a request is *good* when it succeeded and its own
TTFT, TTFC, TPOT, E2E, mean ITL and output tokens/s meet every threshold the spec sets on those
metrics (the percentile is dropped: ``ttft_p99<=2s`` makes ``ttft<=2s`` a per-request SLO). A figure
a request does not have (the TPOT of a one-token reply, the TTFC of a tool-call-only reply) does not
count against it; a failed request is never good. A check whose figure is unknown fails.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from agentx.core.errors import UsageError
from agentx.core.percentiles import STATS, Values, percentile
from agentx.core.record import RequestRecord
from agentx.metrics import latency as lat
from agentx.results.summary import Cache, Summary, Throughput
from agentx.results.summary.slo import CheckResult, Goodput, GoodputSlo, Slo

OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
}
TIME_UNITS_MS = {"": 1.0, "ms": 1.0, "s": 1000.0, "us": 1e-3, "µs": 1e-3, "μs": 1e-3}
RATE_UNITS = ("", "/s", "tok/s", "tokens/s", "tps", "req/s", "rps")

LATENCY = ("ttft", "ttfc", "itl", "tpot", "e2e", "dispatch_lag")
PER_USER = "output_tps_per_user"
PER_USER_ALIASES = {
    "output_tps_per_user": PER_USER,
    "per_user_tps": PER_USER,
    "tps_per_user": PER_USER,
}
THROUGHPUT = {
    "output_tps": "output_tokens_per_s",
    "output_tokens_per_s": "output_tokens_per_s",
    "input_tps": "input_tokens_per_s",
    "input_tokens_per_s": "input_tokens_per_s",
    "requests_per_s": "requests_per_s",
    "rps": "requests_per_s",
}
FRACTIONS = (
    "error_rate",
    "reported_hit_rate",
    "server_metrics_hit_rate",
    "theoretical_hit_rate",
    "goodput",
)
GOODPUT_RATE = ("goodput_rps", "goodput_requests_per_s")

_CHECK = re.compile(
    r"^([a-z_][a-z0-9_.]*?)\s*(<=|>=|<|>)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S*)$"
)
_STAT = re.compile(r"^(.+)_(p\d+(?:\.\d+)?|mean|max|min)$")


@dataclass(frozen=True, slots=True)
class SloCheck:
    """One parsed check. ``threshold`` is in the summary's unit for the metric (``unit``)."""

    metric: str  # canonical name, e.g. "ttft_p99", "output_tps", "goodput"
    op: str
    threshold: float
    unit: str  # "ms", "tok/s", "req/s" or "fraction"
    kind: str  # "latency", "per_user", "throughput", "fraction", "goodput_rate"
    base: str  # "ttft", "output_tps_per_user", "output_tokens_per_s", "error_rate", ...
    stat: str | None = None  # "p99", "mean", "max", or None for scalar metrics

    @property
    def per_request(self) -> bool:
        """Does this check also define a per-request SLO for goodput?"""
        return self.base in lat.PER_REQUEST


def _fail(part: str, why: str) -> UsageError:
    return UsageError(f"--slo: {part!r}: {why}")


def _parse_stat(stat: str, part: str) -> str:
    if stat in ("mean", "max", "min"):
        return stat
    q = float(stat[1:])
    if not 0 < q <= 100:
        raise _fail(part, "a percentile must be in (0, 100]")
    return stat


def _every(op: str) -> str:
    """The statistic that makes a bare threshold hold for every request."""
    return "max" if op in ("<", "<=") else "min"


def _parse_one(part: str) -> SloCheck:
    m = _CHECK.match(part.lower())
    if m is None:
        raise _fail(part, "expected <metric><op><threshold>[unit], e.g. ttft_p99<=2s")
    name, op, number, unit = m[1], m[2], float(m[3]), m[4]
    if not math.isfinite(number) or number < 0:
        raise _fail(part, "the threshold must be a finite number >= 0")
    sm = _STAT.match(name)
    base, stat = (sm[1], _parse_stat(sm[2], part)) if sm else (name, None)
    if base in LATENCY:
        if unit not in TIME_UNITS_MS:
            raise _fail(part, f"unknown time unit {unit!r} (use s, ms or us)")
        stat = stat or _every(op)
        ms = number * TIME_UNITS_MS[unit]
        return SloCheck(f"{base}_{stat}", op, ms, "ms", "latency", base, stat)
    if base in PER_USER_ALIASES:
        if unit not in RATE_UNITS:
            raise _fail(part, f"unknown unit {unit!r} for tokens/s")
        stat = stat or _every(op)
        return SloCheck(f"{PER_USER}_{stat}", op, number, "tok/s", "per_user", PER_USER, stat)
    if stat is not None:
        raise _fail(part, f"{base!r} takes no percentile")
    if name in THROUGHPUT:
        if unit not in RATE_UNITS:
            raise _fail(part, f"unknown unit {unit!r} for a rate")
        key = THROUGHPUT[name]
        u = "req/s" if key == "requests_per_s" else "tok/s"
        return SloCheck(name, op, number, u, "throughput", key)
    if name in GOODPUT_RATE:
        if unit not in RATE_UNITS:
            raise _fail(part, f"unknown unit {unit!r} for a rate")
        return SloCheck("goodput_rps", op, number, "req/s", "goodput_rate", "goodput_rps")
    if name in FRACTIONS:
        if unit == "%":
            number /= 100.0
        elif unit:
            raise _fail(part, f"unknown unit {unit!r} for a fraction (use 0.9 or 90%)")
        if number > 1:
            raise _fail(part, "a fraction must be at most 1 (or write a percentage: 90%)")
        return SloCheck(name, op, number, "fraction", "fraction", name)
    known = [*LATENCY, PER_USER, *THROUGHPUT, *FRACTIONS, *GOODPUT_RATE]
    raise _fail(part, f"unknown metric {base!r} (one of: {', '.join(known)})")


def parse_slo(spec: str) -> list[SloCheck]:
    """Parse an ``--slo`` spec. Raises :class:`UsageError` on anything it does not understand."""
    parts = [p.strip() for p in spec.split(",")]
    if not any(parts):
        raise UsageError("--slo: empty spec")
    checks = [_parse_one(p) for p in parts if p]
    needs_goodput = any(c.base in ("goodput", "goodput_rps") for c in checks)
    if needs_goodput and not any(c.per_request for c in checks):
        raise UsageError(
            "--slo: goodput needs at least one per-request SLO "
            "(ttft, ttfc, itl, tpot, e2e or output_tps_per_user)"
        )
    return checks


# a mean gap further than this (relative) from an SLO's threshold is on the same side of it
# however its gaps are summed: float rounding is some 1e-15 of the gaps' absolute sum
NEAR_THRESHOLD = 1e-9


def meets(c: SloCheck, r: RequestRecord) -> bool:
    """Whether the successful ``r`` meets the per-request SLO ``c`` (an unknown value does).
    A request's mean inter-token gap is first taken from its gaps' exact integer sum (no
    Python float per gap: tens of millions in a long run); only one that close to the
    threshold is compared as :func:`agentx.metrics.latency.mean_itl_ms` computes it, so the
    verdict is always that figure's."""
    if c.base == "itl" and r.ok and len(r.itl_ns):
        ns = r.itl_ns.ns
        scale = int(np.abs(ns).sum()) / ns.size / lat.NS_PER_MS
        mean = int(ns.sum()) / ns.size / lat.NS_PER_MS
        if abs(mean - c.threshold) > NEAR_THRESHOLD * scale:
            return OPS[c.op](mean, c.threshold)
    v = lat.PER_REQUEST[c.base](r)
    return v is None or OPS[c.op](v, c.threshold)


def goodput(checks: Sequence[SloCheck], records: Sequence[RequestRecord]) -> Goodput | None:
    """Fraction and rate of ``records`` meeting every per-request SLO; ``None`` without any."""
    slos = [c for c in checks if c.per_request]
    if not slos:
        return None

    def good(r: RequestRecord) -> bool:
        return r.ok and all(meets(c, r) for c in slos)

    n_good = sum(1 for r in records if good(r))
    span = lat.span_s(records)
    return Goodput(
        slos=tuple(GoodputSlo(c.base, c.op, c.threshold, c.unit) for c in slos),
        requests=len(records),
        good=n_good,
        fraction=n_good / len(records) if records else None,
        requests_per_s=n_good / span if span else None,
    )


def _distribution(base: str, records: Sequence[RequestRecord]) -> Values:
    if base == "itl":
        return lat.pooled_itl_ms(records)
    if base == "dispatch_lag":
        return [lat.dispatch_lag_ms(r) for r in records]
    fn = lat.PER_REQUEST[base]
    return lat.known(fn, records)


def _value(
    c: SloCheck,
    summary: Summary,
    records: Sequence[RequestRecord],
    gp: Goodput | None,
) -> float | None:
    if c.kind in ("latency", "per_user"):
        assert c.stat is not None
        if c.stat in STATS:
            if c.kind == "per_user":
                dist = summary.per_user_output_tokens_per_s
            elif c.base == "dispatch_lag":
                dist = summary.schedule.dispatch_lag_ms
            else:
                dist = summary.latency_ms.of(c.base)
            v = dist.stat(c.stat)
            return None if v is None else float(v)
        q = 0.0 if c.stat == "min" else float(c.stat[1:])
        return percentile(_distribution(c.base, records), q)
    if c.kind == "throughput":
        v = THROUGHPUT_FIGURES[c.base](summary.throughput)
        return None if v is None else float(v)
    if c.base == "error_rate":
        total = summary.requests.total or 0
        return (summary.requests.errors or 0) / total if total else None
    if c.base in CACHE_FIGURES:
        v = CACHE_FIGURES[c.base](summary.cache)
        return None if v is None else float(v)
    if gp is None:
        return None
    return gp.fraction if c.base == "goodput" else gp.requests_per_s


THROUGHPUT_FIGURES: dict[str, Callable[[Throughput], float | None]] = {
    "requests_per_s": lambda t: t.requests_per_s,
    "input_tokens_per_s": lambda t: t.input_tokens_per_s,
    "output_tokens_per_s": lambda t: t.output_tokens_per_s,
}
CACHE_FIGURES: dict[str, Callable[[Cache], float | None]] = {
    "reported_hit_rate": lambda c: c.reported_hit_rate,
    "server_metrics_hit_rate": lambda c: c.server_metrics_hit_rate,
    "theoretical_hit_rate": lambda c: c.theoretical_hit_rate,
}


def evaluate(checks: Sequence[SloCheck], summary: Summary, records: Sequence[RequestRecord]) -> Slo:
    """The contract's ``slo`` object: ``passed`` (``None`` without checks), ``checks``, ``goodput``.

    ``summary`` is the summary built so far (figures are read from it so the SLO table and the
    report agree); ``records`` are all the run's records (warm-up and drained ones are dropped).
    """
    if not checks:
        return Slo()
    measured = lat.measured(records)
    gp = goodput(checks, measured)
    results = []
    for c in checks:
        value = _value(c, summary, measured, gp)
        ok = value is not None and OPS[c.op](value, c.threshold)
        results.append(CheckResult(c.metric, c.op, c.threshold, c.unit, value, ok))
    return Slo(all(r.passed for r in results), tuple(results), gp)
