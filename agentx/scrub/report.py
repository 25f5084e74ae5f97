"""What scrub did, rule by rule, and the theoretical hit rate before and after.

:class:`HitRateMeter` measures a stream of exchanges the way ``agentx stats`` does: text requests
through :func:`agentx.tokens.request_tokens` and :func:`agentx.prefix.block_hashes`, hash-only
rows through :func:`agentx.prefix.chain_ids` at their own block size. Hashing is incremental per
thread (:class:`agentx.prefix.RequestHasher`), so a long session costs its unique content.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from rich.table import Table

from agentx import tokens
from agentx.models import MODEL_APIS, Exchange
from agentx.prefix import DEFAULT_BLOCK_SIZE, HashArray, RequestHasher, chain_ids, hittable_blocks

SCHEMA = "agentx.scrub/1"


class BlockSet:
    """A set of 64-bit block hashes at ~8 bytes each (a Python set costs ~60): new hashes collect
    in a small set, which is sorted into a numpy level when full; levels merge like an LSM tree,
    so there are O(log n) of them and a lookup is a binary search per level."""

    def __init__(self, buffer: int = 1 << 18) -> None:
        self._buffer_size = buffer
        self._buf: set[int] = set()
        self._levels: list[npt.NDArray[np.uint64]] = []

    def __len__(self) -> int:
        return len(self._buf) + sum(int(x.size) for x in self._levels)

    def __contains__(self, h: int) -> bool:
        if h in self._buf:
            return True
        key = np.uint64(h)
        for level in self._levels:
            i = int(np.searchsorted(level, key))
            if i < level.size and level[i] == key:
                return True
        return False

    def update(self, hashes: list[int]) -> None:
        self._buf.update(hashes)
        if len(self._buf) >= self._buffer_size:
            level = np.fromiter(self._buf, dtype=np.uint64, count=len(self._buf))
            level.sort()
            self._buf.clear()
            self._levels.append(level)
            while len(self._levels) > 1 and self._levels[-2].size <= 2 * self._levels[-1].size:
                top = self._levels.pop()
                self._levels[-1] = _merge(self._levels[-1], top)


def _merge(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """Sorted union of two sorted arrays (about twice their size in transient memory)."""
    merged = np.concatenate((a, b))
    merged.sort(kind="stable")  # two sorted runs: timsort-like merge
    keep = np.empty(merged.size, dtype=bool)
    keep[:1] = True
    np.not_equal(merged[1:], merged[:-1], out=keep[1:])
    return merged[keep]


class CompactPrefixCache:
    """:class:`agentx.prefix.UnboundedPrefixCache` (same rules, same answers: tested) over a
    :class:`BlockSet`, an eighth of the memory, so the report's hit rate scales to large traces."""

    def __init__(self, block_size: int = DEFAULT_BLOCK_SIZE) -> None:
        self.block_size = block_size
        self._seen = BlockSet()
        self.prompt_tokens = 0
        self.hit_tokens = 0

    def observe(self, hashes: HashArray, prompt_tokens: int) -> None:
        lo, hi = 0, min(hittable_blocks(prompt_tokens, self.block_size), int(hashes.size))
        while lo < hi:  # presence is monotone along a chain: the largest k with block k-1 seen
            mid = (lo + hi + 1) // 2
            if int(hashes[mid - 1]) in self._seen:
                lo = mid
            else:
                hi = mid - 1
        if lo < hashes.size:
            self._seen.update(hashes[lo:].tolist())
        self.prompt_tokens += prompt_tokens
        self.hit_tokens += lo * self.block_size


TOKEN_CACHE_LIMIT = 2048  # segments


def trim_token_cache() -> None:
    """Keep ``agentx.tokens``' memo of segment encodings from growing with the trace.

    That memo is bounded in entries (131,072), not bytes: over a large trace it holds every
    segment's token array, gigabytes of them. The per-thread hasher only re-encodes what a
    request appends, so dropping the memo now and then costs little (a session's tools and
    system prompt are encoded again). Remove once ``agentx.tokens`` bounds its memo in bytes."""
    memo = getattr(tokens.encode, "__wrapped__", None) or getattr(tokens, "_encode_cached", None)
    info = getattr(memo, "cache_info", None)
    if info is not None and info().currsize > TOKEN_CACHE_LIMIT:
        memo.cache_clear()  # type: ignore[union-attr]


