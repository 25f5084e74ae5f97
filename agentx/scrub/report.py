"""What scrub did, rule by rule, and the theoretical hit rate before and after.

The hit rate is measured by :class:`agentx.prefixcache.theory.HitRateMeter`, the meter ``agentx stats``
uses, at the text block size (hash-only rows at their own block size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.table import Table

SCHEMA = "agentx.scrub/1"


@dataclass(frozen=True, slots=True)
class RuleCount:
    name: str
    action: str
    reason: str
    count: int


@dataclass(frozen=True, slots=True)
class ScrubReport:
    input: str
    output: str
    exchanges_in: int
    exchanges_out: int
    rules: tuple[RuleCount, ...]
    secrets: dict[str, int] = field(default_factory=dict)  # occurrences replaced, by family
    secrets_distinct: dict[str, int] = field(default_factory=dict)
    block_size: int = 16
    hit_rate_before: float | None = None
    hit_rate_after: float | None = None

    def count(self, name: str) -> int:
        return sum(r.count for r in self.rules if r.name == name)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "input": self.input,
            "output": self.output,
            "exchanges": {
                "in": self.exchanges_in,
                "out": self.exchanges_out,
                "dropped": self.exchanges_in - self.exchanges_out,
            },
            "rules": [
                {"name": r.name, "action": r.action, "count": r.count, "reason": r.reason}
                for r in self.rules
            ],
            "secrets": {"replaced": self.secrets, "distinct": self.secrets_distinct},
            "theoretical_hit_rate": {
                "block_size": self.block_size,
                "before": self.hit_rate_before,
                "after": self.hit_rate_after,
            },
        }


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def render_report(report: ScrubReport, *, all_rules: bool = False) -> Table:
    """A rich table: one row per rule that fired (every rule with ``all_rules``)."""
    table = Table(
        title=f"agentx scrub: {report.exchanges_in} exchanges in, {report.exchanges_out} out"
    )
    table.add_column("rule")
    table.add_column("action")
    table.add_column("count", justify="right")
    table.add_column("reason")
    for r in report.rules:
        if r.count or all_rules:
            table.add_row(r.name, r.action, str(r.count), r.reason)
    if report.secrets:
        families = ", ".join(f"{k} x{v}" for k, v in sorted(report.secrets.items()))
        table.add_row("", "", "", f"secrets: {families}")
    table.caption = (
        f"theoretical hit rate (block {report.block_size}): "
        f"{_pct(report.hit_rate_before)} before, {_pct(report.hit_rate_after)} after"
    )
    return table


def rule_counts(
    rules: Sequence[tuple[str, str, str]], counts: dict[str, int]
) -> tuple[RuleCount, ...]:
    return tuple(RuleCount(n, a, r, counts.get(n, 0)) for n, a, r in rules)
