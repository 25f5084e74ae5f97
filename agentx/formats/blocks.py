"""Block ids of any exchange, as the external formats (Mooncake, Weka) name prompts.

Both formats describe a prompt by its length and the ids of its token blocks, where an equal id
means an equal prefix up to the end of that block. For text exchanges the blocks are cut from
the request's cl100k rendering (:func:`agentx.prefixcache.tokens.request_tokens`, the same tokens
``agentx stats`` hashes), chained with :func:`agentx.prefixcache.hashing.block_hashes`, and numbered densely
in order of first appearance (:class:`IdMapper`). Hash-only exchanges (imported Weka/Mooncake)
at the target block size keep their ids; at another block size their blocks are laid out as the
synthetic tokens ``agentx convert --with-text`` would give them
(:func:`agentx.prefixcache.synth.hash_id_tokens`) and cut again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

from agentx.core.models import Exchange
from agentx.prefixcache.hashing import HashArray, block_hashes, chain_ids
from agentx.prefixcache.synth import hash_id_tokens
from agentx.prefixcache.tokens import TokenArray, count_tokens, request_tokens


def exchange_tokens(ex: Exchange) -> TokenArray:
    """The token ids a replay of ``ex`` sends: rendered text, or the synthetic hash-id layout."""
    if ex.hash_ids is not None and ex.hash_block_size:
        n = (
            ex.usage.prompt_tokens
            if ex.usage.prompt_tokens is not None
            else len(ex.hash_ids) * ex.hash_block_size
        )
        return hash_id_tokens(ex.hash_ids, ex.hash_block_size, n)
    return request_tokens(ex.api, ex.request)


def _tail_key(hashes: HashArray, tail: TokenArray) -> int:
    h = hashlib.blake2b(digest_size=8)
    h.update(hashes[-1:].tobytes() if hashes.size else b"")
    h.update(np.ascontiguousarray(tail, dtype=np.int64).tobytes())
    return int.from_bytes(h.digest(), "little")


def block_keys(ex: Exchange, block_size: int, *, partial: bool) -> tuple[int, list[int]]:
    """(prompt tokens, one key per block) where equal keys mean equal prefixes. With
    ``partial``, a last incomplete block gets a key too (Mooncake); else it is left out (Weka)."""
    if ex.hash_ids is not None and ex.hash_block_size == block_size:
        n = (
            ex.usage.prompt_tokens
            if ex.usage.prompt_tokens is not None
            else len(ex.hash_ids) * block_size
        )
        want = -(-n // block_size) if partial else n // block_size
        ids = ex.hash_ids[:want]
        keys = chain_ids(ids).tolist()
        if len(keys) < want:  # a tail the source left unnamed
            keys.append(
                _tail_key(np.asarray(keys[-1:], dtype=np.uint64), np.asarray([n], dtype=np.int64))
            )
        return n, keys
    toks = exchange_tokens(ex)
    hashes = block_hashes(toks, block_size)
    keys = hashes.tolist()
    rest = toks.size - hashes.size * block_size
    if partial and rest:
        keys.append(_tail_key(hashes, toks[hashes.size * block_size :]))
    return int(toks.size), keys


class IdMapper:
    """Dense ids for block keys, in order of first appearance."""

    def __init__(self, first: int) -> None:
        self._ids: dict[int, int] = {}
        self._next = first

    def __call__(self, keys: Iterable[int]) -> list[int]:
        out = []
        for k in keys:
            v = self._ids.get(k)
            if v is None:
                v = self._ids[k] = self._next
                self._next += 1
            out.append(v)
        return out


def output_tokens(ex: Exchange) -> int:
    """``completion_tokens``; else counted from the recorded answer; else ``max_tokens``; else 0
    (the external formats have no "unknown")."""
    if ex.usage.completion_tokens is not None:
        return ex.usage.completion_tokens
    r = ex.response
    parts = [p for p in (r.text, r.reasoning) if p]
    parts.extend(str(c.get("arguments", "")) for c in r.tool_calls if isinstance(c, dict))
    if parts:
        return sum(count_tokens(p) for p in parts)
    body = ex.request
    if isinstance(body, dict):
        for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            v = body.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                return v
    return 0
