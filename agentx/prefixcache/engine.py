"""The serving-engine model shared by ``serve-sim`` (real time) and ``simulate`` (virtual time):
admission, the KV cache, and the latency model. No clock, no I/O: the caller says what time it
is, so an asyncio server and a discrete-event loop drive the very same object.

Model (times in seconds on the caller's clock):

* A request waits FIFO until fewer than ``max_batch`` requests run and its **prompt** fits in
  the KV cache next to what the running requests pin (a lone request is always admitted), as
  vLLM's scheduler admits a waiting request only when its prompt's blocks can be allocated.
  The wait is its **queue time**. The cache is looked up at admission, not at arrival.
* At admission the request's blocks are pinned (:class:`agentx.prefixcache.kvcache.KVCache`), with its
  output's blocks (which vLLM allocates as it decodes; here at once, over-committing rather
  than preempting when the cache is full). Its prefill needs ``computed / prefill_tps +
  offload_hits / offload_load_tps`` seconds of the engine's one **prefill lane**, served FIFO.
* The first token is due at ``lane done + overhead``; each further token takes
  ``(1 + batch_slowdown * (running - 1)) / decode_tps`` seconds with the batch running then.
* The request holds its batch slot and blocks until its last token (:meth:`ServingEngine.finish`).

``fast`` skips queueing and timing (admission is immediate; the cache is still accounted).

    engine = ServingEngine(EngineParams(kv_tokens=160_000, block_size=16))
    ticket = engine.submit(hashes, prompt_tokens=5000, output_tokens=200, now=0.0)
    for t in engine.schedule(now=0.0):      # admitted, FCFS
        t.admission.first_token_s           # when its first token is due
    engine.finish(ticket.admission)         # then schedule() again
"""

from __future__ import annotations

import contextlib
from collections import deque
from dataclasses import dataclass

from agentx.core.options import Panel, option, parse_tokens
from agentx.prefixcache.hashing import DEFAULT_BLOCK_SIZE
from agentx.prefixcache.kvcache import Allocation, KVCache
from agentx.prefixcache.kvcache.cache import Hashes


@dataclass(frozen=True, slots=True)
class EngineParams:
    """The engine's knobs, each the option of ``serve-sim`` (all of them) and ``simulate`` (the
    engine panel's) that sets it. All rates are tokens per second; the defaults are serve-sim's
    documented ones (:mod:`agentx.serve_sim.config`)."""

    block_size: int = option(
        DEFAULT_BLOCK_SIZE,
        "--block-size",
        metavar="N",
        panel=Panel.CAPACITY,
        help="prefix-cache block size, tokens",
    )
    kv_tokens: int = option(
        163_840,
        "--kv-tokens",
        parse=parse_tokens,
        metavar="N",
        panel=Panel.CAPACITY,
        help="GPU KV-cache capacity, tokens (e.g. 160K, 8M, 8Mi)",
    )
    offload_tokens: int = option(
        0,
        "--offload-tokens",
        parse=parse_tokens,
        metavar="N",
        panel=Panel.CAPACITY,
        help="CPU offload tier capacity, tokens, e.g. 32M (0 = none)",
    )
    prefill_tps: float = option(  # one FIFO prefill lane
        8_000.0,
        "--prefill-tps",
        metavar="TOKENS/S",
        panel=Panel.ENGINE,
        help="prefill rate, uncached tokens/s",
    )
    decode_tps: float = option(  # with a batch of one
        60.0,
        "--decode-tps",
        metavar="TOKENS/S",
        panel=Panel.ENGINE,
        help="decode rate of one sequence, tokens/s",
    )
    batch_slowdown: float = option(
        0.015,
        "--batch-slowdown",
        metavar="F",
        panel=Panel.ENGINE,
        help="decode step stretch per extra running sequence",
    )
    offload_load_tps: float = option(
        100_000.0,
        "--offload-load-tps",
        metavar="TOKENS/S",
        panel=Panel.ENGINE,
        help="offloaded-hit load rate, tokens/s",
    )
    overhead_ms: float = option(
        10.0,
        "--overhead-ms",
        metavar="MS",
        panel=Panel.ENGINE,
        help="fixed per-request TTFT overhead, ms",
    )
    max_batch: int = option(  # vLLM's max_num_seqs
        256,
        "--max-batch",
        metavar="N",
        panel=Panel.ENGINE,
        help="max running requests; the rest wait",
    )
    fast: bool = option(  # no queueing, no timing
        False, "--fast", panel=Panel.ENGINE, help="no modelled latency: the loopback ceiling"
    )


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
class Ticket:
    """A submitted request; ``admission`` is set when the engine admits it."""

    hashes: Hashes  # chained block hashes, or dense ids (``dense_ids``)
    prompt_tokens: int
    output_tokens: int
    arrived_s: float
    admission: Admission | None = None
    cancelled: bool = False


