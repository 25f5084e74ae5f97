"""``agentx simulate``'s options: what to simulate, on which timeline, with which engine and
tokenizer; capacity lists and their parsing."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from agentx.core.errors import UsageError
from agentx.core.options import (
    Panel,
    build,
    coerce_choices,
    group,
    names,
    option,
    parse_token_list,
    parse_tokens,
)
from agentx.metrics.prometheus.capacity import KV_FROM
from agentx.prefixcache.engine import EngineParams
from agentx.prefixcache.tokenizer import TOKENIZER, TOKENIZER_SERVER
from agentx.routing import DEFAULT_ROUTE, REPLICAS, ROUTE, Route
from agentx.schedule.options import ScheduleOptions
from agentx.workload.options import WorkloadOptions
from agentx.workload.scenario import scenario_values


class OffloadPolicy(StrEnum):
    """``--offload-policy``: what the DRAM tier holds."""

    INCLUSIVE = "inclusive"  # write-through: a copy of what the GPU holds too
    EXCLUSIVE = "exclusive"  # only what the GPU does not


class CacheModel(StrEnum):
    """``--cache-model``: the recorded timeline's cache model."""

    STACK = "stack"  # stack distances: one pass answers every capacity
    KVCACHE = "kvcache"  # serve-sim's KVCache, one replay per capacity


class Timeline(StrEnum):
    """``--timeline``: when the simulated requests are sent."""

    REPLAY = "replay"  # replay's schedule, the engine model
    RECORDED = "recorded"  # the trace's own start times


MAX_CAPACITY_TOKENS = 10**15  # a KV cache bigger than any machine's memory: a typo
MAX_BLOCK_SIZE = 1 << 20
CURVE_POINTS = 48  # capacities of the plotted curve (the stack engine answers them for free)


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


def _kv_blocks(text: str) -> tuple[int, ...]:
    return parse_count_list(text, "--kv-blocks")


