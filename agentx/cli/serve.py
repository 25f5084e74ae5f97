"""`agentx serve-sim`: the embedded OpenAI-compatible simulated server."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from agentx.cli import engine_options as e
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
    kv_blocks: Annotated[
        int | None,
        typer.Option(
            "--kv-blocks",
            min=1,
            help="GPU KV-cache capacity in blocks of --block-size (wins over --kv-tokens)",
            show_default=False,
        ),
    ] = None,
    kv_from: e.KvFrom = None,
    tokenizer: e.Tokenizer = None,
    offload_tokens: Annotated[
        int, typer.Option(help="CPU offload tier capacity, tokens (0 = none)")
    ] = _SIM.offload_tokens,
    prefill_tps: e.PrefillTps = _SIM.prefill_tps,
    decode_tps: e.DecodeTps = _SIM.decode_tps,
    batch_slowdown: e.BatchSlowdown = _SIM.batch_slowdown,
    offload_load_tps: e.OffloadLoadTps = _SIM.offload_load_tps,
    overhead_ms: e.OverheadMs = _SIM.overhead_ms,
    max_batch: e.MaxBatch = _SIM.max_batch,
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
    fast: e.Fast = False,
    seed: Annotated[int, typer.Option(help="varies filler text and ids")] = _SIM.seed,
) -> None:
    """Embedded OpenAI-compatible simulated server with a modelled prefix cache and latency."""
    from agentx.serve_sim import serve

    try:
        kv_tokens, block_size = _capacity(kv_tokens, kv_blocks, kv_from, block_size)
    except AgentxError as exc:
        fail(exc)
    config = _SimConfig(
        host=host, port=port, model=model, block_size=block_size, kv_tokens=kv_tokens,
        offload_tokens=offload_tokens, prefill_tps=prefill_tps, decode_tps=decode_tps,
        batch_slowdown=batch_slowdown, offload_load_tps=offload_load_tps, overhead_ms=overhead_ms,
        max_batch=max_batch, max_model_len=max_model_len, eos_tokens=eos_tokens,
        default_max_tokens=default_max_tokens, fast=fast, seed=seed, tokenizer=tokenizer,
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


def _capacity(
    kv_tokens: int, kv_blocks: int | None, kv_from: str | None, block_size: int
) -> tuple[int, int]:
    """(KV tokens, block size) from --kv-blocks or a server's stated capacity (--kv-from)."""
    if kv_from is not None:
        from agentx.metrics.prometheus.capacity import read_kv_capacity

        kv = read_kv_capacity(kv_from)
        block_size = kv.block_size or block_size
        return kv.tokens_at(block_size), block_size
    if kv_blocks is not None:
        return kv_blocks * block_size, block_size
    return kv_tokens, block_size
