"""``--fail-on``: a run against a baseline run, each rule's delta with a bootstrap confidence
interval.

A spec is a comma-separated list of ``<metric><op><delta><unit>``, for example
``ttft_p99>+10%,itl_p50>+5%,reported_hit_rate<-2pt,output_tokens_per_s<-5%``: ``>`` names a
figure that is worse when it grows (a latency), ``<`` one that is worse when it shrinks (a
throughput, a hit rate); the delta is relative (``%`` of the base run's figure), in percentage
points (``pt``, of a fraction) or in the figure's own unit (``ms``, ``s``, ``us`` for a latency,
none for a rate).

- Latency: ``{ttft,ttfc,itl,tpot,e2e}_{pNN,mean}`` in ms; per-user speed
  ``output_tps_per_user_{pNN,mean}``.
- Throughput: ``output_tokens_per_s`` (``output_tps``), ``input_tokens_per_s`` (``input_tps``),
  ``requests_per_s`` (``rps``).
- Fractions: ``reported_hit_rate``, ``theoretical_hit_rate``, ``error_rate``.

The noise model: a run's sessions are its independent units (a session's requests share a
prefix, a lane and each other's timing). Each run's measured sessions are resampled with
replacement (``resamples`` times, seeded, base and new independently), the figure recomputed
from the resampled rows by the same rule as the summary's (a percentile of the pooled values, a
sum of tokens over the run's window, a ratio of token sums), and the delta's interval is the
central ``confidence`` share of the resampled deltas. A rule **fails** when the whole interval
is past its threshold, **passes** when the whole interval is on the good side, and is
**inconclusive** when the interval straddles it (``strict``: then it fails). The point figures
are the summary's own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agentx.core.errors import UsageError
from agentx.core.record import RequestRecord
from agentx.metrics import latency as lat
from agentx.metrics.slo import LATENCY, PER_USER_ALIASES, THROUGHPUT, TIME_UNITS_MS
from agentx.results.baseline import Bootstrap, RegressionCheck, Verdict

DEFAULT_FAIL_ON = "ttft_p99>+10%,itl_p50>+5%,reported_hit_rate<-2pt,output_tokens_per_s<-5%"
DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
CONFIDENCE = 0.95
RATIOS = ("reported_hit_rate", "theoretical_hit_rate", "error_rate")

_RULE = re.compile(r"^([a-z_][a-z0-9_.]*?)\s*(<|>)\s*([-+]?(?:\d+\.?\d*|\.\d+))\s*(%|pt|ms|s|us)?$")
_STAT = re.compile(r"^(.+)_(p\d+(?:\.\d+)?|mean)$")


@dataclass(frozen=True, slots=True)
class Rule:
    """One parsed rule. ``threshold`` is the signed delta allowed (``+10`` for ``>+10%``, ``-2``
    for ``<-2pt``), in ``unit``; ``figure_unit`` is the figure's (``ms``, ``tok/s``, ``req/s``,
    ``fraction``)."""

    text: str
    metric: str  # canonical: ttft_p99, output_tokens_per_s, reported_hit_rate
    op: str
    threshold: float
    unit: str  # "%", "pt", or the figure's own unit
    figure_unit: str
    base: str  # ttft, output_tps_per_user, output_tokens_per_s, reported_hit_rate, ...
    stat: str | None = None  # "p99", "mean" for a distribution


def _fail(part: str, why: str) -> UsageError:
    return UsageError(f"--fail-on: {part!r}: {why}")


def _parse_one(part: str) -> Rule:
    m = _RULE.match(part.lower())
    if m is None:
        raise _fail(part, "expected <metric><op><delta><unit>, e.g. ttft_p99>+10%")
    name, op, number, unit = m[1], m[2], float(m[3]), m[4] or ""
    if not math.isfinite(number):
        raise _fail(part, "the delta must be a finite number")
    amount = abs(number) if op == ">" else -abs(number)
    sm = _STAT.match(name)
    base, stat = (sm[1], sm[2]) if sm else (name, None)
    if stat is not None and stat != "mean" and not 0 < float(stat[1:]) <= 100:
        raise _fail(part, "a percentile must be in (0, 100]")
    if (base in LATENCY and base != "dispatch_lag") or base in PER_USER_ALIASES:
        if stat is None:
            raise _fail(part, f"name a statistic: {base}_p99, {base}_p50 or {base}_mean")
        per_user = base in PER_USER_ALIASES
        canon = "output_tps_per_user" if per_user else base
        figure_unit = "tok/s" if per_user else "ms"
        if unit in ("ms", "s", "us"):
            if per_user:
                raise _fail(part, "a speed's delta is in % or tokens/s (no unit)")
            amount *= TIME_UNITS_MS[unit]
            unit = "ms"
        elif unit == "pt":
            raise _fail(part, "pt is for fractions (hit rates, error rate)")
        return Rule(
            part, f"{canon}_{stat}", op, amount, unit or figure_unit, figure_unit, canon, stat
        )
    if stat is not None:
        raise _fail(part, f"{base!r} takes no statistic")
    if name in THROUGHPUT:
        key = THROUGHPUT[name]
        figure_unit = "req/s" if key == "requests_per_s" else "tok/s"
        if unit not in ("", "%"):
            raise _fail(part, f"a rate's delta is in % or {figure_unit} (no unit)")
        return Rule(part, key, op, amount, unit or figure_unit, figure_unit, key)
    if name in RATIOS:
        if unit not in ("%", "pt"):
            raise _fail(part, "a fraction's delta is in pt (points) or % (of the base)")
        return Rule(part, name, op, amount, unit, "fraction", name)
    known = [f"{b}_pNN" for b in LATENCY if b != "dispatch_lag"]
    known += ["output_tps_per_user_pNN", *dict.fromkeys(THROUGHPUT.values()), *RATIOS]
    raise _fail(part, f"unknown metric {name!r} (one of: {', '.join(known)})")


def parse_fail_on(spec: str) -> tuple[Rule, ...]:
    """Parse a ``--fail-on`` spec; :class:`UsageError` on anything it does not understand."""
    rules = tuple(_parse_one(p.strip()) for p in spec.split(",") if p.strip())
    if not rules:
        raise UsageError("--fail-on: empty spec")
    return rules


# -- the figures, per session and pooled ---------------------------------------------------

Pieces = list[npt.NDArray[np.float64]]  # per session: the values a distribution pools
Sums = npt.NDArray[np.float64]  # per session: (numerator, denominator) sums, shape (n, 2)


def _values(rule: Rule, records: Sequence[RequestRecord]) -> list[float]:
    ok = [r for r in records if r.ok]
    if rule.base == "itl":
        return list(lat.pooled_itl_ms(ok))
    return lat.known(lat.PER_REQUEST[rule.base], ok)


def _sums(rule: Rule, records: Sequence[RequestRecord]) -> tuple[float, float]:
    """A ratio figure's numerator and denominator over ``records`` (a rate's denominator is
    the run's window, applied after)."""
    ok = [r for r in records if r.ok]
    if rule.base == "reported_hit_rate":
        pairs = [
            (r.cached_tokens, r.prompt_tokens)
            for r in records
            if r.cached_tokens is not None and r.prompt_tokens is not None
        ]
        return float(sum(c for c, _ in pairs)), float(sum(p for _, p in pairs))
    if rule.base == "theoretical_hit_rate":
        pairs = [
            (r.theoretical_hit_tokens, r.expected_prompt_tokens)
            for r in records
            if r.theoretical_hit_tokens is not None and r.expected_prompt_tokens
        ]
        return float(sum(h for h, _ in pairs)), float(sum(p for _, p in pairs))
    if rule.base == "error_rate":
        return float(len(records) - len(ok)), float(len(records))
    if rule.base == "requests_per_s":
        return float(len(ok)), 1.0
    if rule.base == "input_tokens_per_s":
        return float(lat.total_tokens(lat.input_tokens, ok)), 1.0
    return float(lat.total_tokens(lat.output_tokens, ok)), 1.0