class ServingEngine:
    """One simulated serving engine (not thread-safe; one caller drives it)."""

    def __init__(
        self, params: EngineParams, *, dense_ids: bool = False, cache: KVCache | None = None
    ) -> None:
        """``dense_ids``: requests name their blocks by dense ids, not hashes (``KVCache``).
        ``cache``: one built by the caller instead (e.g. an ``UnboundedKVCache``)."""
        self.params = params
        self.cache = (
            cache
            if cache is not None
            else KVCache(
                params.kv_tokens, params.block_size, params.offload_tokens, dense_ids=dense_ids
            )
        )
        self.running = 0
        self.kv_waits = 0  # times the head of the queue waited for KV room
        self._waiting: deque[Ticket] = deque()
        self._lane_free_s = 0.0

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def itl_s(self) -> float:
        """Seconds per decoded token for each sequence, with the batch running now."""
        p = self.params
        return (1.0 + p.batch_slowdown * max(0, self.running - 1)) / p.decode_tps

    def submit(self, hashes: Hashes, prompt_tokens: int, output_tokens: int, now: float) -> Ticket:
        """Queue a request (call :meth:`schedule` to admit what fits)."""
        ticket = Ticket(hashes, prompt_tokens, output_tokens, now)
        self._waiting.append(ticket)
        return ticket

    def cancel(self, ticket: Ticket) -> None:
        """A waiting request whose client left: it never runs."""
        ticket.cancelled = True
        with contextlib.suppress(ValueError):
            self._waiting.remove(ticket)

    def schedule(self, now: float) -> list[Ticket]:
        """Admit waiting requests, FCFS, while a batch slot is free and the head's prompt fits."""
        admitted: list[Ticket] = []
        cache = self.cache
        waiting = self._waiting
        while waiting and self.running < self.params.max_batch:
            head = waiting[0]
            if head.cancelled:
                waiting.popleft()
                continue
            if self.running and not cache.can_allocate(head.hashes, head.prompt_tokens):
                self.kv_waits += 1
                break  # FCFS: the head waits for KV room, and so does everyone behind it
            waiting.popleft()
            head.admission = self.start(
                head.hashes, head.prompt_tokens, head.output_tokens, head.arrived_s, now
            )
            admitted.append(head)
        return admitted

    def start(
        self, hashes: Hashes, prompt_tokens: int, output_tokens: int, arrived: float, now: float
    ) -> Admission:
        """Admit a request at once (``fast`` mode, or a caller with its own queue)."""
        p = self.params
        alloc = self.cache.allocate(hashes, prompt_tokens, output_tokens)
        self.running += 1
        if p.fast:
            return Admission(alloc, arrived, now, now)
        busy = alloc.computed_tokens / p.prefill_tps + alloc.offload_hit_tokens / p.offload_load_tps
        self._lane_free_s = max(now, self._lane_free_s) + busy
        return Admission(alloc, arrived, now, self._lane_free_s + p.overhead_ms / 1000.0)

    def finish(self, admission: Admission) -> None:
        """The request ended: free its slot and blocks (then :meth:`schedule` again)."""
        self.cache.release(admission.allocation)
        self.running -= 1
