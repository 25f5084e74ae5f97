"""``agentx simulate``: options, capacity lists, and the ``agentx.simulate/1`` result."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from agentx.core.progress import Progress
from agentx.results.simulate import Point, RecordedSimulation, Simulation, StackModel
from agentx.simulate.options import (
    CURVE_POINTS,
    CacheModel,
    OffloadPolicy,
    SimulateOptions,
    Timeline,
    default_capacities,
    parse_count_list,
)
from agentx.simulate.stack import kvcache_simulate, stack_simulate
from agentx.simulate.workload import Workload, load_workload


@dataclass(frozen=True, slots=True)
class CurvePoint:
    capacity_tokens: int
    gpu_hit_rate: float
    hit_rate: float | None  # with the offload tier; None without one


@dataclass(frozen=True, slots=True)
class SimulateResult:
    data: Simulation  # what --json prints
    curve: tuple[CurvePoint, ...]  # a finer sweep, for the plot


def _curve_capacities(block_size: int, top_tokens: int) -> list[int]:
    top = max(top_tokens, 2 * block_size)
    grid = np.geomspace(block_size, top, CURVE_POINTS)
    return sorted({round(float(c) / block_size) * block_size for c in grid})


def simulate_workload(workload: Workload, options: SimulateOptions) -> SimulateResult:
    """Run the sweep on a loaded workload."""
    return SimulateResult(*_recorded(workload, options))


def _recorded(
    workload: Workload, options: SimulateOptions
) -> tuple[RecordedSimulation, tuple[CurvePoint, ...]]:
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
            if options.offload_policy is OffloadPolicy.INCLUSIVE
            else stack.exclusive_hit_blocks
        )
        union = [h * bs / prompt for h in hits or ()]
    if (
        options.cache_model is CacheModel.KVCACHE
    ):  # the slow reference: one KVCache replay per capacity
        gpu, union = list(gpu), list(union) if union is not None else None
        for k, cap in enumerate(caps):
            ref = kvcache_simulate(
                workload, cap, offload, pin=options.pin, reserve_output=options.reserve_output
            )
            gpu[k] = ref.gpu_hit_tokens / prompt
            if union is not None:
                union[k] = (ref.gpu_hit_tokens + ref.offload_hit_tokens) / prompt

    points: list[Point] = []
    for k, cap in enumerate(caps):
        points.append(_point(cap, 0, gpu[k], gpu[k]))
        if union is not None:
            points.append(_point(cap, offload, union[k], gpu[k]))
    curve: tuple[CurvePoint, ...] = ()
    if options.cache_model is CacheModel.STACK:
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
    data = RecordedSimulation(
        block_size=bs,
        theoretical_hit_rate=stack.theoretical_hit_blocks * bs / prompt,
        points=tuple(points),
        requests=len(workload.requests),
        sessions=workload.sessions,
        prompt_tokens=stack.prompt_tokens,
        footprint_tokens=workload.footprint_tokens,
        capacity_for_theoretical_tokens=stack.blocks_for_theoretical * bs,
        peak_pinned_tokens=stack.peak_pinned_blocks * bs,
        largest_request_tokens=max(
            (-(-(r.prompt_tokens + r.output_tokens) // bs) * bs for r in workload.requests),
            default=0,
        ),
        model=StackModel(
            engine=options.cache_model,  # the key scripts read; cache_model names it
            cache_model=options.cache_model,
            pin=options.pin,
            timed_requests=workload.timed_requests,
            reserve_output=options.reserve_output,
            offload_policy=(
                None
                if not offload
                else "victim"
                if options.cache_model is CacheModel.KVCACHE
                else options.offload_policy
            ),
        ),
    )
    return data, curve


def _point(capacity: int, offload: int, hit: float, gpu: float) -> Point:
    return Point(capacity, offload, hit, gpu, hit - gpu)


def run_simulate(options: SimulateOptions, *, progress: Progress | None = None) -> SimulateResult:
    """Load the trace and run the sweep on the chosen timeline. Raises ``AgentxError`` on a bad
    trace or options. ``progress`` follows the loading (recorded timeline), then says the sweep
    is running."""
    from agentx.formats import detect_format

    prog = progress or Progress()
    fmt = detect_format(options.trace)
    if options.timeline is Timeline.REPLAY:
        from agentx.simulate.predict import simulate_replay

        replayed = dataclasses.replace(
            simulate_replay(options, prog), trace=str(options.trace), format=fmt
        )
        curve = tuple(
            CurvePoint(p.capacity_tokens, p.gpu_hit_rate, None)
            for p in replayed.points
            if not p.offload_tokens
        )
        return SimulateResult(replayed, curve)
    workload = load_workload(
        options.trace, options.block_size, progress=prog, flat_chains=options.workload.read.split
    )
    prog.phase("simulating", total=None, unit="")
    data, curve = _recorded(workload, options)
    recorded = dataclasses.replace(
        data, trace=str(options.trace), format=fmt, timeline="recorded", tokenizer="cl100k_base"
    )
    return SimulateResult(recorded, curve)


__all__ = [
    "CacheModel",
    "CurvePoint",
    "OffloadPolicy",
    "SimulateOptions",
    "SimulateResult",
    "Timeline",
    "default_capacities",
    "parse_count_list",
    "run_simulate",
    "simulate_workload",
]
