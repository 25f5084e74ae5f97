"""``agentx report``: re-render saved results (a replay's results directory or a whole sweep
directory), optionally against a base run, as a terminal table, JSON, HTML, PNG charts and CSV.

Cost options and ``--percentiles`` recompute what the saved files allow: the ``cost`` block from
the summary's throughput and token mix, extra percentiles from ``requests.parquet``. Nothing in
the results directory is rewritten unless an output path points there. Several results
directories (or ``-o``/``--slo``, or ``agentx merge``) are merged first (:mod:`agentx.report.merge`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Group, RenderableType

from agentx.core.errors import AgentxError, ShapeError, UsageError
from agentx.core.outputs import check_results_dir
from agentx.core.record import RequestRecord
from agentx.metrics.cost import CostOptions
from agentx.metrics.summary import with_cost, with_curves, with_percentiles
from agentx.report import export
from agentx.report.baseline import check_baseline, fingerprint_warnings
from agentx.report.charts import Run, latency_cdfs, summary_charts
from agentx.report.check_options import CheckInputs
from agentx.report.ci import publish, render_check
from agentx.report.compare import compare
from agentx.report.compare_page import render_compare_html
from agentx.report.fmt import config_warnings
from agentx.report.glance import warnings
from agentx.report.html import render_html
from agentx.report.page import check_page, page_source, write_page
from agentx.report.render import render_compare, render_summary
from agentx.report.results_dir import load_results, load_summary
from agentx.report.sweep_view import (
    is_sweep_dir,
    load_sweep,
    render_sweep_html,
    render_table,
    sweep_charts,
    sweep_point,
)
from agentx.results.baseline import BaselineCheck
from agentx.results.compare import Comparison
from agentx.results.summary import Summary
from agentx.results.sweep import Sweep
from agentx.results.trend import Trend


@dataclass(frozen=True, slots=True)
class ReportOptions:
    results_dir: Path
    base_dir: Path | None = None  # --compare
    html_path: Path | None = None
    csv_dir: Path | None = None
    png_dir: Path | None = None
    cost: CostOptions | None = None
    percentiles: tuple[float, ...] | None = None  # None: as saved
    more_dirs: tuple[Path, ...] = ()  # merged with results_dir (the shards of a split)
    output_dir: Path | None = None  # the merged results directory to write
    slo: str | None = None  # re-check the merged rows (None: the shards' own --slo)
    merge: bool = False  # merge even one directory (`agentx merge DIR`)
    force: bool = False  # replace an existing --html page (and a merged results directory)
    check: CheckInputs = field(default_factory=CheckInputs)  # --baseline, --fail-on, --junit
    trend: bool = False  # --trend: the directories as a trend, not merged

    @property
    def merging(self) -> bool:
        return not self.trend and bool(
            self.merge or self.more_dirs or self.output_dir is not None or self.slo is not None
        )


@dataclass(frozen=True, slots=True)
class Report:
    data: Summary | Comparison | Sweep | BaselineCheck | Trend  # what --json prints
    renderable: RenderableType  # what the terminal shows otherwise
    written: tuple[Path, ...] = ()  # files written (HTML, PNG, CSV)
    warnings: tuple[str, ...] = field(default=())
    slo_failed: bool = False  # a merge re-checked the --slo and a check failed
    shown: tuple[str, ...] = ()  # the warnings the renderable prints itself
    regressed: bool = False  # --baseline found a confirmed regression

    def stderr_warnings(self, json_out: bool) -> tuple[str, ...]:
        """The warnings for stderr, each once: all of them under ``--json`` (stdout is data),
        else those the renderable does not print."""
        held = () if json_out else self.shown
        return tuple(w for w in dict.fromkeys(self.warnings) if w not in held)


def _merged(o: ReportOptions) -> tuple[Summary, list[RequestRecord], tuple[str, ...]]:
    """The shards merged (written to ``o.output_dir`` when given), with the view's options."""
    from agentx.report.merge import merge_results

    m = merge_results([o.results_dir, *o.more_dirs], o.output_dir, o.slo)
    summary = m.summary
    if o.percentiles is not None:
        summary = with_percentiles(summary, m.records, o.percentiles)
    return with_cost(summary, o.cost), m.records, m.warnings


