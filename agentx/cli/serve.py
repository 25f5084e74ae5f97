"""`agentx serve-sim`: the embedded OpenAI-compatible simulated server."""

from __future__ import annotations

import dataclasses
import sys
from typing import Annotated, Any

import typer

from agentx.cli import engine_options as e
from agentx.cli.app import app, err, fail
from agentx.core.errors import AgentxError
from agentx.serve_sim.config import PROFILES
from agentx.serve_sim.config import SimConfig as _SimConfig  # light: no aiohttp

_SIM = _SimConfig()  # serve-sim's documented defaults
_AGENTX = _SimConfig.of_profile("agentx")


def _help(text: str, field: str) -> str:
    default, agentx = getattr(_SIM, field), getattr(_AGENTX, field)
    extra = f", --profile agentx: {agentx:,}" if default != agentx else ""
    return f"{text} (default {default:,}{extra})"


def _profiled(field: str, text: str | None = None) -> Any:
    """The option of a setting ``--profile`` gives a default to (None: the profile's)."""
    return typer.Option(e.flag(field), help=_help(text or e.HELP[field], field), show_default=False)


@app.command("serve-sim")
def serve_sim(
    host: Annotated[str, typer.Option(help="address to listen on")] = _SIM.host,
    port: Annotated[int, typer.Option(help="TCP port; 0 picks a free one (printed)")] = _SIM.port,
    model: Annotated[str, typer.Option(help="served model name")] = _SIM.model,
    profile: Annotated[
        str,
        typer.Option(
            help=f"named defaults: {', '.join(PROFILES)} (agentx: sized for agent corpora, "
            "1M-token context, 8M-token KV + 32M offload)"
        ),
    ] = "default",
    block_size: Annotated[
        int | None, _profiled("block_size", "prefix-cache block size, tokens")
    ] = None,
    kv_tokens: Annotated[
        int | None, _profiled("kv_tokens", "GPU KV-cache capacity, tokens")
    ] = None,
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
        int | None, _profiled("offload_tokens", "CPU offload tier capacity, tokens (0 = none)")
    ] = None,
    prefill_tps: Annotated[float | None, _profiled("prefill_tps")] = None,
    decode_tps: Annotated[float | None, _profiled("decode_tps")] = None,
    batch_slowdown: Annotated[float | None, _profiled("batch_slowdown")] = None,
    offload_load_tps: Annotated[float | None, _profiled("offload_load_tps")] = None,
    overhead_ms: Annotated[float | None, _profiled("overhead_ms")] = None,
    max_batch: Annotated[int | None, _profiled("max_batch")] = None,
    max_model_len: Annotated[
        int | None, _profiled("max_model_len", "max prompt + output tokens")
    ] = None,
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
        config = _SimConfig.of_profile(
            profile,
            host=host,
            port=port,
            model=model,
            block_size=block_size,
            kv_tokens=kv_tokens,
            offload_tokens=offload_tokens,
            prefill_tps=prefill_tps,
            decode_tps=decode_tps,
            batch_slowdown=batch_slowdown,
            offload_load_tps=offload_load_tps,
            overhead_ms=overhead_ms,
            max_batch=max_batch,
            max_model_len=max_model_len,
            eos_tokens=eos_tokens,
            default_max_tokens=default_max_tokens,
            fast=fast,
            seed=seed,
            tokenizer=tokenizer,
        )
        if kv_blocks is not None or kv_from is not None:
            kv, bs = _capacity(config.kv_tokens, kv_blocks, kv_from, config.block_size)
            config = dataclasses.replace(config, kv_tokens=kv, block_size=bs)
        config.validate()
    except AgentxError as exc:
        fail(exc)

    def ready(url: str) -> None:
        sys.stdout.write(url + "\n")
        sys.stdout.flush()
        mode = "fast (no modelled latency)" if fast else "modelled latency"
        err.print(
            f"agentx serve-sim: serving {model!r} on {url} ({mode}, profile {profile}); "
            "Ctrl-C stops",
            markup=False,
            soft_wrap=True,
        )

    try:
        serve(config, ready)
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
