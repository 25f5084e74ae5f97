"""`agentx replay`: a trace as load against an OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentx.cli import replay_options as o
from agentx.cli import report_options as ro
from agentx.cli.app import Force, app, err, fail, out, print_json
from agentx.cli.engine_options import Tokenizer
from agentx.core.errors import AgentxError

if TYPE_CHECKING:
    from agentx.replay.options import ReplayOptions


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
    from agentx.replay import run_replay
    from agentx.replay.options import describe

    try:
        options = _options(ctx)
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


def _options(ctx: typer.Context) -> ReplayOptions:
    """``ReplayOptions`` from replay's flags (``ctx.params``): the preset of ``--scenario``, the
    flags replay shares with sweep, and its own (the schedule, shards, outputs)."""
    from agentx.replay.options import parse_ratio, parse_shard, parse_start_at, scenario_options

    flags = ctx.params
    open_loop = flags["session_rate"] is not None or flags["request_rate"] is not None
    start_ratio, start_at = flags["start_ratio"], flags["start_at"]
    return scenario_options(
        flags["scenario"],
        **o.shared_values(ctx),
        concurrency=o.concurrency_or_default(flags["concurrency"], open_loop),
        session_rate=flags["session_rate"],
        request_rate=flags["request_rate"],
        arrival=flags["arrival"],
        burstiness=flags["burstiness"],
        start_ratio=parse_ratio(start_ratio) if start_ratio else None,
        burst=flags["burst"],
        spawn_join=flags["spawn_join"],
        trace_idle_cap_s=flags["trace_idle_cap"],
        system_idle_cap_s=flags["system_idle_cap"],
        max_failed_ratio=flags["max_failed_ratio"],
        min_coverage=flags["min_coverage"],
        metrics_url=flags["metrics_url"],
        slo=flags["slo"],
        workers=o.parse_workers(flags["workers"]),
        shard=parse_shard(flags["shard"]),
        start_at_s=parse_start_at(start_at) if start_at else None,
        tokenizer=flags["tokenizer"],
        output_dir=flags["output"],
        force=flags["force"],
    )
