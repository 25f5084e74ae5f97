"""The engine-model options `agentx serve-sim` and `agentx simulate` share, and the tokenizer
option every command that counts prompt tokens takes, declared once."""

from __future__ import annotations

from typing import Annotated

import typer

from agentx.prefixcache.engine import EngineParams

ENGINE = EngineParams()  # the documented defaults (serve-sim's)

# flag help texts, one home: simulate takes these with serve-sim's defaults, serve-sim with its
# --profile's defaults (serve.py adds them to the help)
HELP = {
    "prefill_tps": "prefill rate, uncached tokens/s",
    "decode_tps": "decode rate of one sequence, tokens/s",
    "batch_slowdown": "decode step stretch per extra running sequence",
    "offload_load_tps": "offloaded-hit load rate, tokens/s",
    "overhead_ms": "fixed per-request TTFT overhead, ms",
    "max_batch": "max running requests; the rest wait",
}


def flag(field: str) -> str:
    """``prefill_tps`` -> ``--prefill-tps``."""
    return "--" + field.replace("_", "-")


PrefillTps = Annotated[float, typer.Option(flag("prefill_tps"), help=HELP["prefill_tps"])]
DecodeTps = Annotated[float, typer.Option(flag("decode_tps"), help=HELP["decode_tps"])]
BatchSlowdown = Annotated[float, typer.Option(flag("batch_slowdown"), help=HELP["batch_slowdown"])]
OffloadLoadTps = Annotated[
    float, typer.Option(flag("offload_load_tps"), help=HELP["offload_load_tps"])
]
OverheadMs = Annotated[float, typer.Option(flag("overhead_ms"), help=HELP["overhead_ms"])]
MaxBatch = Annotated[int, typer.Option(flag("max_batch"), help=HELP["max_batch"])]
Fast = Annotated[bool, typer.Option("--fast", help="no modelled latency: the loopback ceiling")]
Tokenizer = Annotated[
    str | None,
    typer.Option(
        "--tokenizer",
        help="whose tokens to count: cl100k_base (agentx's rendering), a Hugging Face tokenizer "
        "(directory or tokenizer.json; its chat template is applied as vLLM does), or server "
        "(the endpoint's /tokenize) [default: cl100k_base]",
        show_default=False,
    ),
]
KvFrom = Annotated[
    str | None,
    typer.Option(
        "--kv-from",
        help="take the KV capacity (blocks, block size) from a vLLM server: its URL (/metrics "
        "vllm:cache_config_info) or its log file ('# GPU blocks: N', 'KV cache size: N tokens')",
        show_default=False,
    ),
]
