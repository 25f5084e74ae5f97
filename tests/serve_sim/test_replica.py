"""The engine's admission and latency model, on a fake clock (no sockets, no sleeping)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from agentx.prefixcache.hashing import block_hashes
from agentx.serve_sim.config import SimConfig
from agentx.serve_sim.replica import Replica

BS = 16


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def prompt(seed: int, n: int) -> tuple[np.ndarray, int]:
    toks = np.random.default_rng(seed).integers(0, 50_000, size=n)
    return block_hashes(toks, BS), n


def engine(**kw: float | int | bool) -> tuple[Replica, FakeClock]:
    clock = FakeClock()
    base: dict[str, float | int | bool] = {
        "prefill_tps": 1000.0,
        "decode_tps": 50.0,
        "overhead_ms": 10.0,
        "offload_load_tps": 10_000.0,
    }
    base.update(kw)
    return Replica(SimConfig.of(port=0, **base), clock), clock


async def test_ttft_is_uncached_prompt_over_prefill_rate_plus_overhead() -> None:
    eng, clock = engine()
    h, n = prompt(1, 1000)
    a = await eng.admit(h, n, 10)
    assert a.first_token_s - clock.t == pytest.approx(1000 / 1000 + 0.010)
    eng.finish(a, "length", 10)
    clock.t += 5
    b = await eng.admit(h, n, 10)  # (1000 - 1) // 16 = 62 blocks hit, 8 tokens computed
    assert b.allocation.gpu_hit_tokens == 992
    assert b.first_token_s - clock.t == pytest.approx(8 / 1000 + 0.010)
    eng.finish(b, "length", 10)


async def test_prefill_lane_is_fifo() -> None:
    eng, clock = engine()
    a = await eng.admit(*prompt(1, 500), 5)
    b = await eng.admit(*prompt(2, 300), 5)  # arrives while a prefills: waits for the lane
    assert a.first_token_s - clock.t == pytest.approx(0.5 + 0.010)
    assert b.first_token_s - clock.t == pytest.approx(0.5 + 0.3 + 0.010)
    clock.t += 2  # the lane is idle again: no carried-over delay
    c = await eng.admit(*prompt(3, 100), 5)
    assert c.first_token_s - clock.t == pytest.approx(0.1 + 0.010)
    for x in (a, b, c):
        eng.finish(x, "stop", 5)


async def test_offloaded_hits_cost_load_time_not_prefill_time() -> None:
    eng, clock = engine(kv_tokens=40 * BS, offload_tokens=10_000)
    h, n = prompt(1, 32 * BS + 1)  # 32 blocks
    eng.finish(await eng.admit(h, n, 0), "stop", 0)
    eng.finish(await eng.admit(*prompt(2, 32 * BS), 0), "stop", 0)  # pushes most of h out
    clock.t += 10
    a = await eng.admit(h, n, 0)
    gpu, off = a.allocation.gpu_hit_tokens, a.allocation.offload_hit_tokens
    assert off > 0 and gpu + off == 32 * BS
    computed = n - gpu - off
    expected = computed / 1000 + off / 10_000 + 0.010
    assert a.first_token_s - clock.t == pytest.approx(expected)
    eng.finish(a, "stop", 0)


def test_itl_stretches_with_the_running_batch() -> None:
    eng, _ = engine(batch_slowdown=0.02)
    assert eng.itl_s() == pytest.approx(1 / 50)
    eng.core.running = 11
    assert eng.itl_s() == pytest.approx((1 + 0.02 * 10) / 50)


async def test_max_batch_queues_fifo_and_measures_queue_time() -> None:
    eng, clock = engine(max_batch=1)
    a = await eng.admit(*prompt(1, 100), 5)
    waiting_b = asyncio.ensure_future(eng.admit(*prompt(2, 100), 5))
    waiting_c = asyncio.ensure_future(eng.admit(*prompt(3, 100), 5))
    await asyncio.sleep(0)
    assert (eng.running, eng.waiting) == (1, 2)
    assert not waiting_b.done()
    clock.t += 3
    eng.finish(a, "length", 5)
    b = await waiting_b
    assert b.queue_s == pytest.approx(3)
    assert not waiting_c.done() and eng.waiting == 1
    eng.finish(b, "length", 5)
    c = await waiting_c
    eng.finish(c, "length", 5)
    assert (eng.running, eng.waiting) == (0, 0)
    assert eng.metrics.finished["length"] == 3


async def test_a_request_waits_for_kv_room_not_only_for_a_slot() -> None:
    eng, _ = engine(kv_tokens=64 * BS, max_batch=10)
    a = await eng.admit(*prompt(1, 40 * BS), 0)
    waiting = asyncio.ensure_future(eng.admit(*prompt(2, 40 * BS), 0))
    await asyncio.sleep(0)
    assert eng.waiting == 1 and not waiting.done()
    eng.finish(a, "stop", 0)
    b = await waiting
    eng.finish(b, "stop", 0)


async def test_a_lone_request_bigger_than_the_cache_still_runs() -> None:
    eng, _ = engine(kv_tokens=4 * BS)
    a = await eng.admit(*prompt(1, 40 * BS), 0)
    assert eng.cache.usage == 1.0
    eng.finish(a, "stop", 0)
    assert eng.cache.resident_blocks <= 4


async def test_cancelling_a_waiting_request_leaves_no_trace() -> None:
    eng, _ = engine(max_batch=1)
    a = await eng.admit(*prompt(1, 100), 5)
    waiting = asyncio.ensure_future(eng.admit(*prompt(2, 100), 5))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert eng.waiting == 0
    eng.finish(a, "abort", 2)
    assert eng.running == 0 and eng.cache.pinned_blocks == 0
    assert eng.metrics.finished["abort"] == 1


async def test_fast_mode_models_no_time() -> None:
    eng, clock = engine(fast=True, max_batch=1)
    a = await eng.admit(*prompt(1, 5000), 5)
    b = await eng.admit(*prompt(2, 5000), 5)  # no queueing either
    assert a.first_token_s == clock.t and b.first_token_s == clock.t
    assert eng.cache.counters.queries_tokens == 10_000
    eng.finish(a, "length", 5)
    eng.finish(b, "length", 5)


async def test_metrics_page_reflects_the_engine() -> None:
    eng, _ = engine()
    a = await eng.admit(*prompt(1, 100), 5)
    page = eng.render_metrics()
    assert 'vllm:num_requests_running{engine="0",model_name="agentx-sim"} 1.0' in page
    eng.finish(a, "stop", 5)
    page = eng.render_metrics()
    assert (
        'vllm:request_success_total{engine="0",model_name="agentx-sim",finished_reason="stop"} 1.0'
        in page
    )
    assert 'vllm:generation_tokens_total{engine="0",model_name="agentx-sim"} 5.0' in page
