"""What scrub did, rule by rule, and the theoretical hit rate before and after (the
``agentx.scrub/1`` report, :mod:`agentx.results.scrub`), as a table.

The hit rate is measured by :class:`agentx.prefixcache.theory.HitRateMeter`, the meter ``agentx stats``
uses, at the text block size (hash-only rows at their own block size).
"""

from __future__ import annotations

from collections.abc import Sequence

from agentx.core.tables import Table
from agentx.results.scrub import RuleCount, ScrubReport


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