def _load(path: Path, o: ReportOptions) -> tuple[Summary, list[RequestRecord]]:
    """A run's summary with the options applied, and its records when an option needs them."""
    summary = load_summary(path)
    old = summary.rollups.latency_quantiles_ms is None  # written before the CDFs
    need_records = o.percentiles is not None or o.csv_dir is not None or old
    records = load_results(path)[1] if need_records else []
    summary = with_curves(summary, records)
    if o.percentiles is not None:
        if not records:
            raise AgentxError(f"{path}: --percentiles needs requests.parquet beside summary.json")
        summary = with_percentiles(summary, records, o.percentiles)
    return with_cost(summary, o.cost), records


SHAPE_ERRORS = (TypeError, AttributeError, KeyError, IndexError, ValueError)


def _source(o: ReportOptions) -> str:
    """The marker of the pages this report writes: the results directories it reads."""
    return page_source(o.results_dir, *o.more_dirs)


def build_report(o: ReportOptions) -> Report:
    """Load (or merge), recompute, write the files asked for, and return what to show. A
    summary with a field of the wrong type is one :class:`AgentxError` line, not a traceback."""
    if o.html_path is not None:
        check_page(o.html_path, _source(o), force=o.force)  # before the work, not after it
    if o.trend:
        return _trend_report(o)
    if o.output_dir is not None:
        check_results_dir(o.output_dir, force=o.force)
    try:
        return _build(o)
    except ShapeError:
        raise  # names the file and the field
    except SHAPE_ERRORS as exc:
        where = o.results_dir if o.base_dir is None else f"{o.results_dir} or {o.base_dir}"
        raise AgentxError(
            f"{where}: summary.json does not have the agentx.summary/1 shape "
            f"({type(exc).__name__}: {exc})"
        ) from None


def _build(o: ReportOptions) -> Report:
    merged: tuple[str, ...] = ()
    if o.merging:
        summary, records, merged = _merged(o)
    elif is_sweep_dir(o.results_dir):
        if o.base_dir is not None:
            raise UsageError("--compare takes two results directories, not a sweep directory")
        return _sweep_report(o)
    else:
        summary, records = _load(o.results_dir, o)
    slo_failed = o.merging and summary.slo.passed is False
    written: list[Path] = [o.output_dir] if o.output_dir is not None else []
    if o.check.baseline is not None:
        if o.base_dir is not None:
            raise UsageError("--baseline and --compare: give one base run")
        return _baseline_report(o, summary, records, merged, slo_failed, written)
    if o.check.junit is not None:
        written += publish(summary, None, o.check.junit, name="agentx report")
    if o.base_dir is None:
        if o.html_path is not None:
            source = _source(o)
            write_page(
                render_html(summary, source=source), o.html_path, force=o.force, source=source
            )
            written.append(o.html_path)
        written += _exports(o, summary_charts(summary), summary, records)
        return Report(
            summary,
            render_summary(summary),
            tuple(written),
            merged,
            slo_failed,
            shown=tuple(warnings(summary)),
        )
    base, _ = _load(o.base_dir, ReportOptions(o.base_dir, cost=o.cost, percentiles=o.percentiles))
    cmp = compare(base, summary)
    mismatch = fingerprint_warnings(base, summary)
    if o.html_path is not None:
        source = _source(o)
        html = render_compare_html(base, summary, cmp, source=source)
        write_page(html, o.html_path, force=o.force, source=source)
        written.append(o.html_path)
    charts = {
        **summary_charts(summary),
        **{
            f"compare_{k}": v
            for k, v in latency_cdfs([Run("base", base, dash=True), Run("new", summary)]).items()
        },
    }
    written += _exports(o, charts, summary, records)
    return Report(
        cmp,
        render_compare(cmp),  # the comparison alone: the new run has its own report
        tuple(written),
        (*merged, *mismatch, *config_warnings(cmp)),
        slo_failed,
        shown=tuple(config_warnings(cmp)),
    )


