"""`agentx serve-sim`: the embedded OpenAI-compatible simulated server."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from agentx.cli.app import app, err, fail
from agentx.errors import AgentxError
from agentx.serve_sim.config import SimConfig as _SimConfig  # light: no aiohttp

_SIM = _SimConfig()  # serve-sim's documented defaults


@app.command("serve-sim")
def serve_sim(
    host: Annotated[str, typer.Option(help="address to listen on")] = _SIM.host,
    port: Annotated[int, typer.Option(help="TCP port; 0 picks a free one (printed)")] = _SIM.port,
    model: Annotated[str, typer.Option(help="served model name")] = _SIM.model,
    block_size: Annotated[
        int, typer.Option(help="prefix-cache block size, tokens")
    ] = _SIM.block_size,
    kv_tokens: Annotated[int, typer.Option(help="GPU KV-cache capacity, tokens")] = _SIM.kv_tokens,
    offload_tokens: Annotated[
        int, typer.Option(help="CPU offload tier capacity, tokens (0 = none)")
    ] = _SIM.offload_tokens,
    prefill_tps: Annotated[
        float, typer.Option(help="prefill rate, uncached tokens/s")
    ] = _SIM.prefill_tps,
    decode_tps: Annotated[
        float, typer.Option(help="decode rate of one sequence, tokens/s")
    ] = _SIM.decode_tps,
    batch_slowdown: Annotated[
        float, typer.Option(help="decode step stretch per extra running sequence")
    ] = _SIM.batch_slowdown,
    offload_load_tps: Annotated[
        float, typer.Option(help="offloaded-hit load rate, tokens/s")
    ] = _SIM.offload_load_tps,
    overhead_ms: Annotated[
        float, typer.Option(help="fixed per-request TTFT overhead, ms")
    ] = _SIM.overhead_ms,
    max_batch: Annotated[
        int, typer.Option(help="max running requests; the rest wait")
    ] = _SIM.max_batch,
    max_model_len: Annotated[
        int, typer.Option(help="max prompt + output tokens")
    ] = _SIM.max_model_len,
    eos_tokens: Annotated[
        int,
        typer.Option(help="natural answer length without ignore_eos (0 = off: exactly max_tokens)"),
    ] = _SIM.eos_tokens,
    default_max_tokens: Annotated[
        int, typer.Option(help="answer length when a request sets no max_tokens")
    ] = _SIM.default_max_tokens,
    fast: Annotated[
        bool, typer.Option("--fast", help="no modelled latency: the loopback ceiling")
    ] = False,
    seed: Annotated[int, typer.Option(help="varies filler text and ids")] = _SIM.seed,
) -> None:
    """Embedded OpenAI-compatible simulated server with a modelled prefix cache and latency."""
    from agentx.serve_sim import serve

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
        err.print(
            f"agentx serve-sim: serving {model!r} on {url} ({mode}); Ctrl-C stops",
            markup=False,
            soft_wrap=True,
        )

    try:
        serve(config.validate(), ready)
    except AgentxError as exc:
        fail(exc)