def _stat(rule: Rule, values: npt.NDArray[np.float64]) -> float | None:
    if values.size == 0:
        return None
    if rule.stat == "mean":
        return float(values.mean())
    assert rule.stat is not None
    return float(np.percentile(values, float(rule.stat[1:])))


@dataclass(frozen=True, slots=True)
class _Run:
    """One run's measured rows as the bootstrap draws them: per session."""

    pieces: Pieces | None
    sums: Sums | None
    span_s: float | None

    @property
    def sessions(self) -> int:
        if self.pieces is not None:
            return len(self.pieces)
        return 0 if self.sums is None else len(self.sums)

    def figure(self, rule: Rule, pick: npt.NDArray[np.intp] | None) -> float | None:
        """The figure over the sessions ``pick`` (all of them when ``None``)."""
        if self.pieces is not None:
            chosen = self.pieces if pick is None else [self.pieces[i] for i in pick]
            return _stat(rule, np.concatenate(chosen) if chosen else np.empty(0))
        assert self.sums is not None
        s = self.sums if pick is None else self.sums[pick]
        num, den = float(s[:, 0].sum()), float(s[:, 1].sum())
        if rule.base in RATIOS:
            return num / den if den > 0 else None
        return num / self.span_s if self.span_s else None


def _run(rule: Rule, records: Sequence[RequestRecord]) -> _Run:
    measured = lat.measured(records)
    by_session: dict[str, list[RequestRecord]] = {}
    for r in measured:
        by_session.setdefault(r.session_id, []).append(r)
    groups = list(by_session.values())
    if rule.stat is not None:
        pieces = [np.asarray(_values(rule, g), dtype=np.float64) for g in groups]
        return _Run(pieces, None, None)
    sums = np.array([_sums(rule, g) for g in groups], dtype=np.float64).reshape(-1, 2)
    return _Run(None, sums, lat.span_s(measured))


