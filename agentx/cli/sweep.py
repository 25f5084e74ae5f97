"""`agentx sweep`: one replay per concurrency level, the throughput-interactivity curve."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentx.cli import replay_options as o
from agentx.cli import report_options as ro
from agentx.cli.app import Force, app, err, fail, out, print_json
from agentx.core.errors import AgentxError


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
    from agentx.replay.options import scenario_options
    from agentx.replay.sweep import SweepOptions, parse_levels, render_table, run_sweep

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
        replay_options = scenario_options(None, **o.shared_values(ctx))
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
