"""The engine-model options `agentx serve-sim` and `agentx simulate` share, and the tokenizer
option every command that counts prompt tokens takes, declared once."""

from __future__ import annotations

from typing import Annotated

import typer

from agentx.engine import EngineParams

ENGINE = EngineParams()  # the documented defaults (serve-sim's)

PrefillTps = Annotated[float, typer.Option("--prefill-tps", help="prefill rate, uncached tokens/s")]
DecodeTps = Annotated[
    float, typer.Option("--decode-tps", help="decode rate of one sequence, tokens/s")
]
BatchSlowdown = Annotated[
    float,
    typer.Option("--batch-slowdown", help="decode step stretch per extra running sequence"),
]
OffloadLoadTps = Annotated[
    float, typer.Option("--offload-load-tps", help="offloaded-hit load rate, tokens/s")
]
OverheadMs = Annotated[
    float, typer.Option("--overhead-ms", help="fixed per-request TTFT overhead, ms")
]
MaxBatch = Annotated[int, typer.Option("--max-batch", help="max running requests; the rest wait")]
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
