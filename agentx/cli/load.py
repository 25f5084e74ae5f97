"""Load commands: replay, sweep, report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentx.cli import replay_options as o
from agentx.cli import report_options as ro
from agentx.cli.app import Force, app, err, fail, out, print_json
from agentx.cli.engine_options import Tokenizer
from agentx.errors import AgentxError

if TYPE_CHECKING:
    from agentx.report.command import ReportOptions


@app.command()
def replay(
    ctx: typer.Context,
    trace: o.Trace,
    endpoint: o.Endpoint,
    model: o.Model = None,
    concurrency: o.OpenLoopConcurrency = None,
    session_rate: o.SessionRate = None,
    request_rate: o.RequestRate = None,
    arrival: o.Arrival = "poisson",
    burstiness: o.Burstiness = 1.0,
    duration: o.Duration = None,
    max_requests: o.MaxRequests = None,
    sessions: o.Sessions = None,
    time_scale: o.TimeScale = 1.0,
    max_think: o.MaxThink = None,
    assistant: o.Assistant = "recorded",
    salt: o.Salt = None,
    warmup: o.Warmup = None,
    scenario: o.Scenario = None,
    start_ratio: o.StartRatio = None,
    burst: o.Burst = False,
    spawn_join: o.SpawnJoin = None,
    trace_idle_cap: o.TraceIdleCap = None,
    system_idle_cap: o.SystemIdleCap = None,
    max_failed_ratio: o.MaxFailedRatio = None,
    min_coverage: o.MinCoverage = None,
    api: o.Api = "chat",
    extra_body: o.ExtraBody = None,
    ignore_eos: o.IgnoreEos = None,
    metrics_url: Annotated[
        str | None,
        typer.Option(
            "--metrics-url", help="Prometheus URL [default: ENDPOINT/metrics when it answers]"
        ),
    ] = None,
    no_metrics: o.NoMetrics = False,
    slo: Annotated[
        str | None,
        typer.Option(
            "--slo", help='checks, e.g. "ttft_p99<=2s,itl_p50<=50ms" (exit 3 when one fails)'
        ),
    ] = None,
    workers: o.Workers = "1",
    shard: Annotated[
        str, typer.Option("--shard", help="I/N: run only sessions i mod N == I (multi-machine)")
    ] = "0/1",
    start_at: Annotated[
        str | None,
        typer.Option(
            "--start-at",
            metavar="TIME",
            help="start the lanes at TIME (epoch seconds, or ISO 8601: UTC without an offset) "
            "after loading and probing, so shards start together; at once if it has passed",
        ),
    ] = None,
    seed: o.Seed = None,
    timeout: o.Timeout = None,
    block_size: o.BlockSize = None,
    tokenizer: Tokenizer = None,
    api_key: o.ApiKey = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="results directory [default: results/replay-TIME]",
            show_default=False,
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="print summary.json to stdout (no live display)")
    ] = False,
    percentiles: ro.Percentiles = None,
    reset_cache: o.ResetCache = False,
    config: ro.Config = None,
    gpu_hour_cost: ro.GpuHourCost = None,
    capex_per_hour: ro.CapexPerHour = None,
    power_kw: ro.PowerKw = None,
    usd_per_kwh: ro.UsdPerKwh = None,
    pue: ro.Pue = None,
    hosting_per_hour: ro.HostingPerHour = None,
    gpus: ro.Gpus = 1,
    utilization: ro.Utilization = 1.0,
    price: ro.Price = None,
    price_preset: ro.PricePreset = None,
    price_file: ro.PriceFile = None,
    license_fraction: ro.LicenseFraction = 0.0,
    force: Force = False,
) -> None:
    """Replay a trace as load against an OpenAI-compatible server; measure cache, TTFT, ITL, tokens/s."""
    from agentx.metrics.percentiles import parse_percentiles
    from agentx.replay import run_replay
    from agentx.replay.options import parse_extra_body, parse_ratio, parse_shard, parse_start_at
    from agentx.replay.scenario import describe, scenario_options

    try:
        options = scenario_options(
            scenario,
            trace=trace, endpoint=endpoint, model=model, duration_s=duration,
            concurrency=o.concurrency_or_default(
                concurrency, session_rate is not None or request_rate is not None
            ),
            session_rate=session_rate, request_rate=request_rate, arrival=arrival,
            burstiness=burstiness,
            max_requests=max_requests, sessions=sessions, time_scale=time_scale, max_think_s=max_think,
            assistant=assistant, salt=salt, warmup=warmup,
            start_ratio=parse_ratio(start_ratio) if start_ratio else None, burst=burst,
            spawn_join=spawn_join, trace_idle_cap_s=trace_idle_cap, system_idle_cap_s=system_idle_cap,
            max_failed_ratio=max_failed_ratio, min_coverage=min_coverage,
            api=api, extra_body=parse_extra_body(extra_body), ignore_eos=ignore_eos,
            metrics_url=metrics_url, scrape_metrics=not no_metrics, slo=slo, workers=o.parse_workers(workers),
            shard=parse_shard(shard), start_at_s=parse_start_at(start_at) if start_at else None,
            seed=seed, timeout_s=timeout,
            block_size=block_size, tokenizer=tokenizer, api_key=api_key, output_dir=output, force=force,
            progress=not json_out and err.is_terminal,
            percentiles=parse_percentiles(percentiles or ""), reset_cache=reset_cache,
            cost=ro.cost_from_flags(ctx.params),
        )  # fmt: skip
        if options.scenario is not None or options.start_ratio != (0.0, 0.0):
            err.print(f"agentx: {describe(options)}", markup=False, highlight=False, soft_wrap=True)
        result = run_replay(options)
    except AgentxError as exc:
        fail(exc)
    for warning in result.warnings:
        err.print(f"agentx: warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if json_out:
        print_json(result.summary)
    else:
        from agentx.report import render_summary

        out.print(render_summary(result.summary))
        err.print(
            f"agentx: results in {result.output_dir}", markup=False, highlight=False, soft_wrap=True
        )
    if result.exit_code:
        raise typer.Exit(result.exit_code)
    if result.failure is not None:
        err.print(
            f"agentx: run failed: {result.failure}", markup=False, highlight=False, soft_wrap=True
        )
        raise typer.Exit(1)
    if result.summary.get("slo", {}).get("passed") is False:
        raise typer.Exit(3)


@app.command()
def sweep(
    ctx: typer.Context,
    trace: o.Trace,
    endpoint: o.Endpoint,
    concurrency: Annotated[
        str,
        typer.Option("--concurrency", help="comma list of session-lane counts, e.g. 1,2,4,8,16"),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "-o", "--output", help="sweep directory: c{N}/ per level, sweep.json, sweep.svg"
        ),
    ],
    model: o.Model = None,
    duration: o.Duration = None,
    max_requests: o.MaxRequests = None,
    sessions: o.Sessions = None,
    time_scale: o.TimeScale = 1.0,
    max_think: o.MaxThink = None,
    assistant: o.Assistant = "recorded",
    salt: o.Salt = None,
    warmup: o.Warmup = None,
    api: o.Api = "chat",
    extra_body: o.ExtraBody = None,
    ignore_eos: o.IgnoreEos = None,
    no_metrics: o.NoMetrics = False,
    seed: o.Seed = None,
    timeout: o.Timeout = None,
    block_size: o.BlockSize = None,
    api_key: o.ApiKey = None,
    json_out: Annotated[bool, typer.Option("--json", help="print sweep.json to stdout")] = False,
    percentiles: ro.Percentiles = None,
    reset_cache: Annotated[
        bool,
        typer.Option(
            "--reset-cache/--no-reset-cache",
            help="reset the server's prefix cache before each level (vLLM, SGLang, serve-sim; "
            "a warning when the server does not allow it)",
        ),
    ] = True,
    config: ro.Config = None,
    gpu_hour_cost: ro.GpuHourCost = None,
    capex_per_hour: ro.CapexPerHour = None,
    power_kw: ro.PowerKw = None,
    usd_per_kwh: ro.UsdPerKwh = None,
    pue: ro.Pue = None,
    hosting_per_hour: ro.HostingPerHour = None,
    gpus: ro.Gpus = 1,
    utilization: ro.Utilization = 1.0,
    price: ro.Price = None,
    price_preset: ro.PricePreset = None,
    price_file: ro.PriceFile = None,
    license_fraction: ro.LicenseFraction = 0.0,
    force: Force = False,
) -> None:
    """One replay per concurrency level; the throughput-interactivity curve (sweep.json, sweep.svg)."""
    from agentx.metrics.percentiles import parse_percentiles
    from agentx.replay.options import parse_extra_body
    from agentx.replay.scenario import scenario_options
    from agentx.sweep import SweepOptions, parse_levels, render_table, run_sweep

    done: list[object] = []

    def level_done(point: dict[str, object]) -> None:
        done.append(point["concurrency"])
        if not json_out:
            err.print(
                f"agentx: level {len(done)}/{len(levels)}: concurrency "
                f"{point['concurrency']} done -> {output / str(point['results_dir'])}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )

    try:
        replay_options = scenario_options(
            None,
            trace=trace, endpoint=endpoint, model=model, duration_s=duration, max_requests=max_requests,
            sessions=sessions, time_scale=time_scale, max_think_s=max_think, assistant=assistant,
            salt=salt, warmup=warmup, api=api,
            extra_body=parse_extra_body(extra_body), ignore_eos=ignore_eos, scrape_metrics=not no_metrics,
            seed=seed, timeout_s=timeout, block_size=block_size, api_key=api_key,
            progress=not json_out and err.is_terminal,
            percentiles=parse_percentiles(percentiles or ""), reset_cache=reset_cache,
            cost=ro.cost_from_flags(ctx.params),
        )  # fmt: skip
        levels = parse_levels(concurrency)
        result = run_sweep(SweepOptions(replay_options, levels, output, force), level_done)
    except AgentxError as exc:
        fail(exc)
    for warning in result.warnings:
        err.print(f"agentx: warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if json_out:
        print_json(result.data)
    else:
        out.print(render_table(result.data))
        err.print(
            f"agentx: sweep in {output} (sweep.json, sweep.svg, sweep.html)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if result.exit_code:
        raise typer.Exit(result.exit_code)


MergeOutput = Annotated[
    Path | None,
    typer.Option(
        "-o",
        "--output",
        metavar="DIR",
        help="write the merged results directory here (summary.json, requests.parquet, ...)",
        show_default=False,
    ),
]
MergeSlo = Annotated[
    str | None,
    typer.Option(
        "--slo",
        help="check the merged rows against these SLOs (default: the shards' own --slo); "
        "exit 3 when one fails",
    ),
]


@app.command()
def report(
    ctx: typer.Context,
    results_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="a results directory (`agentx replay -o`) or a sweep directory (`agentx sweep -o`); "
            "several results directories (the shards of a `replay --shard I/N` split) are merged",
            show_default=False,
        ),
    ],
    compare_dir: Annotated[
        Path | None, typer.Option("--compare", help="a base results directory to diff against")
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            metavar="FILE",
            help="also write a self-contained HTML report here (with --compare: the comparison)",
        ),
    ] = None,
    png: Annotated[
        Path | None,
        typer.Option("--png", metavar="DIR", help="also write every chart as DIR/CHART.png"),
    ] = None,
    csv: Annotated[
        Path | None,
        typer.Option(
            "--csv",
            metavar="DIR",
            help="also write CSV: requests, summary, sessions, turns, time series (sweep: levels)",
        ),
    ] = None,
    output: MergeOutput = None,
    slo: MergeSlo = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help="print the summary (the agentx.compare/1 diff, the sweep) as JSON"
        ),
    ] = False,
    percentiles: ro.Percentiles = None,
    config: ro.Config = None,
    gpu_hour_cost: ro.GpuHourCost = None,
    capex_per_hour: ro.CapexPerHour = None,
    power_kw: ro.PowerKw = None,
    usd_per_kwh: ro.UsdPerKwh = None,
    pue: ro.Pue = None,
    hosting_per_hour: ro.HostingPerHour = None,
    gpus: ro.Gpus = 1,
    utilization: ro.Utilization = 1.0,
    price: ro.Price = None,
    price_preset: ro.PricePreset = None,
    price_file: ro.PriceFile = None,
    license_fraction: ro.LicenseFraction = 0.0,
    force: Force = False,
) -> None:
    """Re-render saved results; --compare diffs against a base run; several dirs are merged."""
    from agentx.metrics.percentiles import parse_percentiles
    from agentx.report.command import ReportOptions

    try:
        options = ReportOptions(
            results_dirs[0],
            more_dirs=tuple(results_dirs[1:]),
            base_dir=compare_dir,
            html_path=html,
            csv_dir=csv,
            png_dir=png,
            cost=ro.cost_from_flags(ctx.params),
            percentiles=None if percentiles is None else parse_percentiles(percentiles),
            output_dir=output,
            slo=slo,
            force=force,
        )
    except AgentxError as exc:
        fail(exc)
    _report(options, json_out)


@app.command()
def merge(
    results_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="results directories of the shards of one `replay --shard I/N` split",
            show_default=False,
        ),
    ],
    output: MergeOutput = None,
    slo: MergeSlo = None,
    html: Annotated[
        Path | None,
        typer.Option("--html", metavar="FILE", help="also write the merged HTML report here"),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="print the merged summary.json to stdout")
    ] = False,
    force: Force = False,
) -> None:
    """Merge the shards of a `replay --shard I/N` split exactly, from their rows (not averages)."""
    from agentx.report.command import ReportOptions

    _report(
        ReportOptions(
            results_dirs[0],
            more_dirs=tuple(results_dirs[1:]),
            html_path=html,
            output_dir=output,
            slo=slo,
            merge=True,
            force=force,
        ),
        json_out,
    )


def _report(options: ReportOptions, json_out: bool) -> None:
    from agentx.report.command import build_report

    try:
        result = build_report(options)
    except AgentxError as exc:
        fail(exc)
    for warning in result.warnings:
        err.print(f"agentx: warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if json_out:
        print_json(result.data)
    else:
        out.print(result.renderable)
    for path in result.written:
        err.print(f"agentx: wrote {path}", markup=False, highlight=False, soft_wrap=True)
    if result.slo_failed:
        raise typer.Exit(3)
