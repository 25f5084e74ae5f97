"""A bounded KV block cache with vLLM's prefix-caching rules and an optional offload tier.

This is a model of a serving engine's KV-cache *bookkeeping*, not of its tensors: blocks are
named by the chained prefix hashes of :func:`agentx.prefixcache.hashing.block_hashes` (uint64), and the
state of every block lives in numpy arrays (:mod:`.cache`, :mod:`.table`, :mod:`.queue`), so a
100K-token prompt is a few dozen array operations, not 100K Python objects or ~6K dictionary
operations.

The rules, as vLLM's V1 KV-cache manager applies them:

* A request hits the longest run of *leading* blocks that are resident, capped at
  ``floor((n - 1) / block_size)`` blocks (:func:`agentx.prefixcache.cache.hittable_blocks`): the last
  prompt token is always computed.
* A running request *pins* every block it uses (refcount > 0); pinned blocks are never evicted.
* When a request finishes its blocks become evictable, in reverse order (its tail first), and
  eviction takes the least recently freed block: a shared system prompt outlives the turns
  built on it. The blocks without a prefix hash (the partial last prompt block, the output's
  blocks) are freed first, as unique entries that never hit: like vLLM's free queue, they stay
  in the LRU order and push older blocks out, rather than leaving holes.
* Capacity is ``capacity_tokens // block_size`` blocks. Usage (``vllm:kv_cache_usage_perc``)
  is the pinned fraction; cached-but-free blocks count as free, as in vLLM.

The optional **offload tier** (CPU DRAM, as vLLM's CPU offloading connector or LMCache) is a
victim cache: it receives every block evicted from the GPU tier and keeps its own LRU. A request
whose GPU hit stops short can continue its hit from the offload tier; those tokens are loaded,
not recomputed, and are reported apart (``external_kv_transfer`` in vLLM's metrics). A block
loaded back keeps its offload copy.

Admission is the caller's business (:meth:`KVCache.can_allocate`); when pinned demand alone
exceeds the capacity, :meth:`KVCache.allocate` over-commits rather than fail, and the cache
shrinks back to capacity as requests release.

Typical use, online (serve-sim) and offline (simulate)::

    cache = KVCache(capacity_tokens=160_000, block_size=16, offload_tokens=1_000_000)
    hashes = block_hashes(tokens, 16)
    alloc = cache.allocate(hashes, len(tokens), extra_tokens=max_output)  # admit: pin
    ...  # alloc.gpu_hit_tokens, alloc.offload_hit_tokens drive the latency model
    cache.release(alloc)  # finished: blocks become evictable
    # or, for a trace simulation without concurrency:
    gpu_hit, offload_hit = cache.observe(hashes, len(tokens))
"""

from agentx.prefixcache.kvcache.cache import Allocation, CacheCounters, KVCache

__all__ = ["Allocation", "CacheCounters", "KVCache"]
