"""The theoretical hit rate: what an unbounded prefix cache would serve, one implementation for
every stage (``stats``, ``scrub``'s report, ``simulate``, ``replay``'s theoretical pass, ``merge``).

- :class:`ExchangeBlocks`: the chained block hashes of an exchange. Only model calls count
  (:func:`is_model_call`). Text rows are rendered and hashed at ``block_size`` (incrementally per
  ``(session, thread)``, :class:`agentx.prefixcache.hashing.RequestHasher`); hash-only rows (Weka,
  Mooncake) use their own ``hash_ids`` at their own block size, or at a multiple of it when
  ``requested_block_size`` is one (:func:`hash_only_blocks`).
- :class:`HitRateMeter`: unbounded caches (one per block size in use) fed in arrival order, with
  exchanges (:meth:`HitRateMeter.observe`), request bodies as sent (:meth:`HitRateMeter.hash_body`)
  or requests already hashed (:meth:`HitRateMeter.observe_blocks`); :meth:`HitRateMeter.row`
  records what one request sent did to the cache as a :class:`TheoryRow` (``theory.parquet``).
- :func:`union_theory`: several shards' rows replayed as if they had shared one cache, exactly.

A run that routes its requests over several replicas keeps, beside the shared cache, one
unbounded cache per replica fed only what was routed to it (:meth:`HitRateMeter.row` with a
``replica``): the hit rate the replicas could reach, whose gap to the shared cache's is the
routing loss (docs/replay.md).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Collection, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agentx.apis import MODEL_APIS
from agentx.core.errors import UsageError
from agentx.core.flags import FLAG_NON_MODEL
from agentx.core.models import JSON, Exchange
from agentx.prefixcache.cache import (
    BlockSet,
    PrefixLookup,
    UnboundedPrefixCache,
    hit_blocks,
    hittable_blocks,
)
from agentx.prefixcache.hashing import (
    DEFAULT_BLOCK_SIZE,
    HashArray,
    IdChainer,
    chain_ids,
    make_hasher,
)
from agentx.prefixcache.tokenizer import Tokenizer
from agentx.results.stats import BlockSizeFigures


def is_model_call(ex: Exchange) -> bool:
    return is_model_row(ex.api, ex.flags)


def is_model_row(api: str | None, flags: Collection[str]) -> bool:
    """:func:`is_model_call` of a row's ``api`` and ``flags`` columns."""
    return api in MODEL_APIS and FLAG_NON_MODEL not in flags


def hash_row_counts(api: str | None, flags: Collection[str], hash_block_size: int | None) -> bool:
    """Whether a row with hash ids counts (:meth:`ExchangeBlocks.of`): a model call whose ids
    have a block size."""
    return is_model_row(api, flags) and bool(hash_block_size)


@dataclass(frozen=True, slots=True)
class HashOnlyShape:
    """What of a hash-only row's ids names cached blocks, at the block size used."""

    full_ids: int  # the leading ids that name full blocks (a last partial one is never cached)
    group: int  # ids per block: a block is every ``group``-th chained id
    prompt_tokens: int
    block_size: int


