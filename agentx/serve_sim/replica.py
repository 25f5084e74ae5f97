"""serve-sim's replica: the shared model of :mod:`agentx.prefixcache.engine` (admission queue, KV cache,
prefill lane, decode speed) driven in real time on the server's event loop, plus its Prometheus
counters. No HTTP here; the server asks the engine *when* things happen.

A request ``await``\\ s :meth:`Replica.admit` (its FIFO wait is the queue time), streams its
tokens on the schedule the admission gives (first token at ``first_token_s``, then
:meth:`Replica.itl_s` per token with the batch running at that moment), and hands its admission
back with :meth:`Replica.finish`, which admits whoever waits next. ``agentx simulate`` drives
the same :class:`agentx.prefixcache.engine.ServingEngine` on a virtual clock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from agentx.prefixcache.engine import Admission, ServingEngine, Ticket
from agentx.prefixcache.hashing import HashArray
from agentx.prefixcache.kvcache import KVCache
from agentx.serve_sim.config import SimConfig
from agentx.serve_sim.vllm_metrics import Gauges, SimMetrics
from agentx.serve_sim.vllm_metrics import render as render_metrics

__all__ = ["Admission", "Replica"]


class Replica:
    """One simulated serving replica. Lives on one event loop; not thread-safe."""

    def __init__(self, config: SimConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.clock = clock
        self.core = ServingEngine(config.engine)
        self.metrics = SimMetrics()
        self.created_s = time.time()  # the counters' start (their `_created` samples)
        self._futures: dict[int, asyncio.Future[Admission]] = {}

    @property
    def cache(self) -> KVCache:
        return self.core.cache

    @property
    def running(self) -> int:
        return self.core.running

    @property
    def waiting(self) -> int:
        return self.core.waiting

    def itl_s(self) -> float:
        return self.core.itl_s()

    def _admitted(self, adm: Admission) -> Admission:
        self.metrics.prompt_tokens += adm.allocation.prompt_tokens
        return adm

    async def admit(self, hashes: HashArray, prompt_tokens: int, output_tokens: int) -> Admission:
        """Wait for a batch slot and KV room; pin the request's blocks; schedule its prefill.

        Cancelling the wait (client gone) leaves no trace; a granted admission must be handed
        back with :meth:`finish`."""
        now = self.clock()
        core = self.core
        if self.config.engine.fast:
            return self._admitted(core.start(hashes, prompt_tokens, output_tokens, now, now))
        ticket = core.submit(hashes, prompt_tokens, output_tokens, now)
        future: asyncio.Future[Admission] = asyncio.get_running_loop().create_future()
        self._futures[id(ticket)] = future
        self._schedule()
        try:
            return await future
        except asyncio.CancelledError:
            if ticket.admission is not None:  # admitted just as the client left
                self.finish(ticket.admission, "abort", 0)
            else:
                core.cancel(ticket)
                self._futures.pop(id(ticket), None)
                self._schedule()
            raise

    def _schedule(self) -> None:
        for ticket in self.core.schedule(self.clock()):
            self._grant(ticket)

    def _grant(self, ticket: Ticket) -> None:
        future = self._futures.pop(id(ticket))
        assert ticket.admission is not None
        adm = self._admitted(ticket.admission)
        if not future.done():
            future.set_result(adm)

    def finish(self, admission: Admission, reason: str, output_tokens: int) -> None:
        """The request ended (``stop``, ``length`` or ``abort``): free its slot and blocks."""
        self.core.finish(admission)
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
        return render_metrics(
            self.config.model,
            self.metrics,
            self.cache.counters,
            gauges,
            created_s=self.created_s,
        )