class HitRateMeter:
    """Theoretical (unbounded-cache) hit rate over exchanges in arrival order, counted as
    ``agentx stats`` counts it: model calls only; text rows rendered and hashed at
    ``block_size`` (incrementally per thread); hash-only rows on their own full blocks."""

    def __init__(self, block_size: int = DEFAULT_BLOCK_SIZE) -> None:
        self.block_size = block_size
        self.hasher = RequestHasher(block_size, max_threads=32)
        self._caches: dict[int, CompactPrefixCache] = {}
        self.requests = 0
        self.last_prompt_tokens: int | None = None  # of the last exchange observed

    def _cache(self, block_size: int) -> CompactPrefixCache:
        cache = self._caches.get(block_size)
        if cache is None:
            cache = self._caches[block_size] = CompactPrefixCache(block_size)
        return cache

    def observe(self, ex: Exchange) -> None:
        self.last_prompt_tokens = None
        if ex.api not in MODEL_APIS or "non_model" in ex.flags:
            return
        if ex.hash_ids is not None:
            if not ex.hash_block_size:
                return
            bs = ex.hash_block_size
            n = (
                ex.usage.prompt_tokens
                if ex.usage.prompt_tokens is not None
                else len(ex.hash_ids) * bs
            )
            full = min(len(ex.hash_ids), n // bs)
            self._cache(bs).observe(chain_ids(ex.hash_ids[:full]), n)
        else:
            hashes, n = self.hasher.hash_request(ex.api, ex.request, (ex.session_id, ex.thread_id))
            self._cache(self.block_size).observe(hashes, n)
        self.last_prompt_tokens = n
        self.requests += 1
        if self.requests % 256 == 0:
            trim_token_cache()

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self._caches.values())

    @property
    def hit_rate(self) -> float | None:
        prompt = self.prompt_tokens
        return sum(c.hit_tokens for c in self._caches.values()) / prompt if prompt else None


@dataclass(frozen=True, slots=True)
class RuleCount:
    name: str
    action: str
    reason: str
    count: int


@dataclass(frozen=True, slots=True)
class ScrubReport:
    input: str
    output: str
    exchanges_in: int
    exchanges_out: int
    rules: tuple[RuleCount, ...]
    secrets: dict[str, int] = field(default_factory=dict)  # occurrences replaced, by family
    secrets_distinct: dict[str, int] = field(default_factory=dict)
    block_size: int = 16
    hit_rate_before: float | None = None
    hit_rate_after: float | None = None

    def count(self, name: str) -> int:
        return sum(r.count for r in self.rules if r.name == name)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "input": self.input,
            "output": self.output,
            "exchanges": {"in": self.exchanges_in, "out": self.exchanges_out,
                          "dropped": self.exchanges_in - self.exchanges_out},
            "rules": [{"name": r.name, "action": r.action, "count": r.count, "reason": r.reason}
                      for r in self.rules],
            "secrets": {"replaced": self.secrets, "distinct": self.secrets_distinct},
            "theoretical_hit_rate": {"block_size": self.block_size, "before": self.hit_rate_before,
                                     "after": self.hit_rate_after},
        }  # fmt: skip


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def render_report(report: ScrubReport, *, all_rules: bool = False) -> Table:
    """A rich table: one row per rule that fired (every rule with ``all_rules``)."""
    table = Table(
        title=f"agentx scrub: {report.exchanges_in} exchanges in, {report.exchanges_out} out"
    )
    table.add_column("rule")
    table.add_column("action")
    table.add_column("count", justify="right")
    table.add_column("reason")
    for r in report.rules:
        if r.count or all_rules:
            table.add_row(r.name, r.action, str(r.count), r.reason)
    if report.secrets:
        families = ", ".join(f"{k} x{v}" for k, v in sorted(report.secrets.items()))
        table.add_row("", "", "", f"secrets: {families}")
    table.caption = (
        f"theoretical hit rate (block {report.block_size}): "
        f"{_pct(report.hit_rate_before)} before, {_pct(report.hit_rate_after)} after"
    )
    return table


def rule_counts(
    rules: Sequence[tuple[str, str, str]], counts: dict[str, int]
) -> tuple[RuleCount, ...]:
    return tuple(RuleCount(n, a, r, counts.get(n, 0)) for n, a, r in rules)
