"""``baseline.json`` (``agentx.baseline/1``): a run checked against a baseline run by the
``--fail-on`` rules (:mod:`agentx.metrics.regression`), each delta with its bootstrap
confidence interval and a verdict. ``agentx report RUN --baseline BASE --json`` prints it;
``agentx replay --baseline`` writes it into the results directory."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agentx.results.base import (
    Json,
    flag,
    integer,
    items,
    need,
    num,
    obj,
    schema_obj,
    sub,
    text,
    texts,
)
from agentx.results.summary.identity import Labels, labels_of

SCHEMA = "agentx.baseline/1"


class Verdict(StrEnum):
    """What a ``--fail-on`` rule found: the whole interval on the good side of its threshold
    (``passed``), past it (``failed``: a confirmed regression), straddling it
    (``inconclusive``: the runs are too noisy to tell), or a figure one run lacks (``unknown``)."""

    PASSED = "passed"
    FAILED = "failed"
    INCONCLUSIVE = "inconclusive"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class RegressionCheck:
    """One rule (``ttft_p99>+10%``): the figure of each run (in the summary's unit, ``ms``,
    ``tok/s`` or a fraction), the delta in the rule's unit (``%`` of the base, ``pt`` of a
    fraction, or the figure's own unit), the delta's confidence interval, the verdict (after
    ``--strict``: then an inconclusive or unknown check fails)."""

    rule: str  # as written in --fail-on
    metric: str
    op: str  # ">": worse when the delta is above the threshold; "<": below
    threshold: float  # the delta allowed, in `unit`
    unit: str  # "%", "pt", "ms", "tok/s", "req/s"
    base: float | None
    new: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: Verdict

    def to_json(self) -> Json:
        return {
            "rule": self.rule,
            "metric": self.metric,
            "op": self.op,
            "threshold": self.threshold,
            "unit": self.unit,
            "base": self.base,
            "new": self.new,
            "delta": self.delta,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "verdict": str(self.verdict),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RegressionCheck:
        return cls(
            need(text(d, "rule"), "rule"),
            need(text(d, "metric"), "metric"),
            need(text(d, "op"), "op"),
            need(num(d, "threshold"), "threshold"),
            need(text(d, "unit"), "unit"),
            num(d, "base"),
            num(d, "new"),
            num(d, "delta"),
            num(d, "ci_low"),
            num(d, "ci_high"),
            Verdict(need(text(d, "verdict"), "verdict")),
        )


@dataclass(frozen=True, slots=True)
class RunIdentity:
    """Which run a side of the check is, and what makes two runs comparable."""

    results_dir: str | None
    started_at: str | None
    trace_fingerprint: str | None
    server_kind: str | None
    concurrency: int | None
    scenario: str | None
    labels: Labels = ()

    def to_json(self) -> Json:
        return {
            "results_dir": self.results_dir,
            "started_at": self.started_at,
            "trace_fingerprint": self.trace_fingerprint,
            "server_kind": self.server_kind,
            "concurrency": self.concurrency,
            "scenario": self.scenario,
            "labels": dict(self.labels),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RunIdentity:
        return cls(
            text(d, "results_dir"),
            text(d, "started_at"),
            text(d, "trace_fingerprint"),
            text(d, "server_kind"),
            integer(d, "concurrency"),
            text(d, "scenario"),
            labels_of(d, "labels"),
        )


@dataclass(frozen=True, slots=True)
class Bootstrap:
    """How the intervals were drawn: ``resamples`` resamplings of each run's sessions (with
    replacement, seeded), the two-sided ``confidence``."""

    resamples: int
    seed: int
    confidence: float
    unit: str = "session"

    def to_json(self) -> Json:
        return {
            "unit": self.unit,
            "resamples": self.resamples,
            "seed": self.seed,
            "confidence": self.confidence,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Bootstrap:
        return cls(
            need(integer(d, "resamples"), "resamples"),
            need(integer(d, "seed"), "seed"),
            need(num(d, "confidence"), "confidence"),
            need(text(d, "unit"), "unit"),
        )


@dataclass(frozen=True, slots=True)
class BaselineCheck:
    """``passed`` is false when a check failed (a confirmed regression, or under ``strict`` an
    inconclusive or unknown one): the command then exits 3."""

    base: RunIdentity
    new: RunIdentity
    fail_on: str
    strict: bool
    bootstrap: Bootstrap
    checks: tuple[RegressionCheck, ...]
    warnings: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return all(c.verdict is not Verdict.FAILED for c in self.checks)

    def count(self, verdict: Verdict) -> int:
        return sum(1 for c in self.checks if c.verdict is verdict)

    def to_json(self) -> Json:
        return {
            "schema": SCHEMA,
            "passed": self.passed,
            "base": self.base.to_json(),
            "new": self.new.to_json(),
            "fail_on": self.fail_on,
            "strict": self.strict,
            "bootstrap": self.bootstrap.to_json(),
            "checks": [c.to_json() for c in self.checks],
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_json(cls, v: object) -> BaselineCheck:
        d = schema_obj(v, SCHEMA)
        return cls(
            RunIdentity.from_json(sub(d, "base")),
            RunIdentity.from_json(sub(d, "new")),
            need(text(d, "fail_on"), "fail_on"),
            bool(flag(d, "strict")),
            Bootstrap.from_json(sub(d, "bootstrap")),
            tuple(RegressionCheck.from_json(obj(c, "checks")) for c in items(d, "checks")),
            texts(d, "warnings"),
        )
