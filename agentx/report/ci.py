"""What a CI job reads of a run: its checks as JUnit (``--junit FILE``), a Markdown step summary
appended to ``$GITHUB_STEP_SUMMARY`` when GitHub Actions sets it, and the baseline check as a
terminal table. The checks are the run's ``--slo`` checks, its failure and coverage gates and,
against a baseline, each ``--fail-on`` rule; failed ones first in the step summary."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from rich.console import Group, RenderableType
from rich.text import Text

from agentx.core.outputs import atomic_output
from agentx.core.tables import Table
from agentx.report.fmt import num, pct
from agentx.report.glance import headline
from agentx.results.baseline import BaselineCheck, RegressionCheck, Verdict
from agentx.results.junit import JUnitCase, JUnitSuite
from agentx.results.summary import Summary
from agentx.results.summary.slo import CheckResult
from agentx.results.sweep import Sweep

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def _figure(v: float | None, unit: str | None) -> str:
    if v is None:
        return "unknown"
    if unit == "fraction":
        return pct(v)
    return f"{num(v)} {unit}" if unit else num(v)


def _delta(v: float | None, unit: str) -> str:
    if v is None:
        return "unknown"
    return f"{v:+.2f}{unit}" if unit in ("%", "pt") else f"{v:+.4g} {unit}"


def slo_message(c: CheckResult) -> str:
    return (
        f"{c.metric} = {_figure(c.value, c.unit)} (threshold {c.op} {_figure(c.threshold, c.unit)})"
    )


def regression_message(c: RegressionCheck) -> str:
    interval = (
        "unknown"
        if c.ci_low is None or c.ci_high is None
        else f"[{_delta(c.ci_low, c.unit)}, {_delta(c.ci_high, c.unit)}]"
    )
    return (
        f"{c.metric}: base {_figure(c.base, _unit(c))}, new {_figure(c.new, _unit(c))}, "
        f"delta {_delta(c.delta, c.unit)} (interval {interval}; fails {c.op} "
        f"{_delta(c.threshold, c.unit)})"
    )


def _unit(c: RegressionCheck) -> str:
    """The figure's unit (the delta's may be % or pt)."""
    if c.metric.endswith("hit_rate") or c.metric == "error_rate":
        return "fraction"
    if c.metric.startswith("output_tps_per_user") or c.metric.endswith("tokens_per_s"):
        return "tok/s"
    return "req/s" if c.metric == "requests_per_s" else "ms"


def _gate_cases(summary: Summary) -> list[JUnitCase]:
    g = summary.gates
    if g is None:
        return []
    limit = summary.config.get("max_failed_ratio")
    message = f"failed ratio {pct(g.failed_ratio)} (max {pct(limit) if isinstance(limit, float | int) else 'none'})"
    if g.coverage is not None:
        message += f", coverage {pct(g.coverage)}"
    if not g.reasons:
        return [JUnitCase("gates", "gate", message)]
    return [
        JUnitCase(f"gate {i + 1}", "gate", message, failure=reason)
        for i, reason in enumerate(g.reasons)
    ]


def junit_suite(
    summary: Summary, check: BaselineCheck | None = None, *, name: str = "agentx replay"
) -> JUnitSuite:
    """The run's checks as one JUnit suite (see the module)."""
    cases = _gate_cases(summary)
    for c in summary.slo.checks:
        message = slo_message(c)
        cases.append(
            JUnitCase(
                f"slo {c.metric}{c.op}{c.threshold:g}{_suffix(c.unit)}",
                "slo",
                message,
                None if c.passed else message,
            )
        )
    cases += regression_cases(check)
    return JUnitSuite(name, tuple(cases), summary.duration_s)


def _suffix(unit: str | None) -> str:
    """A threshold's unit as ``--slo`` spells it (``300ms``; a fraction bare)."""
    return "" if unit in (None, "fraction") else unit


def regression_cases(check: BaselineCheck | None) -> list[JUnitCase]:
    if check is None:
        return []
    out = []
    for c in check.checks:
        message = regression_message(c)
        failed = c.verdict is Verdict.FAILED
        skipped = None if failed or c.verdict is Verdict.PASSED else f"{c.verdict}: {message}"
        out.append(
            JUnitCase(
                f"regression {c.rule}", "regression", message, message if failed else None, skipped
            )
        )
    return out


def sweep_suite(levels: Mapping[str, Summary]) -> JUnitSuite:
    """A sweep's checks: each level's gates and SLO checks, the level (``concurrency 4``,
    ``session concurrency 4``) in each name, in the order given."""
    cases: list[JUnitCase] = []
    for level, summary in levels.items():
        for c in junit_suite(summary).cases:
            cases.append(
                JUnitCase(
                    f"{level}: {c.name}",
                    c.classname,
                    c.message,
                    c.failure,
                    c.skipped,
                )
            )
    return JUnitSuite("agentx sweep", tuple(cases))


