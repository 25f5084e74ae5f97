"""`agentx serve-sim`: the embedded OpenAI-compatible simulated server."""

from __future__ import annotations

import dataclasses
import sys
from typing import Annotated

import typer

from agentx.cli.app import app, err, fail
from agentx.cli.declared import Given, declared_command, typer_option
from agentx.core.errors import AgentxError
from agentx.core.options import Panel, flat
from agentx.metrics.prometheus.capacity import KV_FROM
from agentx.serve_sim.config import PROFILES, Profile, SimConfig, profile_name

_SIM = flat(SimConfig())  # serve-sim's documented defaults
# what --profile agentx sets differently, said in each flag's help
_PROFILED = {
    name: f"--profile {Profile.AGENTX}: {value:,}"
    for name, value in PROFILES[Profile.AGENTX].items()
    if value != _SIM[name]
}


@app.command("serve-sim")
@declared_command(SimConfig, notes=_PROFILED)
def serve_sim(
    profile: Annotated[
        str,
        typer.Option(
            "--profile",
            metavar="|".join(Profile),
            rich_help_panel=Panel.SERVING,
            help="named defaults (agentx: sized for agent corpora, 1M-token context, 8M-token KV "
            "+ 32M offload); explicit flags win",
        ),
    ] = Profile.DEFAULT,
    kv_blocks: Annotated[
        int | None,
        typer.Option(
            "--kv-blocks",
            min=1,
            metavar="N",
            rich_help_panel=Panel.CAPACITY,
            help="GPU KV-cache capacity in blocks of --block-size (wins over --kv-tokens)",
            show_default=False,
        ),
    ] = None,
    kv_from: Annotated[str | None, typer_option(KV_FROM)] = None,
    *,
    given: Given,
) -> None:
    """Embedded OpenAI-compatible simulated server with a modelled prefix cache and latency."""
    from agentx.serve_sim import serve

    try:
        config = SimConfig.of_profile(profile_name(profile), **given.values(SimConfig))
        if kv_blocks is not None or kv_from is not None:
            e = config.engine
            kv, bs = _capacity(e.kv_tokens, kv_blocks, kv_from, e.block_size)
            config = dataclasses.replace(
                config, engine=dataclasses.replace(e, kv_tokens=kv, block_size=bs)
            )
        config.validate()
    except AgentxError as exc:
        fail(exc)

    def ready(url: str) -> None:
        sys.stdout.write(url + "\n")
        sys.stdout.flush()
        mode = "fast (no modelled latency)" if config.engine.fast else "modelled latency"
        n = config.replicas
        where = (
            f"{url} (router: {config.router}; replicas at {url}/replicas/0..{n - 1})"
            if n > 1
            else url
        )
        err.print(
            f"agentx serve-sim: serving {config.model!r} on {where} ({mode}, profile {profile}); "
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
