"""`KVCache` (block state in numpy arrays) against the block-at-a-time reference model
(`scripts/kvcache_reference.py`: dicts and an OrderedDict, the implementation agentx shipped
before), side by side in one run, on two workloads:

- growing: 8 threads growing by 30 blocks a turn to 3,000 blocks of 64 tokens, each turn
  looked up, allocated and released (docs/benchmarks.md, "KVCache");
- corpus: 48 agent threads of ~1,600-block prompts (100K tokens at block size 64) growing by
  20 blocks a turn, 16 of them in flight at a time, in a cache of 40K blocks with a 100K-block
  offload tier: evictions and offload hits on every step.

Prints CPU seconds per operation for both and the ratio; both caches must agree on every hit.

    .venv/bin/python scripts/bench_kvcache.py
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from kvcache_reference import ReferenceKVCache  # scripts/, beside this file

from agentx.prefixcache.kvcache import KVCache

BS = 64


Spent = dict[str, float]


def _timed(spent: Spent, op: str, call: Any, *args: Any) -> Any:
    t0 = time.process_time()
    out = call(*args)
    spent[op] += time.process_time() - t0
    return out


def _send(cache: Any, spent: Spent, hits: list[tuple[int, int]], h: Any, n: int, out: int) -> Any:
    """Look a request up and allocate it, timed; its hits recorded."""
    _timed(spent, "lookup", cache.lookup, h, n)
    a = _timed(spent, "allocate", cache.allocate, h, n, out)
    hits.append((a.gpu_hit_tokens, a.offload_hit_tokens))
    return a


def growing(cache: Any) -> tuple[Spent, list[tuple[int, int]]]:
    threads = [np.arange(t * 10**6, t * 10**6 + 3000, dtype=np.uint64) for t in range(8)]
    spent = {"lookup": 0.0, "allocate": 0.0, "release": 0.0}
    hits: list[tuple[int, int]] = []
    for n in range(40, 3000, 30):
        for th in threads:
            a = _send(cache, spent, hits, th[:n], n * BS + 5, 200)
            _timed(spent, "release", cache.release, a)
    return spent, hits


def corpus(cache: Any) -> tuple[Spent, list[tuple[int, int]]]:
    rng = np.random.default_rng(0)
    threads = [
        rng.integers(0, 2**63, 1600 + 20 * 60, dtype=np.int64).view(np.uint64) for _ in range(48)
    ]
    length = [1600] * 48
    spent = {"lookup": 0.0, "allocate": 0.0, "release": 0.0}
    hits: list[tuple[int, int]] = []
    running: list[Any] = []
    for _ in range(48 * 60):
        t = int(rng.integers(48))
        length[t] = min(length[t] + 20, threads[t].size)
        running.append(_send(cache, spent, hits, threads[t][: length[t]], length[t] * BS + 17, 300))
        if len(running) > 16:
            _timed(spent, "release", cache.release, running.pop(int(rng.integers(len(running)))))
    return spent, hits


def main() -> None:
    for name, work, make in (
        ("growing", growing, lambda cls: cls(50_000 * BS, BS)),
        ("corpus", corpus, lambda cls: cls(40_000 * BS, BS, 100_000 * BS)),
    ):
        ref_cache, new_cache = make(ReferenceKVCache), make(KVCache)
        ref, ref_hits = work(ref_cache)
        new, new_hits = work(new_cache)
        assert ref_hits == new_hits, f"{name}: the two caches disagree"
        assert ref_cache.counters == new_cache.counters, name
        c = new_cache.counters
        print(
            f"{name}: {len(new_hits):,} requests, hit rate {c.hit_rate:.4f}, "
            f"{c.evicted_blocks:,} evicted, {c.offload_hit_tokens // BS:,} offload-hit blocks"
        )
        for op in ref:
            print(
                f"  {op:9s} reference {ref[op]:6.3f} s   arrays {new[op]:6.3f} s   "
                f"{ref[op] / max(new[op], 1e-9):5.1f}x"
            )
        total_ref, total_new = sum(ref.values()), sum(new.values())
        print(
            f"  {'total':9s} reference {total_ref:6.3f} s   arrays {total_new:6.3f} s   "
            f"{total_ref / max(total_new, 1e-9):5.1f}x"
        )


if __name__ == "__main__":
    main()