def write_sweep_junit(sweep_dir: Path, sweep: Sweep, path: Path) -> Path:
    """``sweep --junit``: each level's checks, read from its ``summary.json``."""
    from agentx.report.results_dir import load_summary

    over_routes = len(sweep.routes) > 1
    levels = {
        (f"{p.route} " if over_routes else "") + f"concurrency {p.concurrency}": load_summary(
            sweep_dir / p.results_dir
        )
        for p in sorted(sweep.points, key=lambda p: p.concurrency if not over_routes else 0)
        if (sweep_dir / p.results_dir / "summary.json").is_file()
    }
    return write_junit(sweep_suite(levels), path)


def write_junit(suite: JUnitSuite, path: Path) -> Path:
    with atomic_output(path, force=True) as tmp:  # a build output, rewritten every run
        Path(tmp).write_text(suite.to_xml(), encoding="utf-8")
    return path


def step_summary(
    summary: Summary, check: BaselineCheck | None = None, *, title: str = "agentx"
) -> str:
    """The run as GitHub renders a step summary: the verdict, the headline, the checks (failed
    first), the baseline's interval per rule."""
    suite = junit_suite(summary, check)
    failed = [c for c in suite.cases if c.failure is not None]
    shaky = [c for c in suite.cases if c.failure is None and c.skipped is not None]
    verdict = "failed" if failed else "passed"
    lines = [f"## {title}: {verdict}", ""]
    if summary.endpoint or summary.model:
        lines += [f"`{summary.model or 'model unknown'}` at `{summary.endpoint or 'unknown'}`", ""]
    lines += ["| figure | value |", "|---|---|"]
    lines += [f"| {label} | {value} |" for label, value in headline(summary)]
    lines.append("")
    if suite.cases:
        lines += ["| check | result | measured |", "|---|---|---|"]
        ordered = [*failed, *shaky, *(c for c in suite.cases if c not in failed and c not in shaky)]
        for c in ordered:
            result = (
                "❌ failed"
                if c.failure is not None
                else "⚠️ inconclusive"
                if c.skipped
                else "✅ passed"
            )
            lines.append(f"| {_cell(c.name)} | {result} | {_cell(c.message)} |")
        lines.append("")
    if check is not None:
        lines.append(
            f"Baseline `{check.base.results_dir}` ({check.base.started_at or 'time unknown'}): "
            f"{check.bootstrap.resamples} resamplings of the sessions, "
            f"{check.bootstrap.confidence:.0%} intervals" + (", strict" if check.strict else "")
        )
        lines += [f"- warning: {w}" for w in check.warnings]
        lines.append("")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def append_step_summary(markdown: str, env: Mapping[str, str] | None = None) -> Path | None:
    """Append to the file ``$GITHUB_STEP_SUMMARY`` names; ``None`` outside GitHub Actions."""
    target = (os.environ if env is None else env).get(STEP_SUMMARY_ENV)
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as fh:
        fh.write(markdown)
    return Path(target)


def render_check(check: BaselineCheck) -> RenderableType:
    """The baseline check as the terminal shows it."""
    t = Table("rule", "verdict", "base", "new", "delta", "interval")
    for c in check.checks:
        interval = (
            "unknown"
            if c.ci_low is None or c.ci_high is None
            else f"{_delta(c.ci_low, c.unit)} .. {_delta(c.ci_high, c.unit)}"
        )
        t.add_row(
            c.rule,
            str(c.verdict),
            _figure(c.base, _unit(c)),
            _figure(c.new, _unit(c)),
            _delta(c.delta, c.unit),
            interval,
        )
    counts = ", ".join(f"{check.count(v)} {v}" for v in Verdict if check.count(v))
    head = Text(
        f"against baseline {check.base.results_dir} ({check.base.started_at or 'time unknown'}): "
        + ("passed" if check.passed else "REGRESSION")
        + f" ({counts})"
    )
    return Group(head, t)


def publish(
    summary: Summary,
    check: BaselineCheck | None,
    junit: Path | None,
    *,
    name: str,
    env: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write ``--junit`` and append the step summary (under GitHub Actions): what was written."""
    written = []
    if junit is not None:
        written.append(write_junit(junit_suite(summary, check, name=name), junit))
    path = append_step_summary(step_summary(summary, check, title=name), env)
    if path is not None:
        written.append(path)
    return written
