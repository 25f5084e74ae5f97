"""``agentx simulate``'s options: what to simulate, on which timeline, with which engine and
tokenizer; capacity lists and their parsing."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentx.core.errors import UsageError
from agentx.prefixcache.engine import EngineParams
from agentx.workload.rules import ScheduleRules

SCHEMA = "agentx.simulate/1"
OffloadPolicy = Literal["inclusive", "exclusive"]
EngineName = Literal["stack", "kvcache"]
Timeline = Literal["replay", "recorded"]
MAX_CAPACITY_TOKENS = 10**15  # a KV cache bigger than any machine's memory: a typo
MAX_BLOCK_SIZE = 1 << 20
CURVE_POINTS = 48  # capacities of the plotted curve (the stack engine answers them for free)

_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}
_NUMBER = re.compile(r"^\s*([0-9][0-9_]*(?:\.[0-9]*)?)\s*([kmg]i?)?\s*$", re.IGNORECASE)


def parse_tokens(text: str, flag: str = "--capacity-tokens") -> int:
    """``"64K"`` -> 64000, ``"1.5M"`` -> 1500000, ``"64Ki"`` -> 65536, ``"1000"`` -> 1000."""
    m = _NUMBER.match(text)
    if m is None:
        raise UsageError(f"{flag}: {text!r} is not a token count (e.g. 160000, 64K, 1.5M, 64Ki)")
    value = float(m.group(1).replace("_", "")) * _SUFFIX[(m.group(2) or "").lower()]
    return round(value)


def parse_token_list(text: str, flag: str = "--capacity-tokens") -> tuple[int, ...]:
    """A comma list of token counts, each with an optional suffix."""
    items = [t for t in text.split(",") if t.strip()]
    if not items:
        raise UsageError(f"{flag}: give at least one capacity")
    return tuple(parse_tokens(t, flag) for t in items)


def parse_count_list(text: str, flag: str) -> tuple[int, ...]:
    """A comma list of positive integers (``--kv-blocks 96,128,192``)."""
    try:
        values = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise UsageError(f"{flag}: {text!r} is not a comma list of integers") from None
    if not values or any(v < 1 for v in values):
        raise UsageError(f"{flag}: give positive integers, e.g. 96,128,192")
    return values


def default_capacities(block_size: int, footprint_tokens: int) -> tuple[int, ...]:
    """1-2-5 steps from four blocks up to the footprint, and the footprint itself."""
    top = max(footprint_tokens, block_size)
    low = 4 * block_size
    out: list[int] = []
    decade = 10 ** max(0, math.floor(math.log10(low)))
    while decade <= top:
        out.extend(m * decade for m in (1, 2, 5) if low <= m * decade < top)
        decade *= 10
    out.append(top)
    return tuple(sorted(set(out)))


@dataclass(frozen=True, slots=True)
class SimulateOptions:
    """Everything ``agentx simulate`` takes; defaults are the CLI's."""

    trace: Path
    capacities_tokens: tuple[int, ...] | None = None  # None: default_capacities()
    offload_tokens: int | None = None  # None: GPU-only points only
    block_size: int | None = None  # None: 16, or a hash-only trace's own
    pin: bool = True  # running requests pin their blocks (needs recorded durations)
    reserve_output: bool = True  # running requests also hold their output's blocks
    offload_policy: OffloadPolicy = "inclusive"
    engine: EngineName = "stack"  # of the recorded timeline
    # the replay timeline: replay's schedule and request bodies, the engine model
    timeline: Timeline = "replay"
    derive_unbounded: bool = True  # capacities above one that ran as unbounded are not run
    schedule: ScheduleRules = field(default_factory=ScheduleRules)
    sessions: int | None = None
    seed: int = 0
    salt: bool = True
    api: str = "chat"
    extra_body: dict[str, Any] = field(default_factory=dict)
    ignore_eos: bool = True
    tokenizer: str | None = None  # None: cl100k_base; "server"; a Hugging Face tokenizer path
    server_url: str | None = None  # for --tokenizer server
    model: str | None = None
    engine_params: EngineParams = field(default_factory=EngineParams)
    kv_blocks: tuple[int, ...] | None = None  # capacities in blocks of block_size
    kv_from: str | None = None  # a server's /metrics URL or log file stating its capacity
    from_results: Path | None = None  # a results directory whose send times to replay

    def __post_init__(self) -> None:
        if self.capacities_tokens is not None and any(c < 0 for c in self.capacities_tokens):
            raise UsageError("--capacity-tokens must be >= 0")
        if self.offload_tokens is not None and self.offload_tokens < 0:
            raise UsageError("--offload-tokens must be >= 0")
        if self.block_size is not None and self.block_size < 1:
            raise UsageError("--block-size must be at least 1")
        if self.block_size is not None and self.block_size > MAX_BLOCK_SIZE:
            raise UsageError(f"--block-size must be at most {MAX_BLOCK_SIZE:,} tokens")
        kv = [b * (self.block_size or 1) for b in self.kv_blocks or ()]
        biggest = max([*(self.capacities_tokens or ()), *kv, self.offload_tokens or 0])
        if biggest > MAX_CAPACITY_TOKENS:
            raise UsageError(
                f"capacities must be at most {MAX_CAPACITY_TOKENS:.0e} tokens, got {biggest:.3g}"
            )
        if self.offload_policy not in ("inclusive", "exclusive"):
            raise UsageError("--offload-policy must be inclusive or exclusive")
        if self.engine not in ("stack", "kvcache"):
            raise UsageError("--engine must be stack or kvcache")
        if self.timeline not in ("replay", "recorded"):
            raise UsageError("--timeline must be replay or recorded")
        if self.kv_blocks is not None and any(b < 1 for b in self.kv_blocks):
            raise UsageError("--kv-blocks must be >= 1")
        given = [self.kv_blocks, self.capacities_tokens]
        if sum(x is not None for x in given) > 1:
            raise UsageError("give the capacity once: --kv-blocks or --capacity-tokens")
        replay_only = self.from_results is not None or self.tokenizer is not None
        if self.timeline == "recorded" and (replay_only or self.kv_from):
            raise UsageError(
                "--tokenizer, --kv-from and --from-results need the replay timeline "
                "(--timeline replay)"
            )
