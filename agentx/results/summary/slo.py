"""``summary.slo``: the ``--slo`` checks of a run and its goodput (rules: :mod:`agentx.metrics.slo`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.results.base import Json, flag, integer, items, need, num, obj, opt_obj, text


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check: ``threshold`` and ``value`` in ``unit`` (``ms``, ``tok/s``, ``req/s`` or
    ``fraction``); a check whose figure is unknown (``value`` ``None``) fails."""

    metric: str
    op: str
    threshold: float
    unit: str | None
    value: float | None
    passed: bool

    def to_json(self) -> Json:
        return {
            "metric": self.metric,
            "op": self.op,
            "threshold": self.threshold,
            "unit": self.unit,
            "value": self.value,
            "passed": self.passed,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CheckResult:
        return cls(
            need(text(d, "metric"), "metric"),
            need(text(d, "op"), "op"),
            need(num(d, "threshold"), "threshold"),
            text(d, "unit"),
            num(d, "value"),
            need(flag(d, "passed"), "passed"),
        )


@dataclass(frozen=True, slots=True)
class GoodputSlo:
    """A per-request SLO a good request meets (``metric`` is the per-request figure)."""

    metric: str
    op: str
    threshold: float
    unit: str

    def to_json(self) -> Json:
        return {
            "metric": self.metric,
            "op": self.op,
            "threshold": self.threshold,
            "unit": self.unit,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> GoodputSlo:
        return cls(
            need(text(d, "metric"), "metric"),
            need(text(d, "op"), "op"),
            need(num(d, "threshold"), "threshold"),
            need(text(d, "unit"), "unit"),
        )


@dataclass(frozen=True, slots=True)
class Goodput:
    """How many measured requests met every per-request SLO, as a share and a rate."""

    slos: tuple[GoodputSlo, ...]
    requests: int
    good: int
    fraction: float | None
    requests_per_s: float | None

    def to_json(self) -> Json:
        return {
            "slos": [s.to_json() for s in self.slos],
            "requests": self.requests,
            "good": self.good,
            "fraction": self.fraction,
            "requests_per_s": self.requests_per_s,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Goodput:
        return cls(
            tuple(GoodputSlo.from_json(obj(s, "slos")) for s in items(d, "slos")),
            need(integer(d, "requests"), "requests"),
            need(integer(d, "good"), "good"),
            num(d, "fraction"),
            num(d, "requests_per_s"),
        )


@dataclass(frozen=True, slots=True)
class Slo:
    """``passed`` is ``None`` without checks."""

    passed: bool | None = None
    checks: tuple[CheckResult, ...] = ()
    goodput: Goodput | None = None

    def to_json(self) -> Json:
        return {
            "passed": self.passed,
            "checks": [c.to_json() for c in self.checks],
            "goodput": None if self.goodput is None else self.goodput.to_json(),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Slo:
        gp = opt_obj(d, "goodput")
        return cls(
            flag(d, "passed"),
            tuple(CheckResult.from_json(obj(c, "checks")) for c in items(d, "checks")),
            None if gp is None else Goodput.from_json(gp),
        )
