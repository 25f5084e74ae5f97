"""The command line: parse, call one library function, render. Nothing else lives here.

Every ``AgentxError`` becomes one line on stderr and its exit code; no traceback, no locals.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

from agentx.errors import AgentxError

app = typer.Typer(
    name="agentx",
    help="Capture coding-agent LLM traffic and replay it as load against inference servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def fail(exc: AgentxError) -> NoReturn:
    err.print(f"agentx: error: {exc}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(exc.exit_code)


def print_json(data: object) -> None:
    import orjson

    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


@app.command()
def stats(
    trace: Annotated[Path, typer.Argument(help="agentx Parquet trace, Weka JSON (file or dir), or Mooncake JSONL")],
    json_out: Annotated[bool, typer.Option("--json", help="print the agentx.stats/1 object")] = False,
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
) -> None:
    """Sessions, threads, requests, token and think-time distributions, theoretical hit rate."""
    from agentx import stats as stats_mod

    try:
        result = stats_mod.compute_stats(trace, block_size=block_size)
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
        typer.Argument(help="agentx Parquet trace, Weka JSON (file or dir), or Mooncake JSONL"),
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
            help="stack (one pass, every capacity) or kvcache (serve-sim's KVCache, one replay per capacity; slow)",
        ),
    ] = "stack",
    json_out: Annotated[
        bool, typer.Option("--json", help="print the agentx.simulate/1 object")
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot", help="write hit rate vs capacity as an SVG file", show_default=False
        ),
    ] = None,
) -> None:
    """Offline KV-cache simulator: prefix-cache hit rate vs cache capacity, GPU-only vs GPU+DRAM."""
    from agentx import sim_offline as so

    try:
        options = so.SimulateOptions(
            trace=trace, block_size=block_size, pin=pin, reserve_output=reserve_output,
            capacities_tokens=so.parse_token_list(capacity_tokens) if capacity_tokens else None,
            offload_tokens=so.parse_tokens(offload_tokens, "--offload-tokens") if offload_tokens else None,
            offload_policy=offload_policy,  # type: ignore[arg-type]  # validated by the options
            engine=engine,  # type: ignore[arg-type]
        )  # fmt: skip
        result = so.run_simulate(options)
        if plot is not None:
            so.write_plot(result, plot)
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

    try:
        n = store.recover(trace)
        if n is None:
            store.open_trace(trace)  # nothing to do: say so only if the trace itself is sound
    except AgentxError as exc:
        fail(exc)
    if n is None:
        out.print(f"{trace}: nothing to recover (no spool)", markup=False, soft_wrap=True)
    else:
        out.print(f"{trace}: recovered {n} exchanges", markup=False, soft_wrap=True)


from agentx.sim.config import SimConfig as _SimConfig  # noqa: E402  (light: no aiohttp)

_SIM = _SimConfig()  # serve-sim's documented defaults


@app.command("serve-sim")
def serve_sim(
    host: Annotated[str, typer.Option(help="address to listen on")] = _SIM.host,
    port: Annotated[int, typer.Option(help="TCP port; 0 picks a free one (printed)")] = _SIM.port,
    model: Annotated[str, typer.Option(help="served model name")] = _SIM.model,
    block_size: Annotated[int, typer.Option(help="prefix-cache block size, tokens")] = _SIM.block_size,
    kv_tokens: Annotated[int, typer.Option(help="GPU KV-cache capacity, tokens")] = _SIM.kv_tokens,
    offload_tokens: Annotated[int, typer.Option(help="CPU offload tier capacity, tokens (0 = none)")] = _SIM.offload_tokens,
    prefill_tps: Annotated[float, typer.Option(help="prefill rate, uncached tokens/s")] = _SIM.prefill_tps,
    decode_tps: Annotated[float, typer.Option(help="decode rate of one sequence, tokens/s")] = _SIM.decode_tps,
    batch_slowdown: Annotated[float, typer.Option(help="decode step stretch per extra running sequence")] = _SIM.batch_slowdown,
    offload_load_tps: Annotated[float, typer.Option(help="offloaded-hit load rate, tokens/s")] = _SIM.offload_load_tps,
    overhead_ms: Annotated[float, typer.Option(help="fixed per-request TTFT overhead, ms")] = _SIM.overhead_ms,
    max_batch: Annotated[int, typer.Option(help="max running requests; the rest wait")] = _SIM.max_batch,
    max_model_len: Annotated[int, typer.Option(help="max prompt + output tokens")] = _SIM.max_model_len,
    eos_tokens: Annotated[int, typer.Option(help="natural answer length without ignore_eos (0 = off: exactly max_tokens)")] = _SIM.eos_tokens,
    default_max_tokens: Annotated[int, typer.Option(help="answer length when a request sets no max_tokens")] = _SIM.default_max_tokens,
    fast: Annotated[bool, typer.Option("--fast", help="no modelled latency: the loopback ceiling")] = False,
    seed: Annotated[int, typer.Option(help="varies filler text and ids")] = _SIM.seed,
) -> None:
    """Embedded OpenAI-compatible simulated server with a prefix cache (docs/serve-sim.md)."""
    from agentx.sim import serve

    config = _SimConfig(
        host=host, port=port, model=model, block_size=block_size, kv_tokens=kv_tokens,
        offload_tokens=offload_tokens, prefill_tps=prefill_tps, decode_tps=decode_tps,
        batch_slowdown=batch_slowdown, offload_load_tps=offload_load_tps, overhead_ms=overhead_ms,
        max_batch=max_batch, max_model_len=max_model_len, eos_tokens=eos_tokens,
        default_max_tokens=default_max_tokens, fast=fast, seed=seed,
    )  # fmt: skip

    def ready(url: str) -> None:
        sys.stdout.write(url + "\n")
        sys.stdout.flush()
        mode = "fast (no modelled latency)" if fast else "modelled latency"
        err.print(f"agentx serve-sim: serving {model!r} on {url} ({mode}); Ctrl-C stops", markup=False, soft_wrap=True)

    try:
        serve(config.validate(), ready)
    except AgentxError as exc:
        fail(exc)


@app.command()
def capture(
    out_path: Annotated[
        Path | None, typer.Option("--out", "-o", help="trace file to write (Parquet)")
    ] = None,
    command: Annotated[
        list[str] | None, typer.Argument(help="after --: the agent to launch", show_default=False)
    ] = None,
    upstream: Annotated[
        str | None,
        typer.Option(
            "--upstream", help="reverse mode: anthropic, openai or a URL [default: anthropic]"
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            min=0,
            max=65535,
            help="listen port [default: 8780; a free one with a command]",
        ),
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            help="reverse (agent talks plain HTTP to agentx) or forward (HTTPS proxy + agentx CA)",
        ),
    ] = "reverse",
    listen_host: Annotated[
        str, typer.Option("--listen-host", help="address to listen on")
    ] = "127.0.0.1",
    keep_non_model: Annotated[
        bool,
        typer.Option(
            "--keep-non-model/--drop-non-model",
            help="keep count_tokens, model lists, telemetry as flagged rows",
        ),
    ] = True,
    identity: Annotated[
        bool,
        typer.Option("--identity/--no-identity", help="ask upstreams for uncompressed responses"),
    ] = True,
    status: Annotated[
        bool | None,
        typer.Option(
            "--status/--no-status",
            help="live status line [default: on a terminal]",
            show_default=False,
        ),
    ] = None,
    confdir: Annotated[
        Path | None,
        typer.Option(
            "--confdir", help="agentx's mitmproxy dir (CA) [default: ~/.config/agentx/mitmproxy]"
        ),
    ] = None,
    upstream_insecure: Annotated[
        bool,
        typer.Option("--upstream-insecure", help="do not verify the upstream's TLS certificate"),
    ] = False,
    print_addon_path: Annotated[
        bool, typer.Option("--print-addon-path", help="print the file for `mitmdump -s` and exit")
    ] = False,
) -> None:
    """mitmproxy in front of a coding agent; writes a trace. `agentx capture -o t.parquet -- claude`"""
    from agentx.capture import ADDON_PATH

    if print_addon_path:
        sys.stdout.write(f"{ADDON_PATH}\n")
        return
    from agentx.capture.runner import CaptureConfig, run_capture
    from agentx.errors import UsageError

    try:
        if out_path is None:
            raise UsageError("capture needs --out TRACE")
        result = run_capture(
            CaptureConfig(
                out=out_path,
                mode=mode,  # type: ignore[arg-type]  # checked by run_capture
                upstream=upstream,
                port=port,
                listen_host=listen_host,
                command=tuple(command or ()),
                keep_non_model=keep_non_model,
                identity=identity,
                confdir=confdir,
                upstream_insecure=upstream_insecure,
                status=status,
            ),
            console=err,
        )
    except AgentxError as exc:
        fail(exc)
    if result.exit_code:
        raise typer.Exit(result.exit_code)


@app.command()
def replay(
    trace: Annotated[
        Path,
        typer.Argument(
            help="trace to replay: agentx Parquet, Weka JSON (file or dir) or Mooncake JSONL"
        ),
    ],
    endpoint: Annotated[
        str,
        typer.Option("--endpoint", help="server base URL, e.g. http://127.0.0.1:8000 or .../v1"),
    ],
    model: Annotated[
        str | None, typer.Option("--model", help="model name [default: the endpoint's first model]")
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="concurrent session lanes (recycled)")
    ] = 1,
    duration: Annotated[
        float | None,
        typer.Option("--duration", help="stop new requests after SECONDS, drain in-flight ones"),
    ] = None,
    max_requests: Annotated[
        int | None, typer.Option("--max-requests", min=1, help="stop after N measured requests")
    ] = None,
    sessions: Annotated[
        int | None,
        typer.Option("--sessions", min=1, help="sample N sessions of the trace (with --seed)"),
    ] = None,
    time_scale: Annotated[
        float,
        typer.Option(
            "--time-scale", min=0.0, help="multiply recorded think time (0 = back to back)"
        ),
    ] = 1.0,
    max_think: Annotated[
        float | None, typer.Option("--max-think", min=0.0, help="cap one think time, SECONDS")
    ] = None,
    assistant: Annotated[
        str,
        typer.Option(
            "--assistant",
            help="recorded (captured assistant turns) or live (the server's own replies)",
        ),
    ] = "recorded",
    salt: Annotated[
        bool,
        typer.Option(
            "--salt/--no-salt", help="per-session cache-bust marker in the first user message"
        ),
    ] = True,
    warmup: Annotated[
        int,
        typer.Option("--warmup", min=0, help="requests per lane sent first, excluded from metrics"),
    ] = 0,
    api: Annotated[
        str,
        typer.Option(
            "--api",
            help="chat (convert to OpenAI chat), messages (Anthropic /v1/messages) or native",
        ),
    ] = "chat",
    extra_body: Annotated[
        str | None, typer.Option("--extra-body", help="JSON object merged into every request body")
    ] = None,
    ignore_eos: Annotated[
        bool | None,
        typer.Option(
            "--ignore-eos/--no-ignore-eos",
            help="pin output lengths with ignore_eos/min_tokens [default: on for vLLM, SGLang, serve-sim]",
            show_default=False,
        ),
    ] = None,
    metrics_url: Annotated[
        str | None,
        typer.Option(
            "--metrics-url", help="Prometheus URL [default: <endpoint>/metrics when it answers]"
        ),
    ] = None,
    no_metrics: Annotated[
        bool, typer.Option("--no-metrics", help="do not scrape the server's Prometheus metrics")
    ] = False,
    slo: Annotated[
        str | None,
        typer.Option(
            "--slo", help='checks, e.g. "ttft_p99<=2s,itl_p50<=50ms" (exit 3 when one fails)'
        ),
    ] = None,
    workers: Annotated[
        int, typer.Option("--workers", min=1, help="client processes sharing the lanes")
    ] = 1,
    shard: Annotated[
        str, typer.Option("--shard", help="I/N: run only sessions i mod N == I (multi-machine)")
    ] = "0/1",
    seed: Annotated[int, typer.Option("--seed", help="seed of --sessions sampling")] = 0,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.001, help="per-request timeout, SECONDS")
    ] = 600.0,
    block_size: Annotated[
        int | None,
        typer.Option(
            "--block-size",
            min=1,
            help="block size of the theoretical hit rate [default: the server's, else 16]",
            show_default=False,
        ),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            help="API key [default: $OPENAI_API_KEY]; never printed or written",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="results directory [default: results/replay-<time>]",
            show_default=False,
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="print summary.json to stdout (no live display)")
    ] = False,
) -> None:
    """Replay a trace as load against an OpenAI-compatible server; measure cache, TTFT, ITL, tokens/s."""
    from agentx.replay import ReplayOptions, run_replay
    from agentx.replay.options import parse_extra_body, parse_shard

    try:
        options = ReplayOptions(
            trace=trace, endpoint=endpoint, model=model, concurrency=concurrency, duration_s=duration,
            max_requests=max_requests, sessions=sessions, time_scale=time_scale, max_think_s=max_think,
            assistant=assistant,  # type: ignore[arg-type]  # validated by ReplayOptions
            salt=salt, warmup=warmup,
            api=api,  # type: ignore[arg-type]
            extra_body=parse_extra_body(extra_body), ignore_eos=ignore_eos, metrics_url=metrics_url,
            scrape_metrics=not no_metrics, slo=slo, workers=workers, shard=parse_shard(shard), seed=seed,
            timeout_s=timeout, block_size=block_size, api_key=api_key, output_dir=output,
            progress=not json_out and err.is_terminal,
        )  # fmt: skip
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
    if result.interrupted:
        raise typer.Exit(130)
    if result.summary.get("slo", {}).get("passed") is False:
        raise typer.Exit(3)


@app.command()
def sweep(
    trace: Annotated[Path, typer.Argument(help="trace to replay at each level (agentx Parquet)")],
    endpoint: Annotated[
        str,
        typer.Option("--endpoint", help="server base URL, e.g. http://127.0.0.1:8000 or .../v1"),
    ],
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
    model: Annotated[
        str | None, typer.Option("--model", help="model name [default: the endpoint's first model]")
    ] = None,
    duration: Annotated[
        float | None,
        typer.Option(
            "--duration", help="per level: stop new requests after SECONDS, drain in-flight ones"
        ),
    ] = None,
    max_requests: Annotated[
        int | None,
        typer.Option("--max-requests", min=1, help="per level: stop after N measured requests"),
    ] = None,
    sessions: Annotated[
        int | None,
        typer.Option("--sessions", min=1, help="sample N sessions of the trace (with --seed)"),
    ] = None,
    time_scale: Annotated[
        float,
        typer.Option(
            "--time-scale", min=0.0, help="multiply recorded think time (0 = back to back)"
        ),
    ] = 1.0,
    max_think: Annotated[
        float | None, typer.Option("--max-think", min=0.0, help="cap one think time, SECONDS")
    ] = None,
    assistant: Annotated[str, typer.Option("--assistant", help="recorded or live")] = "recorded",
    salt: Annotated[
        bool,
        typer.Option(
            "--salt/--no-salt", help="per-session cache-bust marker in the first user message"
        ),
    ] = True,
    warmup: Annotated[
        int,
        typer.Option(
            "--warmup", min=0, help="per level: requests per lane sent first, excluded from metrics"
        ),
    ] = 0,
    api: Annotated[str, typer.Option("--api", help="chat, messages or native")] = "chat",
    extra_body: Annotated[
        str | None, typer.Option("--extra-body", help="JSON object merged into every request body")
    ] = None,
    ignore_eos: Annotated[
        bool | None,
        typer.Option(
            "--ignore-eos/--no-ignore-eos",
            help="pin output lengths [default: on for vLLM, SGLang, serve-sim]",
            show_default=False,
        ),
    ] = None,
    no_metrics: Annotated[
        bool, typer.Option("--no-metrics", help="do not scrape the server's Prometheus metrics")
    ] = False,
    seed: Annotated[int, typer.Option("--seed", help="seed of --sessions sampling")] = 0,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.001, help="per-request timeout, SECONDS")
    ] = 600.0,
    block_size: Annotated[
        int | None,
        typer.Option(
            "--block-size",
            min=1,
            help="block size of the theoretical hit rate [default: the server's, else 16]",
            show_default=False,
        ),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            help="API key [default: $OPENAI_API_KEY]; never printed or written",
            show_default=False,
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print sweep.json to stdout")] = False,
) -> None:
    """One replay per concurrency level; the throughput-interactivity curve (docs/replay.md#sweeps)."""
    from agentx.replay import ReplayOptions
    from agentx.replay.options import parse_extra_body
    from agentx.sweep import SweepOptions, parse_levels, render_table, run_sweep

    def level_done(point: dict[str, object]) -> None:
        if not json_out:
            err.print(
                f"agentx: concurrency {point['concurrency']} done -> {output / str(point['results_dir'])}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )

    try:
        replay_options = ReplayOptions(
            trace=trace, endpoint=endpoint, model=model, duration_s=duration, max_requests=max_requests,
            sessions=sessions, time_scale=time_scale, max_think_s=max_think,
            assistant=assistant,  # type: ignore[arg-type]  # validated by ReplayOptions
            salt=salt, warmup=warmup,
            api=api,  # type: ignore[arg-type]
            extra_body=parse_extra_body(extra_body), ignore_eos=ignore_eos, scrape_metrics=not no_metrics,
            seed=seed, timeout_s=timeout, block_size=block_size, api_key=api_key,
            progress=not json_out and err.is_terminal,
        )  # fmt: skip
        result = run_sweep(
            SweepOptions(replay_options, parse_levels(concurrency), output), level_done
        )
    except AgentxError as exc:
        fail(exc)
    for warning in result.warnings:
        err.print(f"agentx: warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if json_out:
        print_json(result.data)
    else:
        out.print(render_table(result.data))
        err.print(
            f"agentx: sweep in {output} (sweep.json, sweep.svg)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if result.interrupted:
        raise typer.Exit(130)


@app.command()
def report(
    results_dir: Annotated[Path, typer.Argument(help="a results directory written by `agentx replay -o`")],
    compare_dir: Annotated[Path | None, typer.Option("--compare", help="a base results directory to diff against")] = None,
    html: Annotated[Path | None, typer.Option("--html", help="also write a self-contained HTML report here")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the summary (or the agentx.compare/1 diff) as JSON")] = False,
) -> None:
    """Re-render saved results; with --compare, the deltas and ratios against a base run."""
    from agentx.report.command import build_report

    try:
        result = build_report(results_dir, compare_dir, html)
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(result.data)
    else:
        out.print(result.renderable)
    if html is not None:
        err.print(f"agentx: wrote {html}", markup=False, highlight=False)


@app.command()
def scrub(
    trace: Annotated[Path, typer.Argument(help="agentx trace to clean (never modified)")],
    output: Annotated[Path, typer.Option("-o", "--output", help="the clean trace to write")],
    report_file: Annotated[
        Path | None, typer.Option("--report", help="also write the report as JSON")
    ] = None,
    max_context: Annotated[
        int | None,
        typer.Option("--max-context", min=1, help="drop requests over this many prompt tokens"),
    ] = None,
    keep_side_calls: Annotated[
        bool,
        typer.Option(
            "--keep-side-calls/--drop-side-calls",
            help="keep title/probe side calls, flagged side_call",
        ),
    ] = False,
    keep_non_model: Annotated[
        bool,
        typer.Option(
            "--keep-non-model/--drop-non-model",
            help="keep count_tokens/models/telemetry rows, flagged non_model",
        ),
    ] = False,
    redact_emails: Annotated[
        bool, typer.Option("--redact-emails", help="also replace e-mail addresses")
    ] = False,
    block_size: Annotated[
        int, typer.Option("--block-size", min=1, help="block size of the hit rate in the report")
    ] = 16,
    hit_rate: Annotated[
        bool,
        typer.Option(
            "--hit-rate/--no-hit-rate", help="measure the theoretical hit rate before and after"
        ),
    ] = True,
    json_out: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Drop malformed exchanges, repair orphaned tool calls, redact secrets; say what and why."""
    from agentx.scrub import ScrubOptions, render_report, scrub_trace

    options = ScrubOptions(max_context=max_context, keep_side_calls=keep_side_calls, keep_non_model=keep_non_model,
                           redact_emails=redact_emails, block_size=block_size, hit_rate=hit_rate)  # fmt: skip
    try:
        result = scrub_trace(trace, output, options)
        if report_file is not None:
            _write_json_file(report_file, result.to_json())
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(result.to_json())
    else:
        out.print(render_report(result))


@app.command()
def anonymize(
    trace: Annotated[Path, typer.Argument(help="agentx trace (never modified)")],
    output: Annotated[Path, typer.Option("-o", "--output", help="the shareable trace to write")],
    keep_tools: Annotated[
        bool, typer.Option("--keep-tools", help="keep tool schemas as they are")
    ] = False,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            envvar="AGENTX_ANONYMIZE_KEY",
            help="secret that makes the output reproducible (default: random, never stored)",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
) -> None:
    """Shareable trace: no original text, same token counts and prefix-sharing structure."""
    from agentx.scrub.anonymize import AnonymizeOptions, anonymize_trace

    options = AnonymizeOptions(key=key.encode() if key is not None else None, keep_tools=keep_tools)
    try:
        result = anonymize_trace(trace, output, options)
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(result.to_json())
    else:
        inexact = f", {result.inexact_segments} not token-exact" if result.inexact_segments else ""
        out.print(f"anonymized {result.exchanges} exchanges ({result.segments} distinct segments, "
                  f"{result.leaves} texts{inexact}) -> {result.output}", markup=False)  # fmt: skip


@app.command()
def convert(
    input_path: Annotated[
        Path,
        typer.Argument(
            metavar="IN", help="agentx trace, Weka JSON (file or dir), or Mooncake JSONL"
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "-o",
            "--output",
            help="file (agentx, mooncake; weka with one session) or directory (weka)",
        ),
    ],
    to: Annotated[str, typer.Option("--to", help="agentx | mooncake | weka")] = "agentx",
    skip_bad: Annotated[
        bool,
        typer.Option(
            "--skip-bad", help="skip bad records (Mooncake lines, Weka files) and count them"
        ),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
) -> None:
    """Import (format auto-detected) and export: agentx, Mooncake JSONL, Weka JSON."""
    from agentx.scrub.convert import convert as run_convert

    try:
        result = run_convert(input_path, output, to=to, skip_bad=skip_bad)
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(result.to_json())
        return
    unit = {"agentx": "exchanges", "mooncake": "lines", "weka": "sessions"}[result.output_format]
    out.print(f"{result.input} ({result.input_format}) -> {result.output} ({result.output_format}): "
              f"{result.written} {unit}", markup=False)  # fmt: skip
    if result.synthesized:
        out.print(f"synthetic text for {result.synthesized} hash-only exchanges", markup=False)
    if result.skipped_bad:
        err.print(
            f"skipped {result.skipped_bad} bad records; first: {result.first_bad}", markup=False
        )


@app.command()
def demo(
    workdir: Annotated[
        Path, typer.Option("--workdir", help="where the capture, clean trace and results go")
    ] = Path("results/demo"),
    sessions: Annotated[int, typer.Option("--sessions", min=1, help="scripted agent sessions")] = 2,
    turns: Annotated[int, typer.Option("--turns", min=1, help="model calls per agent session")] = 6,
    json_out: Annotated[bool, typer.Option("--json", help="print the replay summaries")] = False,
) -> None:
    """Capture a scripted agent session, scrub it, replay it against serve-sim, print the report."""
    from agentx.demo.run import run_demo
    from agentx.report.render import render_summary
    from agentx.scrub.report import render_report

    try:
        result = run_demo(
            workdir,
            agent_sessions=sessions,
            agent_turns=turns,
            say=(lambda msg: err.print(msg, markup=False)),
        )
    except AgentxError as exc:
        fail(exc)
    if json_out:
        print_json(result.replays)
        return
    out.print(render_report(result.scrub))
    for name, summary in result.replays.items():
        out.rule(f"replay of the {name} trace")
        out.print(render_summary(summary))
    out.print(f"results under {result.output_dir}/ (agentx report {result.output_dir}/replay-capture)")


def _write_json_file(path: Path, data: object) -> None:
    import orjson

    from agentx.errors import TraceError

    try:
        path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    except OSError as exc:
        raise TraceError(f"cannot write {path}: {exc.strerror or exc}") from None


def main() -> None:
    try:
        app()
    except AgentxError as exc:  # raised outside a command's own handler
        err.print(f"agentx: error: {exc}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err.print("agentx: interrupted")
        sys.exit(130)