def delta(rule: Rule, base: float | None, new: float | None) -> float | None:
    """``new`` against ``base`` in the rule's unit: ``%`` of the base, ``pt`` (x100 of a
    fraction's difference), else the difference."""
    if base is None or new is None:
        return None
    if rule.unit == "%":
        return (new - base) / base * 100.0 if base != 0 else None
    if rule.unit == "pt":
        return (new - base) * 100.0
    return new - base


def verdict(rule: Rule, low: float | None, high: float | None, *, strict: bool) -> Verdict:
    """The rule's verdict from its interval (see the module)."""
    if low is None or high is None:
        return Verdict.FAILED if strict else Verdict.UNKNOWN
    past: Callable[[float], bool] = (
        (lambda x: x > rule.threshold) if rule.op == ">" else (lambda x: x < rule.threshold)
    )
    if past(low) and past(high):
        return Verdict.FAILED
    if not past(low) and not past(high):
        return Verdict.PASSED
    return Verdict.FAILED if strict else Verdict.INCONCLUSIVE


def check(
    rule: Rule,
    base_records: Sequence[RequestRecord],
    new_records: Sequence[RequestRecord],
    bootstrap: Bootstrap,
    *,
    strict: bool = False,
) -> RegressionCheck:
    """One rule: the two runs' figures, the delta, its interval, the verdict."""
    base_run, new_run = _run(rule, base_records), _run(rule, new_records)
    b, n = base_run.figure(rule, None), new_run.figure(rule, None)
    d = delta(rule, b, n)
    low = high = None
    if d is not None and base_run.sessions and new_run.sessions:
        rng = np.random.default_rng(bootstrap.seed)
        draws = []
        for _ in range(bootstrap.resamples):
            pb = rng.integers(0, base_run.sessions, base_run.sessions)
            pn = rng.integers(0, new_run.sessions, new_run.sessions)
            x = delta(rule, base_run.figure(rule, pb), new_run.figure(rule, pn))
            if x is not None:
                draws.append(x)
        if draws:
            tail = (1.0 - bootstrap.confidence) / 2.0 * 100.0
            lo, hi = np.percentile(np.asarray(draws), (tail, 100.0 - tail))
            # the interval holds the point delta even when the resampled deltas are skewed
            low, high = min(float(lo), d), max(float(hi), d)
    return RegressionCheck(
        rule.text,
        rule.metric,
        rule.op,
        rule.threshold,
        rule.unit,
        b,
        n,
        d,
        low,
        high,
        verdict(rule, low, high, strict=strict),
    )


def check_all(
    rules: Sequence[Rule],
    base_records: Sequence[RequestRecord],
    new_records: Sequence[RequestRecord],
    bootstrap: Bootstrap,
    *,
    strict: bool = False,
) -> tuple[RegressionCheck, ...]:
    return tuple(check(r, base_records, new_records, bootstrap, strict=strict) for r in rules)
