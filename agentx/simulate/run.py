"""``agentx simulate``: options, capacity lists, and the ``agentx.simulate/1`` result."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agentx.errors import UsageError
from agentx.simulate.stack import kvcache_simulate, stack_simulate
from agentx.simulate.workload import Workload, load_workload

SCHEMA = "agentx.simulate/1"
OffloadPolicy = Literal["inclusive", "exclusive"]
EngineName = Literal["stack", "kvcache"]
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
    engine: EngineName = "stack"

    def __post_init__(self) -> None:
        if self.capacities_tokens is not None and any(c < 0 for c in self.capacities_tokens):
            raise UsageError("--capacity-tokens must be >= 0")
        if self.offload_tokens is not None and self.offload_tokens < 0:
            raise UsageError("--offload-tokens must be >= 0")
        if self.block_size is not None and self.block_size < 1:
            raise UsageError("--block-size must be at least 1")
        if self.block_size is not None and self.block_size > MAX_BLOCK_SIZE:
            raise UsageError(f"--block-size must be at most {MAX_BLOCK_SIZE:,} tokens")
        biggest = max([*(self.capacities_tokens or ()), self.offload_tokens or 0])
        if biggest > MAX_CAPACITY_TOKENS:
            raise UsageError(
                f"capacities must be at most {MAX_CAPACITY_TOKENS:.0e} tokens, got {biggest:.3g}"
            )
        if self.offload_policy not in ("inclusive", "exclusive"):
            raise UsageError("--offload-policy must be inclusive or exclusive")
        if self.engine not in ("stack", "kvcache"):
            raise UsageError("--engine must be stack or kvcache")


@dataclass(frozen=True, slots=True)
class CurvePoint:
    capacity_tokens: int
    gpu_hit_rate: float
    hit_rate: float | None  # with the offload tier; None without one


@dataclass(frozen=True, slots=True)
class SimulateResult:
    data: dict[str, Any]  # the agentx.simulate/1 object (what --json prints)
    curve: tuple[CurvePoint, ...]  # a finer sweep, for the plot


def _curve_capacities(block_size: int, top_tokens: int) -> list[int]:
    top = max(top_tokens, 2 * block_size)
    grid = np.geomspace(block_size, top, CURVE_POINTS)
    return sorted({round(float(c) / block_size) * block_size for c in grid})


def simulate_workload(workload: Workload, options: SimulateOptions) -> SimulateResult:
    """Run the sweep on a loaded workload."""
    bs = workload.block_size
    caps = options.capacities_tokens or default_capacities(bs, workload.footprint_tokens)
    offload = options.offload_tokens or 0
    curve_caps = _curve_capacities(bs, max([workload.footprint_tokens, *caps]))
    all_caps = list(caps) + curve_caps
    stack = stack_simulate(
        workload,
        [c // bs for c in all_caps],
        offload // bs,
        pin=options.pin,
        reserve_output=options.reserve_output,
    )
    prompt = stack.prompt_tokens or 1
    gpu = [h * bs / prompt for h in stack.gpu_hit_blocks]
    union: list[float] | None = None
    if offload:
        hits = (
            stack.inclusive_hit_blocks
            if options.offload_policy == "inclusive"
            else stack.exclusive_hit_blocks
        )
        union = [h * bs / prompt for h in hits or ()]
    if options.engine == "kvcache":  # the slow reference: one KVCache replay per capacity
        gpu, union = list(gpu), list(union) if union is not None else None
        for k, cap in enumerate(caps):
            ref = kvcache_simulate(
                workload, cap, offload, pin=options.pin, reserve_output=options.reserve_output
            )
            gpu[k] = ref.gpu_hit_tokens / prompt
            if union is not None:
                union[k] = (ref.gpu_hit_tokens + ref.offload_hit_tokens) / prompt

    points: list[dict[str, Any]] = []
    for k, cap in enumerate(caps):
        points.append(_point(cap, 0, gpu[k], gpu[k]))
        if union is not None:
            points.append(_point(cap, offload, union[k], gpu[k]))
    curve: tuple[CurvePoint, ...] = ()
    if options.engine == "stack":
        n = len(caps)
        curve = tuple(
            CurvePoint(c, gpu[n + j], union[n + j] if union is not None else None)
            for j, c in enumerate(curve_caps)
        )
    else:
        curve = tuple(
            CurvePoint(c, gpu[k], union[k] if union is not None else None)
            for k, c in enumerate(caps)
        )
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "block_size": bs,
        "theoretical_hit_rate": stack.theoretical_hit_blocks * bs / prompt,
        "points": points,
        # extras
        "requests": len(workload.requests),
        "sessions": workload.sessions,
        "prompt_tokens": stack.prompt_tokens,
        "footprint_tokens": workload.footprint_tokens,
        "capacity_for_theoretical_tokens": stack.blocks_for_theoretical * bs,
        "peak_pinned_tokens": stack.peak_pinned_blocks * bs,
        "largest_request_tokens": max(
            (-(-(r.prompt_tokens + r.output_tokens) // bs) * bs for r in workload.requests),
            default=0,
        ),
        "model": {
            "engine": options.engine,
            "pin": options.pin,
            "timed_requests": workload.timed_requests,
            "reserve_output": options.reserve_output,
            "offload_policy": (
                None
                if not offload
                else "victim"
                if options.engine == "kvcache"
                else options.offload_policy
            ),
        },
    }
    return SimulateResult(data, curve)


def _point(capacity: int, offload: int, hit: float, gpu: float) -> dict[str, Any]:
    return {
        "capacity_tokens": capacity,
        "offload_tokens": offload,
        "hit_rate": hit,
        "gpu_hit_rate": gpu,
        "offload_hit_rate": hit - gpu,
    }


def run_simulate(options: SimulateOptions) -> SimulateResult:
    """Load the trace and run the sweep. Raises ``AgentxError`` on a bad trace or options."""
    from agentx.formats import detect_format

    fmt = detect_format(options.trace)
    workload = load_workload(options.trace, options.block_size)
    result = simulate_workload(workload, options)
    result.data["trace"] = str(options.trace)
    result.data["format"] = fmt
    return result
