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

from dataclasses import dataclass

from agentx.core.errors import UsageError
from agentx.prefixcache.engine import EngineParams

DEFAULT_MODEL = "agentx-sim"


@dataclass(frozen=True, slots=True)
class SimConfig:
    """Settings of one simulated server. All rates are tokens per second."""

    host: str = "127.0.0.1"
    port: int = 8000  # 0 = pick a free port
    model: str = DEFAULT_MODEL  # served model name (/v1/models, metrics' model_name label)
    block_size: int = 16  # prefix-cache block, tokens (vLLM default)
    kv_tokens: int = 163_840  # GPU KV capacity, tokens (10240 blocks of 16)
    offload_tokens: int = 0  # CPU offload tier capacity, tokens (0 = no offload tier)
    prefill_tps: float = 8_000.0  # uncached prompt tokens computed per second (shared, FIFO)
    decode_tps: float = 60.0  # per-sequence decode speed with a batch of one
    batch_slowdown: float = 0.015  # each extra running sequence stretches a decode step by this
    offload_load_tps: float = 100_000.0  # offloaded-hit tokens loaded per second
    overhead_ms: float = 10.0  # fixed per-request cost added to TTFT (HTTP, tokenizer, step)
    max_batch: int = 256  # running requests; the rest wait (vLLM's max_num_seqs)
    max_model_len: int = 131_072  # prompt + max_tokens must fit, as vLLM enforces
    eos_tokens: int = 0  # natural answer length without ignore_eos (0 = off: max_tokens exactly)
    default_max_tokens: int = 256  # answer length of a request that sets no max_tokens
    fast: bool = False  # no modelled latency or queueing: the loopback ceiling
    seed: int = 0  # varies the filler text and ids
    tokenizer: str | None = None  # None: cl100k_base; a Hugging Face tokenizer dir or file

    def engine_params(self) -> EngineParams:
        """The engine's share of the settings (:mod:`agentx.prefixcache.engine`)."""
        return EngineParams(
            block_size=self.block_size,
            kv_tokens=self.kv_tokens,
            offload_tokens=self.offload_tokens,
            prefill_tps=self.prefill_tps,
            decode_tps=self.decode_tps,
            batch_slowdown=self.batch_slowdown,
            offload_load_tps=self.offload_load_tps,
            overhead_ms=self.overhead_ms,
            max_batch=self.max_batch,
            fast=self.fast,
        )

    @classmethod
    def of_profile(cls, profile: str = "default", **settings: object) -> SimConfig:
        """A config from a named profile; ``settings`` that are not ``None`` override it."""
        if profile not in PROFILES:
            raise UsageError(f"--profile must be one of {', '.join(PROFILES)}, not {profile!r}")
        values = {**PROFILES[profile], **{k: v for k, v in settings.items() if v is not None}}
        return cls(**values)  # type: ignore[arg-type]

    def validate(self) -> SimConfig:
        """Raise :class:`UsageError` on settings no engine could run with; returns self."""
        problems: list[str] = []
        if not 0 <= self.port <= 65535:
            problems.append("--port must be 0..65535")
        if self.block_size < 1:
            problems.append("--block-size must be >= 1")
        if self.kv_tokens < self.block_size:
            problems.append("--kv-tokens must hold at least one block")
        if self.offload_tokens < 0:
            problems.append("--offload-tokens must be >= 0")
        for name, value in (
            ("--prefill-tps", self.prefill_tps),
            ("--decode-tps", self.decode_tps),
            ("--offload-load-tps", self.offload_load_tps),
        ):
            if not value > 0:
                problems.append(f"{name} must be > 0")
        if self.batch_slowdown < 0 or self.overhead_ms < 0:
            problems.append("--batch-slowdown and --overhead-ms must be >= 0")
        if self.max_batch < 1:
            problems.append("--max-batch must be >= 1")
        if self.max_model_len < 2:
            problems.append("--max-model-len must be >= 2")
        if self.eos_tokens < 0:
            problems.append("--eos-tokens must be >= 0")
        if self.default_max_tokens < 1:
            problems.append("--default-max-tokens must be >= 1")
        if self.tokenizer == "server":
            problems.append("--tokenizer server: serve-sim is the server; give a tokenizer path")
        if problems:
            raise UsageError("; ".join(problems))
        return self


# Named sets of defaults (``--profile``); explicit flags override them.
PROFILES: dict[str, dict[str, object]] = {
    "default": {},
    "agentx": {
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
