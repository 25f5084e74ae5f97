"""The simulated engine: admission (``--max-batch``, KV capacity), the prefix cache, and the
latency model. No HTTP here; the server asks the engine *when* things happen.

Model (all times on the monotonic clock, seconds):

* A request waits FIFO until fewer than ``max_batch`` requests run and the KV cache can pin its
  blocks without over-committing (a lone request is always admitted), like vLLM's FCFS
  scheduler. The wait is its **queue time**.
* At admission the cache is looked up and the request's blocks pinned
  (:class:`agentx.kvcache.KVCache`). Its prefill needs ``computed / prefill_tps +
  offload_hits / offload_load_tps`` seconds of the engine's one **prefill lane**, served FIFO:
  a burst of long prompts queues behind itself as on a real GPU.
* The first token leaves at ``lane done + overhead``. So TTFT = queueing + uncached prompt /
  prefill rate + offloaded hits / load rate + fixed overhead.
* Each further token takes ``(1 + batch_slowdown * (running - 1)) / decode_tps`` seconds,
  re-evaluated per token with the batch running at that moment.
* The request holds its batch slot and KV blocks until its last token, then releases them.

``fast`` mode skips all of it: admission is immediate and no time is modelled (the cache is
still accounted, so usage and metrics stay meaningful).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from agentx.kvcache import Allocation, KVCache
from agentx.prefix import HashArray
from agentx.serve_sim.config import SimConfig
from agentx.serve_sim.vllm_metrics import Gauges, SimMetrics
from agentx.serve_sim.vllm_metrics import render as render_metrics


@dataclass(frozen=True, slots=True)
class Admission:
    """A running request: what the cache served and when its first token is due."""

    allocation: Allocation
    arrived_s: float
    admitted_s: float
    first_token_s: float

    @property
    def queue_s(self) -> float:
        return self.admitted_s - self.arrived_s


@dataclass(slots=True, eq=False)
class _Waiter:
    hashes: list[int]
    prompt_tokens: int
    output_tokens: int
    arrived_s: float
    future: asyncio.Future[Admission]


class Engine:
    """One simulated serving engine. Lives on one event loop; not thread-safe."""

    def __init__(self, config: SimConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.clock = clock
        self.cache = KVCache(config.kv_tokens, config.block_size, config.offload_tokens)
        self.metrics = SimMetrics()
        self.running = 0
        self._waiting: deque[_Waiter] = deque()
        self._lane_free_s = 0.0

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def itl_s(self) -> float:
        """Seconds per decoded token for each sequence, with the batch running now."""
        c = self.config
        return (1.0 + c.batch_slowdown * max(0, self.running - 1)) / c.decode_tps

    async def admit(self, hashes: HashArray, prompt_tokens: int, output_tokens: int) -> Admission:
        """Wait for a batch slot and KV room; pin the request's blocks; schedule its prefill.

        Cancelling the wait (client gone) leaves no trace; a granted admission must be handed
        back with :meth:`finish`."""
        blocks = hashes.tolist()
        arrived = self.clock()
        if self.config.fast:
            return self._start(blocks, prompt_tokens, output_tokens, arrived)
        loop = asyncio.get_running_loop()
        waiter = _Waiter(blocks, prompt_tokens, output_tokens, arrived, loop.create_future())
        self._waiting.append(waiter)
        self._schedule()
        try:
            return await waiter.future
        except asyncio.CancelledError:
            if waiter.future.done() and not waiter.future.cancelled():
                self.finish(waiter.future.result(), "abort", 0)
            else:
                waiter.future.cancel()
                with contextlib.suppress(ValueError):
                    self._waiting.remove(waiter)
                self._schedule()
            raise

    def _schedule(self) -> None:
        cache = self.cache
        while self._waiting and self.running < self.config.max_batch:
            head = self._waiting[0]
            if head.future.done():  # cancelled while waiting
                self._waiting.popleft()
                continue
            if self.running and not cache.can_allocate(
                head.hashes, head.prompt_tokens, head.output_tokens
            ):
                break  # FCFS: the head waits for KV room, and so does everyone behind it
            self._waiting.popleft()
            head.future.set_result(
                self._start(head.hashes, head.prompt_tokens, head.output_tokens, head.arrived_s)
            )

    def _start(
        self, blocks: list[int], prompt_tokens: int, output_tokens: int, arrived: float
    ) -> Admission:
        c = self.config
        alloc = self.cache.allocate(blocks, prompt_tokens, output_tokens)
        self.running += 1
        self.metrics.prompt_tokens += prompt_tokens
        now = self.clock()
        if c.fast:
            return Admission(alloc, arrived, now, now)
        busy = alloc.computed_tokens / c.prefill_tps + alloc.offload_hit_tokens / c.offload_load_tps
        self._lane_free_s = max(now, self._lane_free_s) + busy
        first = self._lane_free_s + c.overhead_ms / 1000.0
        return Admission(alloc, arrived, now, first)

    def finish(self, admission: Admission, reason: str, output_tokens: int) -> None:
        """The request ended (``stop``, ``length`` or ``abort``): free its slot and blocks."""
        self.cache.release(admission.allocation)
        self.running -= 1
        m = self.metrics
        m.generation_tokens += output_tokens
        m.finished[reason] = m.finished.get(reason, 0) + 1
        m.queue_s.observe(admission.queue_s)
        self._schedule()

    def observe_latency(self, ttft_s: float | None, e2e_s: float, itls_s: list[float]) -> None:
        m = self.metrics
        if ttft_s is not None:
            m.ttft_s.observe(ttft_s)
        m.e2e_s.observe(e2e_s)
        observe = m.itl_s.observe
        for v in itls_s:
            observe(v)

    def reset_prefix_cache(self) -> bool:
        """Drop every cached block (vLLM's ``/reset_prefix_cache``); refused (``False``) while
        requests run and hold blocks, as vLLM does. Counters are not reset."""
        if self.running or self.cache.pinned_blocks:
            return False
        self.cache.reset()
        return True

    def render_metrics(self) -> str:
        c = self.cache
        gauges = Gauges(
            self.running,
            self.waiting,
            c.usage,
            c.block_size,
            c.capacity_blocks,
            c.offload_capacity_blocks,
        )
        return render_metrics(self.config.model, self.metrics, self.cache.counters, gauges)
