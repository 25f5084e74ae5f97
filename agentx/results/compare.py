"""``agentx report NEW --compare BASE --json`` (``agentx.compare/1``): two runs key by key
(:mod:`agentx.report.compare` decides the keys and which way is better)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.results.base import Json, items, need, num, obj, schema_obj, sub, text

SCHEMA = "agentx.compare/1"


@dataclass(frozen=True, slots=True)
class RunRef:
    """Which run a side of the comparison is."""

    endpoint: str | None
    model: str | None
    started_at: str | None
    duration_s: float | None

    def to_json(self) -> Json:
        return {
            "endpoint": self.endpoint,
            "model": self.model,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RunRef:
        return cls(
            text(d, "endpoint"), text(d, "model"), text(d, "started_at"), num(d, "duration_s")
        )


@dataclass(frozen=True, slots=True)
class MetricRow:
    """One summary key (dotted, as in ``summary.json``): base, new, their delta and ratio (when
    both are known; ratio also needs a base other than 0), which way is ``better``
    (``lower``, ``higher``, ``neutral``) and the ``change`` (``same`` within 1 %, ``better``,
    ``worse`` or ``changed``)."""

    key: str
    base: float | None
    new: float | None
    delta: float | None
    ratio: float | None
    better: str
    change: str | None

    def to_json(self) -> Json:
        return {
            "key": self.key,
            "base": self.base,
            "new": self.new,
            "delta": self.delta,
            "ratio": self.ratio,
            "better": self.better,
            "change": self.change,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MetricRow:
        return cls(
            need(text(d, "key"), "key"),
            num(d, "base"),
            num(d, "new"),
            num(d, "delta"),
            num(d, "ratio"),
            need(text(d, "better"), "better"),
            text(d, "change"),
        )


@dataclass(frozen=True, slots=True)
class ConfigDifference:
    """An option (``config.KEY``, or ``model``/``endpoint``) the two runs were given apart:
    its values as each summary holds them."""

    key: str
    base: Any
    new: Any

    def to_json(self) -> Json:
        return {"key": self.key, "base": self.base, "new": self.new}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ConfigDifference:
        return cls(need(text(d, "key"), "key"), d.get("base"), d.get("new"))


@dataclass(frozen=True, slots=True)
class Comparison:
    base: RunRef
    new: RunRef
    metrics: tuple[MetricRow, ...]
    config_differences: tuple[ConfigDifference, ...]

    def to_json(self) -> Json:
        return {
            "schema": SCHEMA,
            "base": self.base.to_json(),
            "new": self.new.to_json(),
            "metrics": [m.to_json() for m in self.metrics],
            "config_differences": [c.to_json() for c in self.config_differences],
        }

    @classmethod
    def from_json(cls, v: object) -> Comparison:
        d = schema_obj(v, SCHEMA)
        return cls(
            RunRef.from_json(sub(d, "base")),
            RunRef.from_json(sub(d, "new")),
            tuple(MetricRow.from_json(obj(m, "metrics")) for m in items(d, "metrics")),
            tuple(
                ConfigDifference.from_json(obj(c, "config_differences"))
                for c in items(d, "config_differences")
            ),
        )
