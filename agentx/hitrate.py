"""The theoretical (unbounded-cache) prefix hit rate of a stream of exchanges.

One meter, shared by ``agentx stats`` and ``agentx scrub``'s report, so both count the same
blocks. Only model calls count (:func:`is_model_call`). Text rows are rendered and hashed at
``block_size`` (incrementally per ``(session, thread)``, :class:`agentx.prefix.RequestHasher`);
hash-only rows (Weka, Mooncake) use their own ``hash_ids`` at their own block size, or at a
multiple of it when ``requested_block_size`` is one. Each block size in use has its own
:class:`agentx.prefix.UnboundedPrefixCache`, fed in arrival order.
"""

from __future__ import annotations

from collections import Counter

from agentx.errors import UsageError
from agentx.flags import FLAG_NON_MODEL
from agentx.models import MODEL_APIS, Exchange
from agentx.prefix import (
    DEFAULT_BLOCK_SIZE,
    HashArray,
    IdChainer,
    UnboundedPrefixCache,
    chain_ids,
)
from agentx.tokenizer import Tokenizer, make_hasher


def is_model_call(ex: Exchange) -> bool:
    return ex.api in MODEL_APIS and FLAG_NON_MODEL not in ex.flags


def hash_only_blocks(
    ex: Exchange, requested: int | None, chainer: IdChainer | None = None
) -> tuple[HashArray, int, int]:
    """``(chained block hashes, prompt tokens, block size)`` of a hash-only row (Weka, Mooncake).

    The row's own ``hash_block_size`` is used, or ``requested`` when it is a multiple of it (the
    blocks are coarsened exactly by :func:`agentx.prefix.chain_ids`); any other ``requested``
    raises :class:`UsageError` (the trace cannot say where such blocks would end). Shared with
    ``agentx simulate``, so both count the same blocks.
    With a ``chainer`` the hashes are chained incrementally per thread (the same values; valid
    until the thread's next row).
    """
    ids = ex.hash_ids or ()
    native = ex.hash_block_size or 1
    group = 1
    if requested is not None:
        if requested % native:
            raise UsageError(
                f"--block-size {requested}: this trace names blocks of {native} tokens by hash "
                f"id; give a multiple of {native}"
            )
        group = requested // native
    n = ex.usage.prompt_tokens
    if n is None:
        n = len(ids) * native
    full = min(len(ids), n // native)  # a last partial block (Mooncake) is never cached
    if chainer is None:
        return chain_ids(ids[:full], group), n, native * group
    chained = chainer.chain((ex.session_id, ex.thread_id), ids)[:full]
    return (chained if group == 1 else chained[group - 1 :: group]), n, native * group


class HitRateMeter:
    """Unbounded caches, one per block size in use, fed exchanges in arrival order."""

    def __init__(
        self,
        block_size: int = DEFAULT_BLOCK_SIZE,
        requested_block_size: int | None = None,
        *,
        max_threads: int = 64,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        self.block_size = block_size  # of text rows
        self.requested_block_size = requested_block_size
        self.tokenizer = tokenizer  # of text rows (None: agentx's cl100k rendering)
        self.hasher = make_hasher(tokenizer, block_size, max_threads=max_threads)
        self.chainer = IdChainer()
        self.caches: dict[int, UnboundedPrefixCache] = {}
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
        if not is_model_call(ex):
            return None
        if ex.hash_ids is not None:
            if not ex.hash_block_size:
                return None
            hashes, n, bs = hash_only_blocks(ex, self.requested_block_size, self.chainer)
        else:
            hashes, n = self.hasher.hash_request(ex.api, ex.request, (ex.session_id, ex.thread_id))
            bs = self.block_size
        self._cache(bs).observe(hashes, n)
        self.requests[bs] += 1
        self.last_prompt_tokens = n
        return n

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

    def per_block_size(self) -> dict[str, dict[str, int]]:
        """``{block size: {requests, prompt_tokens, hit_tokens}}``, by increasing block size."""
        return {
            str(bs): {
                "requests": self.requests[bs],
                "prompt_tokens": c.prompt_tokens,
                "hit_tokens": c.hit_tokens,
            }
            for bs, c in sorted(self.caches.items())
        }