def _baseline_report(
    o: ReportOptions,
    summary: Summary,
    records: list[RequestRecord],
    merged: tuple[str, ...],
    slo_failed: bool,
    written: list[Path],
) -> Report:
    """The run against its baseline: the check's table under the run's own report."""
    if not records:
        records = load_results(o.results_dir)[1]
    check = check_baseline(summary, records, o.results_dir, o.check)
    if o.html_path is not None:
        source = _source(o)
        write_page(render_html(summary, source=source), o.html_path, force=o.force, source=source)
        written.append(o.html_path)
    written += _exports(o, summary_charts(summary), summary, records)
    written += publish(summary, check, o.check.junit, name="agentx report")
    return Report(
        check,
        Group(render_summary(summary), render_check(check)),
        tuple(written),
        (*merged, *check.warnings),
        slo_failed,
        shown=tuple(warnings(summary)),
        regressed=not check.passed,
    )


def _exports(
    o: ReportOptions,
    charts: dict[str, str],
    summary: Summary,
    records: list[RequestRecord],
) -> list[Path]:
    written: list[Path] = []
    if o.png_dir is not None:
        written += export.write_pngs(charts, o.png_dir)
    if o.csv_dir is not None:
        written += export.write_run_csv(summary, records, o.csv_dir)
    return written


def _trend_report(o: ReportOptions) -> Report:
    """``--trend``: the runs as a trend (:mod:`agentx.report.trend`)."""
    from agentx.report.trend import (
        build_trend,
        render_trend,
        render_trend_html,
        trend_charts,
        write_trend,
    )

    if o.base_dir is not None or o.check.baseline is not None or o.slo is not None:
        raise UsageError("--trend draws runs side by side: not with --compare, --baseline, --slo")
    data = build_trend([o.results_dir, *o.more_dirs], o.cost)
    written: list[Path] = []
    source = _source(o)
    if o.output_dir is not None:
        written += write_trend(data, o.output_dir, source)
    if o.html_path is not None:
        write_page(render_trend_html(data, source), o.html_path, force=o.force, source=source)
        written.append(o.html_path)
    if o.png_dir is not None:
        written += export.write_pngs(trend_charts(data), o.png_dir)
    if o.csv_dir is not None:
        written += export.write_trend_csv(data, o.csv_dir)
    return Report(data, render_trend(data), tuple(written), data.warnings)


def _sweep_report(o: ReportOptions) -> Report:
    """A sweep directory: the points rebuilt from each level's summary.json (so cost and
    percentile options apply), the table, and the sweep's page, charts and CSV."""
    data = load_sweep(o.results_dir)
    points = []
    for p in data.points:
        level = o.results_dir / p.results_dir
        if (level / "summary.json").is_file():
            summary, _ = _load(level, ReportOptions(level, cost=o.cost, percentiles=o.percentiles))
            # where the level's results are stays as the sweep recorded it
            point = sweep_point(p.concurrency, summary)
            points.append(dataclasses.replace(point, results_dir=p.results_dir))
        else:
            points.append(p)  # its directory is gone: keep what sweep.json recorded
    data = dataclasses.replace(data, points=tuple(points))
    written: list[Path] = []
    if o.html_path is not None:
        source = _source(o)
        write_page(render_sweep_html(data, source), o.html_path, force=o.force, source=source)
        written.append(o.html_path)
    if o.png_dir is not None:
        written += export.write_pngs(sweep_charts(data), o.png_dir)
    if o.csv_dir is not None:
        written += export.write_sweep_csv(data, o.csv_dir)
    return Report(data, render_table(data), tuple(written))
