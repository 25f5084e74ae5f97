"""serve-sim's configuration: every knob of the simulated replica, with documented defaults.

The defaults describe **one H100-80GB serving a ~32B dense model in FP8 weights with BF16 KV**
(e.g. Qwen3-32B-FP8 under vLLM): ~32 GB of weights leave ~40 GB of KV cache at ~256 KiB per
token (64 layers x 8 KV heads x 128 dims x K,V x 2 bytes), i.e. ~160K tokens; prefill runs at
~8K tokens/s (64 GFLOP/token at ~50% of ~1 PFLOP/s dense FP8); a lone sequence decodes at
~60 tokens/s (32 GB of weights read per step at ~2 TB/s effective), and each extra sequence in
the batch stretches the step by ~1.5%; a CPU offload tier loads KV over PCIe 5 at ~25 GB/s,
~100K tokens/s. docs/serve-sim.md explains the model these numbers drive.

``--profile agentx`` (:data:`PROFILES`) sizes the engine for agent corpora instead: prompts of
~100K tokens (p50) up to ~950K, dozens of sessions in flight, 90-98 % of every prompt repeated.
It describes **one 8-GPU node (8x B200-180GB) serving a DeepSeek-V3-class MoE model** (FP8,
MLA: ~70 KB of KV per token, 64-token blocks as FlashMLA uses): ~1.4 TB of HBM minus ~0.7 TB of
weights and activations leaves room for ~8M tokens of KV, a CPU DRAM tier (~2.3 TB) holds ~32M
more and loads them over 8 PCIe 5 links at ~1M tokens/s; a 1M-token context; prefill at ~60K
tokens/s (37B active parameters, long-context attention); ~80 tokens/s per sequence decode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agentx.core.errors import UsageError
from agentx.core.options import Panel, build, group, option, parse_tokens
from agentx.prefixcache.engine import EngineParams
from agentx.prefixcache.tokenizer import TOKENIZER
from agentx.routing import DEFAULT_ROUTE, REPLICAS, ROUTER, Route

DEFAULT_MODEL = "agentx-sim"


class Profile(StrEnum):
    """``--profile``: a named set of defaults (:data:`PROFILES`)."""

    DEFAULT = "default"
    AGENTX = "agentx"


def profile_name(value: object) -> Profile:
    try:
        return Profile(str(value))
    except ValueError:
        raise UsageError(f"--profile must be one of {', '.join(Profile)}, not {value!r}") from None


@dataclass(frozen=True, slots=True)
class SimConfig:
    """Settings of one simulated server: the engine's (:class:`EngineParams`, its defaults)
    and the server's own. :meth:`of` builds one from flat values (``kv_tokens=4096``)."""

    host: str = option(
        "127.0.0.1",
        "--host",
        hidden=("--listen-host",),  # capture's old spelling: one name for both
        metavar="HOST",
        panel=Panel.SERVING,
        help="address to listen on",
    )
    port: int = option(  # 0 = pick a free port
        8000,
        "--port",
        metavar="N",
        panel=Panel.SERVING,
        help="TCP port; 0 picks a free one (printed)",
    )
    model: str = option(  # served model name (/v1/models, metrics' model_name label)
        DEFAULT_MODEL, "--model", metavar="NAME", panel=Panel.SERVING, help="served model name"
    )
    engine: EngineParams = group(EngineParams)  # KV cache, prefill and decode rates, batch
    max_model_len: int = option(  # prompt + max_tokens must fit, as vLLM enforces
        131_072,
        "--max-model-len",
        parse=parse_tokens,
        metavar="N",
        panel=Panel.SERVING,
        help="max prompt + output tokens (e.g. 128Ki, 1M)",
    )
    eos_tokens: int = option(  # 0 = off: max_tokens exactly
        0,
        "--eos-tokens",
        parse=parse_tokens,
        metavar="N",
        panel=Panel.SERVING,
        help="natural answer length without ignore_eos (0 = off: exactly max_tokens)",
    )
    default_max_tokens: int = option(
        256,
        "--default-max-tokens",
        parse=parse_tokens,
        metavar="N",
        panel=Panel.SERVING,
        help="answer length when a request sets no max_tokens",
    )
    seed: int = option(
        0, "--seed", metavar="N", panel=Panel.SERVING, help="varies filler text and ids"
    )
    tokenizer: str | None = option(None, flag=TOKENIZER)  # None: cl100k_base; a HF tokenizer
    # A flood's limits (agentx.serve_sim.guard): a partial request is closed, not kept open
    header_timeout_s: float = option(
        30.0,
        "--header-timeout",
        metavar="S",
        panel=Panel.SERVING,
        help="seconds a request head may take to arrive (from the connection or its first byte)",
    )
    body_timeout_s: float = option(
        60.0,
        "--body-timeout",
        metavar="S",
        panel=Panel.SERVING,
        help="seconds a request body may take to arrive once its head has (then 408)",
    )
    max_connections: int = option(
        4096,
        "--max-connections",
        metavar="N",
        panel=Panel.SERVING,
        help="open connections at most (lowered to what the file-descriptor limit allows)",
    )
    # several replicas behind one port: each at /replicas/I/..., the router at the top level
    replicas: int = option(1, flag=REPLICAS)
    router: Route = option(DEFAULT_ROUTE, flag=ROUTER)

    @classmethod
    def of(cls, **values: Any) -> SimConfig:
        """From flat values: the server's settings and the engine's (``fast=True``)."""
        return build(cls, values)

    @classmethod
    def of_profile(cls, profile: str = Profile.DEFAULT, **settings: object) -> SimConfig:
        """A config from a named profile; ``settings`` that are not ``None`` override it."""
        values = {**PROFILES[profile_name(profile)]}
        values.update({k: v for k, v in settings.items() if v is not None})
        return build(cls, values)

    def validate(self) -> SimConfig:
        """Raise :class:`UsageError` on settings no engine could run with; returns self."""
        problems: list[str] = []
        e = self.engine
        if not 0 <= self.port <= 65535:
            problems.append("--port must be 0..65535")
        if e.block_size < 1:
            problems.append("--block-size must be >= 1")
        if e.kv_tokens < e.block_size:
            problems.append("--kv-tokens must hold at least one block")
        if e.offload_tokens < 0:
            problems.append("--offload-tokens must be >= 0")
        for name, value in (
            ("--prefill-tps", e.prefill_tps),
            ("--decode-tps", e.decode_tps),
            ("--offload-load-tps", e.offload_load_tps),
        ):
            if not value > 0:
                problems.append(f"{name} must be > 0")
        if e.batch_slowdown < 0 or e.overhead_ms < 0:
            problems.append("--batch-slowdown and --overhead-ms must be >= 0")
        if e.max_batch < 1:
            problems.append("--max-batch must be >= 1")
        if self.max_model_len < 2:
            problems.append("--max-model-len must be >= 2")
        if self.eos_tokens < 0:
            problems.append("--eos-tokens must be >= 0")
        if self.default_max_tokens < 1:
            problems.append("--default-max-tokens must be >= 1")
        if not (0 < self.header_timeout_s < math.inf and 0 < self.body_timeout_s < math.inf):
            problems.append("--header-timeout and --body-timeout must be > 0 seconds")
        if self.max_connections < 1:
            problems.append("--max-connections must be >= 1")
        if self.replicas < 1:
            problems.append("--replicas must be >= 1")
        if self.tokenizer == "server":
            problems.append("--tokenizer server: serve-sim is the server; give a tokenizer path")
        if problems:
            raise UsageError("; ".join(problems))
        return self


# Named sets of defaults (``--profile``), by flat name; explicit flags override them.
PROFILES: dict[Profile, dict[str, object]] = {
    Profile.DEFAULT: {},
    Profile.AGENTX: {
        "block_size": 64,
        "kv_tokens": 8_388_608,
        "offload_tokens": 33_554_432,
        "prefill_tps": 60_000.0,
        "decode_tps": 80.0,
        "batch_slowdown": 0.005,
        "offload_load_tps": 1_000_000.0,
        "overhead_ms": 20.0,
        "max_batch": 256,
        "max_model_len": 1_048_576,
    },
}
