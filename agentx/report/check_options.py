"""The baseline and CI options of ``agentx replay`` and ``agentx report``, declared once
(:mod:`agentx.report.baseline` checks a run against the baseline; :mod:`agentx.report.ci`
writes the JUnit file)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentx.core.errors import UsageError
from agentx.core.options import Panel, option
from agentx.metrics.regression import (
    CONFIDENCE,
    DEFAULT_FAIL_ON,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    parse_fail_on,
)
from agentx.results.baseline import Bootstrap


@dataclass(frozen=True, slots=True)
class CheckInputs:
    """The baseline and CI options of ``agentx replay`` and ``agentx report`` (``--junit`` of
    ``agentx sweep`` too)."""

    baseline: Path | None = option(
        None,
        "--baseline",
        metavar="DIR",
        panel=Panel.GATES,
        show_default=False,
        help="check the run against a baseline: a results directory, or a directory of saved "
        "baselines (agentx baseline save), the newest compatible one chosen; exit 3 on a "
        "confirmed regression",
    )
    fail_on: str | None = option(
        None,
        "--fail-on",
        metavar="SPEC",
        panel=Panel.GATES,
        show_default=False,
        help=f"the regressions that fail the check [default: {DEFAULT_FAIL_ON}]",
    )
    strict: bool = option(
        False,
        "--strict",
        panel=Panel.GATES,
        help="an inconclusive check (its interval straddles the threshold) fails too",
    )
    bootstrap_resamples: int = option(
        DEFAULT_RESAMPLES,
        "--bootstrap-resamples",
        metavar="N",
        min=100,
        panel=Panel.GATES,
        help="resamplings of each run's sessions behind a delta's confidence interval",
    )
    bootstrap_seed: int = option(
        DEFAULT_SEED, "--bootstrap-seed", metavar="N", panel=Panel.GATES, help="their seed"
    )
    junit: Path | None = option(
        None,
        "--junit",
        metavar="FILE",
        panel=Panel.OUTPUT,
        show_default=False,
        help="also write the checks (SLOs, gates, regressions) as JUnit XML here",
    )

    def __post_init__(self) -> None:
        if self.baseline is None and (self.fail_on is not None or self.strict):
            raise UsageError("--fail-on and --strict need --baseline DIR")
        if self.baseline is not None and not self.baseline.is_dir():
            raise UsageError(f"--baseline {self.baseline}: no such directory")
        if self.fail_on is not None:
            parse_fail_on(self.fail_on)  # a typo is refused before the run, not after

    @property
    def spec(self) -> str:
        return self.fail_on if self.fail_on is not None else DEFAULT_FAIL_ON

    @property
    def bootstrap(self) -> Bootstrap:
        return Bootstrap(self.bootstrap_resamples, self.bootstrap_seed, CONFIDENCE)


@dataclass(frozen=True, slots=True)
class BaselineStore:
    """Where ``agentx baseline`` keeps saved baselines (a directory of results directories,
    one per name: what ``--baseline DIR`` chooses from)."""

    store: Path = option(
        Path("baselines"),
        "--dir",
        metavar="DIR",
        panel=Panel.OUTPUT,
        help="the directory of baselines",
    )


@dataclass(frozen=True, slots=True)
class TrendInputs:
    """``agentx report RUN... --trend``: the runs as a trend, not merged."""

    trend: bool = option(
        False,
        "--trend",
        panel=Panel.REPORT,
        help="several runs as a trend: each headline figure run by run, series by --label, "
        "the throughput-interactivity frontier; -o DIR writes trend.json, trend.html, "
        "trend.csv and the charts as PNG",
    )