@dataclass(frozen=True, slots=True)
class SimulateOptions:
    """Everything ``agentx simulate`` takes, each field declared as its option; defaults are the
    CLI's. :meth:`of` builds one from flat values (``time_scale=0``, not ``schedule=...``)."""

    trace: Path
    capacities_tokens: tuple[int, ...] | None = option(  # None: default_capacities()
        None,
        "--capacity-tokens",
        parse=parse_token_list,
        metavar="LIST",
        panel=Panel.CAPACITY,
        help="GPU KV capacities, comma list with K/M suffixes, e.g. 64K,160K,1M [default: 1-2-5 "
        "sweep up to the trace's footprint]",
    )
    offload_tokens: int | None = option(  # None: GPU-only points only
        None,
        "--offload-tokens",
        parse=parse_tokens,
        metavar="N",
        panel=Panel.CAPACITY,
        help="also simulate each capacity with a CPU/DRAM offload tier of N tokens (e.g. 2M)",
    )
    block_size: int | None = option(  # None: 16, or a hash-only trace's own
        None,
        "--block-size",
        min=1,
        metavar="N",
        panel=Panel.CAPACITY,
        show_default=False,
        help="block size in tokens (default 16; hash-only traces: the file's own, or a multiple "
        "of it)",
    )
    pin: bool = option(  # running requests pin their blocks (needs recorded durations)
        True,
        "--pin/--no-pin",
        panel=Panel.TIMELINE,
        help="a running request's blocks (start to start+e2e) cannot be evicted",
    )
    reserve_output: bool = option(  # running requests also hold their output's blocks
        True,
        "--reserve-output/--no-reserve-output",
        panel=Panel.TIMELINE,
        help="a running request also holds its output's KV blocks",
    )
    offload_policy: OffloadPolicy = option(
        OffloadPolicy.INCLUSIVE,
        "--offload-policy",
        choices=OffloadPolicy,
        panel=Panel.CAPACITY,
        help="inclusive (write-through, as vLLM's offloading connector, LMCache) or exclusive "
        "(DRAM holds only what the GPU does not)",
    )
    cache_model: CacheModel = option(  # of the recorded timeline
        CacheModel.STACK,
        "--cache-model",
        hidden=("--engine",),
        choices=CacheModel,
        panel=Panel.TIMELINE,
        help="--timeline recorded: stack (one pass, every capacity) or kvcache (serve-sim's "
        "KVCache, one replay per capacity; slow)",
    )
    # the replay timeline: replay's schedule and request bodies, the engine model
    timeline: Timeline = option(
        Timeline.REPLAY,
        "--timeline",
        choices=Timeline,
        panel=Panel.TIMELINE,
        help="replay (the engine model on replay's schedule: lanes, think time, warm-up) or "
        "recorded (the trace's own start times; stack-distance curves)",
    )
    run_all: bool = option(  # off: capacities that would behave as unbounded are derived
        False,
        "--run-all",
        panel=Panel.TIMELINE,
        help="--timeline replay: run every capacity, also those that behave as an unbounded "
        "cache (their points are derived otherwise; a cross-check)",
    )
    schedule: ScheduleOptions = group(ScheduleOptions)
    workload: WorkloadOptions = group(WorkloadOptions)
    ignore_eos: bool = True
    tokenizer: str | None = option(None, flag=TOKENIZER)  # None: cl100k_base; "server"; a path
    server_url: str | None = option(None, flag=TOKENIZER_SERVER)  # for --tokenizer server
    model: str | None = None
    engine_params: EngineParams = group(EngineParams, panels=(Panel.ENGINE,))
    kv_blocks: tuple[int, ...] | None = option(  # capacities in blocks of block_size
        None,
        "--kv-blocks",
        parse=_kv_blocks,
        metavar="LIST",
        panel=Panel.CAPACITY,
        help="GPU KV capacities in the server's blocks of --block-size tokens, comma list (e.g. "
        "96,128,192)",
    )
    kv_from: str | None = option(None, flag=KV_FROM)  # a server's /metrics URL or log file
    from_results: Path | None = option(  # a results directory whose send times to replay
        None,
        "--from-results",
        metavar="DIR",
        panel=Panel.TIMELINE,
        help="a replay's results directory: simulate its requests at their recorded send times "
        "(built with that run's --api, --salt, --sessions, --seed, --extra-body)",
    )

    # several replicas, each an engine with its own KV cache of the capacity simulated
    replicas: int = option(1, flag=REPLICAS)
    route: Route = option(DEFAULT_ROUTE, flag=ROUTE)

    @classmethod
    def of(cls, **values: Any) -> SimulateOptions:
        """From flat values: any field of these options or of the groups they embed."""
        return build(cls, values)

    def __post_init__(self) -> None:
        coerce_choices(self)
        self.schedule.check()
        self.workload.check()
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
        if self.kv_blocks is not None and any(b < 1 for b in self.kv_blocks):
            raise UsageError("--kv-blocks must be >= 1")
        given = [self.kv_blocks, self.capacities_tokens]
        if sum(x is not None for x in given) > 1:
            raise UsageError("give the capacity once: --kv-blocks or --capacity-tokens")
        if self.replicas < 1:
            raise UsageError("--replicas must be at least 1")
        replay_only = (
            self.from_results is not None or self.tokenizer is not None or self.replicas > 1
        )
        if self.timeline is Timeline.RECORDED and (replay_only or self.kv_from):
            raise UsageError(
                "--tokenizer, --kv-from, --from-results and --replicas need the replay timeline "
                "(--timeline replay)"
            )


def simulate_options(scenario: str | None = None, **explicit: Any) -> SimulateOptions:
    """``SimulateOptions`` from a preset (``--scenario``: the values of it these options have)
    and the options given explicitly, by flat name (``None`` = not given)."""
    values = scenario_values(scenario, **explicit)
    mine = set(names(SimulateOptions))
    return build(SimulateOptions, {k: v for k, v in values.items() if k in mine})