def hash_only_shape(
    n_ids: int, hash_block_size: int | None, prompt_tokens: int | None, requested: int | None
) -> HashOnlyShape:
    """The rule of :func:`hash_only_blocks` on a row's counts (for readers that hold its ids
    as arrays): the blocks are ``chained[:full_ids][group - 1 :: group]``."""
    native = hash_block_size or 1
    group = 1
    if requested is not None:
        if requested % native:
            raise UsageError(
                f"--block-size {requested}: this trace names blocks of {native} tokens by hash "
                f"id; give a multiple of {native}"
            )
        group = requested // native
    n = prompt_tokens
    if n is None:
        n = n_ids * native
    return HashOnlyShape(min(n_ids, n // native), group, n, native * group)


def hash_only_blocks(
    ex: Exchange, requested: int | None, chainer: IdChainer | None = None
) -> tuple[HashArray, int, int]:
    """``(chained block hashes, prompt tokens, block size)`` of a hash-only row (Weka, Mooncake).

    The row's own ``hash_block_size`` is used, or ``requested`` when it is a multiple of it (the
    blocks are coarsened exactly by :func:`agentx.prefixcache.hashing.chain_ids`); any other ``requested``
    raises :class:`UsageError` (the trace cannot say where such blocks would end). Shared with
    ``agentx simulate``, so both count the same blocks.
    With a ``chainer`` the hashes are chained incrementally per thread (the same values; valid
    until the thread's next row).
    """
    ids = ex.hash_ids or ()
    shape = hash_only_shape(len(ids), ex.hash_block_size, ex.usage.prompt_tokens, requested)
    full, group, n = shape.full_ids, shape.group, shape.prompt_tokens
    if chainer is None:
        return chain_ids(ids[:full], group), n, shape.block_size
    chained = chainer.chain((ex.session_id, ex.thread_id), ids)[:full]
    return (chained if group == 1 else chained[group - 1 :: group]), n, shape.block_size


class ExchangeBlocks:
    """``(chained block hashes, prompt tokens, block size)`` of each exchange, by the rules every
    stage counts with (``None`` for a row that does not count: not a model call, or hash ids
    without a block size).

    With ``incremental_ids`` hash-only rows are chained per thread (:class:`IdChainer`): the hashes
    returned are then a view valid until the thread's next row; without it each is a new array
    (for callers that keep them)."""

    def __init__(
        self,
        block_size: int = DEFAULT_BLOCK_SIZE,
        requested_block_size: int | None = None,
        *,
        max_threads: int = 64,
        tokenizer: Tokenizer | None = None,
        incremental_ids: bool = True,
    ) -> None:
        self.block_size = block_size  # of text rows
        self.requested_block_size = requested_block_size
        self.tokenizer = tokenizer  # of text rows (None: agentx's cl100k rendering)
        self.hasher = make_hasher(tokenizer, block_size, max_threads=max_threads)
        self.chainer = IdChainer() if incremental_ids else None

    def of(self, ex: Exchange) -> tuple[HashArray, int, int] | None:
        if ex.hash_ids is not None:
            if not hash_row_counts(ex.api, ex.flags, ex.hash_block_size):
                return None
            return hash_only_blocks(ex, self.requested_block_size, self.chainer)
        if not is_model_call(ex):
            return None
        hashes, n = self.hasher.hash_request(ex.api, ex.request, (ex.session_id, ex.thread_id))
        return hashes, n, self.block_size


def new_blocks(hashes: HashArray, hit_tokens: int, block_size: int) -> HashArray:
    """The blocks a request added to an unbounded cache: its chain from its hit on (a copy, not a
    view of the whole chain). What :class:`TheoryRow` keeps and :func:`union_theory` replays."""
    return hashes[hit_tokens // block_size :].copy()


class HitRateMeter:
    """Unbounded caches, one per block size in use, fed requests in arrival order."""

    def __init__(
        self,
        block_size: int = DEFAULT_BLOCK_SIZE,
        requested_block_size: int | None = None,
        *,
        max_threads: int = 64,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        self.blocks = ExchangeBlocks(
            block_size, requested_block_size, max_threads=max_threads, tokenizer=tokenizer
        )
        self.block_size = block_size  # of text rows
        self.caches: dict[int, UnboundedPrefixCache] = {}
        # (replica, block size) -> what a replica could hit of what was routed to it alone
        self.replica_caches: dict[tuple[int, int], UnboundedPrefixCache] = {}
        self.requests: Counter[int] = Counter()  # by block size
        self.last_prompt_tokens: int | None = None  # of the last exchange observed

    def _cache(self, bs: int) -> UnboundedPrefixCache:
        cache = self.caches.get(bs)
        if cache is None:
            cache = self.caches[bs] = UnboundedPrefixCache(bs)
        return cache

    def observe(self, ex: Exchange) -> int | None:
        """Count one exchange; its prompt tokens (rendered for text rows), ``None`` if not
        counted (not a model call, or a hash-only row without a block size)."""
        self.last_prompt_tokens = None
        blocks = self.blocks.of(ex)
        if blocks is None:
            return None
        hashes, n, bs = blocks
        self.observe_blocks(hashes, n, bs)
        self.last_prompt_tokens = n
        return n

    def hash_body(self, api: str, body: JSON, thread: Hashable = None) -> tuple[HashArray, int]:
        """A request body as sent, rendered and hashed at the text block size (not observed)."""
        return self.blocks.hasher.hash_request(api, body, thread)

    def observe_blocks(
        self, hashes: HashArray, prompt_tokens: int, block_size: int | None = None
    ) -> PrefixLookup:
        """Count one request already hashed (at ``block_size``, default the text block size)."""
        bs = self.block_size if block_size is None else block_size
        self.requests[bs] += 1
        return self._cache(bs).observe(hashes, prompt_tokens)

    def observe_routed(
        self, hashes: HashArray, prompt_tokens: int, replica: int, block_size: int | None = None
    ) -> tuple[PrefixLookup, PrefixLookup]:
        """Count one request routed to ``replica``: what the shared cache served it, and what
        the replica's own unbounded cache (fed only what was routed to it) did."""
        shared = self.observe_blocks(hashes, prompt_tokens, block_size)
        bs = self.block_size if block_size is None else block_size
        key = (replica, bs)
        cache = self.replica_caches.get(key)
        if cache is None:
            cache = self.replica_caches[key] = UnboundedPrefixCache(bs)
        return shared, cache.observe(hashes, prompt_tokens)

    def row(
        self,
        request_id: str,
        sent_ns: int,
        hashes: HashArray,
        prompt_tokens: int,
        replica: int | None = None,
    ) -> TheoryRow:
        """Count one request sent (hashed at the text block size; ``replica``: the replica it
        was routed to) and return what it did to the caches: the row ``theory.parquet``
        keeps for it."""
        bs = self.block_size
        if replica is None:
            lookup = self.observe_blocks(hashes, prompt_tokens)
            new = new_blocks(hashes, lookup.hit_tokens, bs)
            return TheoryRow(request_id, sent_ns, lookup.prompt_tokens, lookup.hit_tokens, new)
        lookup, local = self.observe_routed(hashes, prompt_tokens, replica)
        return TheoryRow(
            request_id,
            sent_ns,
            lookup.prompt_tokens,
            lookup.hit_tokens,
            new_blocks(hashes, lookup.hit_tokens, bs),
            replica,
            local.hit_tokens,
            new_blocks(hashes, local.hit_tokens, bs),
        )

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.caches.values())

    @property
    def hit_tokens(self) -> int:
        return sum(c.hit_tokens for c in self.caches.values())

    @property
    def hit_rate(self) -> float | None:
        """Hit tokens over prompt tokens, all block sizes together; ``None`` for no prompt."""
        prompt = self.prompt_tokens
        return self.hit_tokens / prompt if prompt else None

    @property
    def main_block_size(self) -> int:
        """The block size that saw the most prompt tokens (the text block size if none)."""
        if not self.caches:
            return self.block_size
        return max(self.caches.items(), key=lambda kv: kv[1].prompt_tokens)[0]

    def per_block_size(self) -> dict[int, BlockSizeFigures]:
        """What was counted at each block size, by increasing block size."""
        return {
            bs: BlockSizeFigures(self.requests[bs], c.prompt_tokens, c.hit_tokens)
            for bs, c in sorted(self.caches.items())
        }


# -- Several shards' theoretical caches as one -----------------------------------------------------
# A run keeps, per request sent (in send order), what its unbounded cache served (``hit_tokens``)
# and the chained block hashes the request added (:class:`TheoryRow`, ``theory.parquet``).
# :func:`union_theory` interleaves the shards' rows by send time and replays one cache over all of
# them. It is exact, with no full prompt stored:
#
# - within a shard the rows keep their order, so when a request comes up, every request its shard
#   sent before it has been replayed: its first ``hit_tokens`` blocks are in the shared cache;
# - the blocks past them are its ``new_blocks``, so the shared cache's hit is the largest ``k``
#   (capped, as vLLM does, at ``floor((prompt_tokens - 1) / block_size)`` blocks) such that
#   block ``k - 1`` is in the cache (presence is monotone along a chain: a chained hash brings
#   its whole prefix), found by binary search over ``new_blocks``;
# - the request then adds the blocks past that hit.
#
# So the union's hit of each request equals a single unbounded cache's over the interleaved
# order. When no block can be shared across shards (disjoint sessions whose cache-bust marker
# precedes everything they send), no shard's new block is found in another's, and the union's hit
# rate is exactly the token-weighted combination of the shards' per-request hits. When trees share
# a prefix before their marker (a system prompt: the harness's ``first_turn_prefix`` marker and
# agentx's ``--salt`` both mark the first user message), each shard paid for that prefix once and
# the union pays once: the combination undercounts and only this replay is exact.


@dataclass(frozen=True, slots=True)
class TheoryRow:
    """What one request sent did to its run's unbounded prefix cache and, when the run routed
    it to one of several replicas, to that replica's own (fed only what was routed there)."""

    request_id: str
    sent_ns: int  # on its run's clock
    prompt_tokens: int  # agentx's own count of what was sent
    hit_tokens: int  # what the cache served: a whole number of blocks
    new_blocks: npt.NDArray[np.uint64]  # chained hashes of blocks hit_tokens // block_size, ...
    replica: int | None = None  # the replica it was routed to (None: one endpoint)
    replica_hit_tokens: int | None = None  # what that replica's own cache served
    replica_new_blocks: npt.NDArray[np.uint64] | None = None  # what it added to that cache


def union_theory(
    shards: Sequence[tuple[Iterable[TheoryRow], int]], block_size: int
) -> Iterator[TheoryRow]:
    """The rows of every shard against one shared cache, in send order.

    ``shards`` holds each shard's rows (in its own send order) and the offset that moves its
    ``sent_ns`` onto the common clock. The rows yielded carry the common-clock ``sent_ns``, the
    shared cache's ``hit_tokens`` and the blocks they added to it (so a merge of merges is
    exact too). A routed row's replica figures are replayed the same way against one cache per
    replica, shared by the shards that routed to it (shards of one run used the same replicas).
    """
    seen = BlockSet()
    replicas: dict[int, BlockSet] = {}

    def timed(rows: Iterable[TheoryRow], offset: int) -> Iterator[tuple[int, TheoryRow]]:
        for r in rows:
            yield r.sent_ns + offset, r

    merged = heapq.merge(*(timed(rows, off) for rows, off in shards), key=lambda p: p[0])
    for sent_ns, row in merged:
        hit, added = _replay(row.prompt_tokens, row.hit_tokens, row.new_blocks, block_size, seen)
        if row.replica is None or row.replica_hit_tokens is None or row.replica_new_blocks is None:
            yield TheoryRow(row.request_id, sent_ns, row.prompt_tokens, hit, added)
            continue
        local = replicas.setdefault(row.replica, BlockSet())
        local_hit, local_added = _replay(
            row.prompt_tokens, row.replica_hit_tokens, row.replica_new_blocks, block_size, local
        )
        yield TheoryRow(
            row.request_id,
            sent_ns,
            row.prompt_tokens,
            hit,
            added,
            row.replica,
            local_hit,
            local_added,
        )


def _replay(
    prompt_tokens: int,
    hit_tokens: int,
    new: npt.NDArray[np.uint64],
    block_size: int,
    seen: BlockSet,
) -> tuple[int, npt.NDArray[np.uint64]]:
    """One row against a shared cache ``seen``: its hit there, and the blocks it added."""
    base = hit_tokens // block_size
    lo = hit_blocks(new, hittable_blocks(prompt_tokens, block_size) - base, seen)
    added = new[lo:]
    if added.size:
        seen.update(added.tolist())
    return (base + lo) * block_size, added
