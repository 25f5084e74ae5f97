"""Trace analysis commands: stats, simulate, recover."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from agentx.cli import engine_options as e
from agentx.cli import replay_options as r
from agentx.cli.app import BUNDLED_HELP, Force, app, err, fail, out, print_json, trace_path
from agentx.core.errors import AgentxError


@app.command()
def stats(
    trace: Annotated[
        Path,
        typer.Argument(
            help="agentx Parquet trace, Weka JSON (file or dir), or Mooncake JSONL" + BUNDLED_HELP,
            callback=trace_path,
        ),
    ],
    json_out: Annotated[
        bool, typer.Option("--json", help="print the agentx.stats/1 object")
    ] = False,
    block_size: Annotated[
        int | None,
        typer.Option(
            "--block-size",
            min=1,
            help="prefix-cache block size in tokens (default 16; hash-only traces: the file's "
            "own, or a multiple of it)",
            show_default=False,
        ),
    ] = None,
    tokenizer: e.Tokenizer = None,
    endpoint: Annotated[
        str | None,
        typer.Option("--endpoint", help="the server for --tokenizer server", show_default=False),
    ] = None,
) -> None:
    """Sessions, threads, requests, token and think-time distributions, theoretical hit rate."""
    from agentx.apis.translate import to_chat
    from agentx.core.progress import progress_for
    from agentx.prefixcache.tokenizer import resolve_tokenizer
    from agentx.workload import stats as stats_mod

    try:
        tok = resolve_tokenizer(tokenizer, server_url=endpoint, to_chat=to_chat)
        with progress_for("stats", console=err) as progress:
            result = stats_mod.compute_stats(
                trace, block_size=block_size, tokenizer=tok, progress=progress
            )
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(result)
    else:
        out.print(stats_mod.render_table(result))


@app.command()
def simulate(
    trace: Annotated[
        Path,
        typer.Argument(
            help="agentx Parquet trace, Weka JSON (file or dir), or Mooncake JSONL" + BUNDLED_HELP,
            callback=trace_path,
        ),
    ],
    capacity_tokens: Annotated[
        str | None,
        typer.Option(
            "--capacity-tokens",
            help="GPU KV capacities, comma list with K/M suffixes, e.g. 64K,160K,1M [default: 1-2-5 sweep up to the trace's footprint]",
            show_default=False,
        ),
    ] = None,
    offload_tokens: Annotated[
        str | None,
        typer.Option(
            "--offload-tokens",
            help="also simulate each capacity with a CPU/DRAM offload tier of N tokens (e.g. 2M)",
            show_default=False,
        ),
    ] = None,
    block_size: Annotated[
        int | None,
        typer.Option(
            "--block-size",
            min=1,
            help="block size in tokens (default 16; hash-only traces: the file's own, or a multiple of it)",
            show_default=False,
        ),
    ] = None,
    pin: Annotated[
        bool,
        typer.Option(
            "--pin/--no-pin",
            help="a running request's blocks (start to start+e2e) cannot be evicted",
        ),
    ] = True,
    reserve_output: Annotated[
        bool,
        typer.Option(
            "--reserve-output/--no-reserve-output",
            help="a running request also holds its output's KV blocks",
        ),
    ] = True,
    offload_policy: Annotated[
        str,
        typer.Option(
            "--offload-policy",
            help="inclusive (write-through, as vLLM's offloading connector, LMCache) or exclusive (DRAM holds only what the GPU does not)",
        ),
    ] = "inclusive",
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            help="--timeline recorded: stack (one pass, every capacity) or kvcache (serve-sim's KVCache, one replay per capacity; slow)",
        ),
    ] = "stack",
    timeline: Annotated[
        str,
        typer.Option(
            "--timeline",
            help="replay (the engine model on replay's schedule: lanes, think time, warm-up) or recorded (the trace's own start times; stack-distance curves)",
        ),
    ] = "replay",
    run_all: Annotated[
        bool,
        typer.Option(
            "--run-all",
            help="--timeline replay: run every capacity, also those above one that already behaved as an unbounded cache (their points are derived otherwise; a cross-check)",
        ),
    ] = False,
    kv_blocks: Annotated[
        str | None,
        typer.Option(
            "--kv-blocks",
            help="GPU KV capacities in the server's blocks of --block-size tokens, comma list (e.g. 96,128,192)",
            show_default=False,
        ),
    ] = None,
    kv_from: e.KvFrom = None,
    tokenizer: e.Tokenizer = None,
    endpoint: Annotated[
        str | None,
        typer.Option("--endpoint", help="the server for --tokenizer server", show_default=False),
    ] = None,
    from_results: Annotated[
        Path | None,
        typer.Option(
            "--from-results",
            help="a replay's results directory: simulate its requests at their recorded send times (built with that run's --api, --salt, --sessions, --seed, --extra-body)",
            show_default=False,
        ),
    ] = None,
    concurrency: r.Concurrency = 1,
    duration: r.Duration = None,
    max_requests: r.MaxRequests = None,
    sessions: r.Sessions = None,
    time_scale: r.TimeScale = 1.0,
    max_think: r.MaxThink = None,
    salt: r.Salt = None,
    warmup: r.Warmup = None,
    scenario: r.Scenario = None,
    start_ratio: r.StartRatio = None,
    burst: r.Burst = False,
    spawn_join: r.SpawnJoin = None,
    trace_idle_cap: r.TraceIdleCap = None,
    system_idle_cap: r.SystemIdleCap = None,
    api: r.Api = "chat",
    extra_body: r.ExtraBody = None,
    seed: r.Seed = None,
    prefill_tps: e.PrefillTps = e.ENGINE.prefill_tps,
    decode_tps: e.DecodeTps = e.ENGINE.decode_tps,
    batch_slowdown: e.BatchSlowdown = e.ENGINE.batch_slowdown,
    offload_load_tps: e.OffloadLoadTps = e.ENGINE.offload_load_tps,
    overhead_ms: e.OverheadMs = e.ENGINE.overhead_ms,
    max_batch: e.MaxBatch = e.ENGINE.max_batch,
    fast: e.Fast = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="print the agentx.simulate/1 object")
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot", help="write hit rate vs capacity as an SVG file", show_default=False
        ),
    ] = None,
    force: Force = False,
) -> None:
    """Offline KV-cache simulator: prefix-cache hit rate vs cache capacity, GPU-only vs GPU+DRAM."""
    from agentx import simulate as so
    from agentx.core.progress import progress_for
    from agentx.prefixcache.engine import EngineParams
    from agentx.replay.options import parse_extra_body, parse_ratio
    from agentx.workload.rules import ScheduleRules
    from agentx.workload.scenario import scenario_values

    try:
        if plot is not None:
            so.check_plot(plot, force=force)
        given = scenario_values(
            scenario,
            concurrency=concurrency,
            time_scale=time_scale,
            max_think_s=max_think,
            warmup=warmup,
            max_requests=max_requests,
            duration_s=duration,
            start_ratio=parse_ratio(start_ratio) if start_ratio else None,
            burst=burst or None,
            spawn_join=spawn_join,
            trace_idle_cap_s=trace_idle_cap,
            system_idle_cap_s=system_idle_cap,
            seed=seed,
            salt=salt,
        )
        rules = ScheduleRules.of(given)
        params = EngineParams(
            prefill_tps=prefill_tps,
            decode_tps=decode_tps,
            batch_slowdown=batch_slowdown,
            offload_load_tps=offload_load_tps,
            overhead_ms=overhead_ms,
            max_batch=max_batch,
            fast=fast,
        )
        options = so.SimulateOptions(
            trace=trace,
            block_size=block_size,
            pin=pin,
            reserve_output=reserve_output,
            capacities_tokens=so.parse_token_list(capacity_tokens) if capacity_tokens else None,
            offload_tokens=so.parse_tokens(offload_tokens, "--offload-tokens")
            if offload_tokens
            else None,
            offload_policy=offload_policy,  # type: ignore[arg-type]  # validated by the options
            engine=engine,  # type: ignore[arg-type]
            timeline=timeline,  # type: ignore[arg-type]
            derive_unbounded=not run_all,
            schedule=rules,
            sessions=sessions,
            seed=given.get("seed") or 0,
            salt=given.get("salt") is not False,
            api=api,
            extra_body=parse_extra_body(extra_body),
            tokenizer=tokenizer,
            server_url=endpoint,
            engine_params=params,
            kv_from=kv_from,
            from_results=from_results,
            kv_blocks=so.parse_count_list(kv_blocks, "--kv-blocks") if kv_blocks else None,
        )
        with progress_for("simulate", console=err) as progress:
            result = so.run_simulate(options, progress=progress)
        if plot is not None:
            so.write_plot(result, plot, force=force)
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(result.data)
    else:
        out.print(so.render_table(result))
    if plot is not None:
        err.print(f"agentx: wrote {plot}", markup=False, highlight=False, soft_wrap=True)


@app.command()
def recover(
    trace: Annotated[Path, typer.Argument(help="agentx Parquet trace whose writer died")],
) -> None:
    """Rebuild a trace from the write-ahead spool its writer left when it was killed."""
    from agentx import store
    from agentx.core.progress import progress_for
    from agentx.store.reader import recover_report

    try:
        with progress_for("recover", console=err) as progress:
            report = recover_report(trace, progress=progress)
        if report is None:
            store.open_trace(trace)  # nothing to do: say so only if the trace itself is sound
    except AgentxError as exc:
        fail(exc)
    if report is None:
        out.print(f"{trace}: nothing to recover (no spool)", markup=False, soft_wrap=True)
        return
    out.print(f"{trace}: recovered {report.rows} exchanges", markup=False, soft_wrap=True)
    if report.kept_spool is not None:
        lines = "line" if report.damaged == 1 else "lines"
        extend = "exchange" if report.orphaned == 1 else "exchanges"
        err.print(
            f"agentx: warning: skipped {report.damaged} damaged spool {lines} and "
            f"{report.orphaned} {extend} that extend them; the spool is kept as "
            f"{report.kept_spool}",
            markup=False,
            soft_wrap=True,
        )


@app.command("example-path")
def example_path(
    name: Annotated[
        str, typer.Argument(help="example (the bundled agentx trace) or weka (Weka JSON samples)")
    ] = "example",
    list_all: Annotated[
        bool, typer.Option("--list", help="list every bundled example: name, path, what it is")
    ] = False,
) -> None:
    """Print where a bundled example is. Trace arguments also take its name: `agentx stats example`."""
    from agentx.core import examples

    if list_all:
        for ex in examples.EXAMPLES.values():
            sys.stdout.write(f"{ex.name}\t{ex.path}\t{ex.description}\n")  # tab-separated
        return
    try:
        path = examples.example_path(name)
    except AgentxError as exc:
        fail(exc)
    sys.stdout.write(f"{path}\n")
