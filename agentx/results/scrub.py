"""``agentx scrub --report FILE`` / ``--json`` (``agentx.scrub/1``): what scrub dropped and
redacted, rule by rule, and the theoretical hit rate before and after (:mod:`agentx.scrub`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentx.results.base import Json, counts, integer, items, need, num, obj, schema_obj, sub, text

SCHEMA = "agentx.scrub/1"


@dataclass(frozen=True, slots=True)
class RuleCount:
    name: str
    action: str
    reason: str
    count: int

    def to_json(self) -> Json:
        return {
            "name": self.name,
            "action": self.action,
            "count": self.count,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RuleCount:
        return cls(
            need(text(d, "name"), "name"),
            need(text(d, "action"), "action"),
            need(text(d, "reason"), "reason"),
            need(integer(d, "count"), "count"),
        )


@dataclass(frozen=True, slots=True)
class ScrubReport:
    input: str
    output: str
    exchanges_in: int
    exchanges_out: int
    rules: tuple[RuleCount, ...]
    secrets: Mapping[str, int] = field(default_factory=dict)  # occurrences replaced, by family
    secrets_distinct: Mapping[str, int] = field(default_factory=dict)
    block_size: int = 16
    hit_rate_before: float | None = None
    hit_rate_after: float | None = None

    def count(self, name: str) -> int:
        return sum(r.count for r in self.rules if r.name == name)

    def to_json(self) -> Json:
        return {
            "schema": SCHEMA,
            "input": self.input,
            "output": self.output,
            "exchanges": {
                "in": self.exchanges_in,
                "out": self.exchanges_out,
                "dropped": self.exchanges_in - self.exchanges_out,
            },
            "rules": [r.to_json() for r in self.rules],
            "secrets": {"replaced": dict(self.secrets), "distinct": dict(self.secrets_distinct)},
            "theoretical_hit_rate": {
                "block_size": self.block_size,
                "before": self.hit_rate_before,
                "after": self.hit_rate_after,
            },
        }

    @classmethod
    def from_json(cls, v: object) -> ScrubReport:
        d = schema_obj(v, SCHEMA)
        ex, secrets, rate = sub(d, "exchanges"), sub(d, "secrets"), sub(d, "theoretical_hit_rate")
        return cls(
            input=need(text(d, "input"), "input"),
            output=need(text(d, "output"), "output"),
            exchanges_in=need(integer(ex, "in"), "exchanges.in"),
            exchanges_out=need(integer(ex, "out"), "exchanges.out"),
            rules=tuple(RuleCount.from_json(obj(r, "rules")) for r in items(d, "rules")),
            secrets=counts(secrets, "replaced"),
            secrets_distinct=counts(secrets, "distinct"),
            block_size=need(integer(rate, "block_size"), "theoretical_hit_rate.block_size"),
            hit_rate_before=num(rate, "before"),
            hit_rate_after=num(rate, "after"),
        )
