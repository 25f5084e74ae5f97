"""The block-hash prefix model, with vLLM's rules.

A prompt of ``n`` tokens is cut into full blocks of ``block_size`` tokens; block ``i`` is named
by a hash chained over *all* tokens up to its end (so equal hashes mean equal prefixes), and a
request can hit at most its first ``floor((n - 1) / block_size)`` blocks: the last prompt token
is always computed. The theoretical hit rate is what an unbounded cache would serve.

Everything here is vectorised numpy on integer hashes: a 100K-token prompt costs one pass.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from agentx.apis.bodies import conversation
from agentx.core.models import JSON
from agentx.prefixcache import tokens
from agentx.prefixcache.segment_digests import (
    canonical,
    matching_windows,
    rest_digest,
    segment_key,
    window,
)
from agentx.prefixcache.tokenizer import Cl100kTokenizer
from agentx.prefixcache.tokenizer.types import Tokenizer

DEFAULT_BLOCK_SIZE = 16
HashArray = npt.NDArray[np.uint64]

_MASK = (1 << 64) - 1
_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd, so invertible mod 2**64
_powers: npt.NDArray[np.uint64] = np.ones(1, dtype=np.uint64)


def _powers_upto(n: int) -> npt.NDArray[np.uint64]:
    global _powers
    p = _powers  # read once: a thread hashing beside this one may replace it
    if p.size < n:
        size = max(n, 2 * p.size)
        p = np.empty(size, dtype=np.uint64)
        p[0] = 1
        with np.errstate(over="ignore"):
            # repeated doubling: p[k:2k] = p[0:k] * BASE**k (wrapping uint64 arithmetic)
            k = 1
            step = _BASE
            while k < size:
                m = min(k, size - k)
                p[k : k + m] = p[:m] * step
                step = np.uint64((int(step) * int(step)) & _MASK)
                k += m
        _powers = p
    return p[:n]


def _mix(x: npt.NDArray[np.uint64]) -> HashArray:
    """splitmix64 finaliser: spreads the polynomial hash over all 64 bits."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x = x ^ (x >> np.uint64(27))
        x = x * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return x


def _chain(values: npt.NDArray[np.uint64], ends: npt.NDArray[np.int64]) -> HashArray:
    """Prefix hash of ``values[:e]`` for each ``e`` in ``ends`` (polynomial, mod 2**64)."""
    if ends.size == 0:
        return np.zeros(0, dtype=np.uint64)
    with np.errstate(over="ignore"):
        terms = (values + np.uint64(1)) * _powers_upto(values.size)
        sums = np.cumsum(terms, dtype=np.uint64)
        return _mix(sums[ends - 1] ^ ends.astype(np.uint64))


def block_hashes(tokens: npt.ArrayLike, block_size: int = DEFAULT_BLOCK_SIZE) -> HashArray:
    """One chained hash per *full* block of ``tokens``."""
    toks = np.asarray(tokens, dtype=np.int64).astype(np.uint64)
    n_blocks = toks.size // block_size
    ends = (np.arange(1, n_blocks + 1, dtype=np.int64)) * block_size
    return _chain(toks[: n_blocks * block_size], ends)


def chain_ids(hash_ids: npt.ArrayLike, group: int = 1) -> HashArray:
    """Chain per-block ids of an imported trace (Weka, Mooncake) into prefix hashes.

    ``group`` > 1 coarsens the blocks: the result names every ``group``-th prefix, i.e. blocks
    ``group`` times as large. Exact, because a chained hash names its whole prefix.
    """
    ids = np.asarray(hash_ids, dtype=np.int64).astype(np.uint64)
    chained = _chain(ids, np.arange(1, ids.size + 1, dtype=np.int64))
    return chained if group == 1 else chained[group - 1 :: group]


def salted(hashes: HashArray, salt: int) -> HashArray:
    """Chained hashes as a prompt that starts with a per-``salt`` marker would have them: every
    block differs from the unsalted one and from every other salt's (a mixed salt, XORed)."""
    out: HashArray = hashes ^ _salt_key(salt)
    return out


@functools.lru_cache(maxsize=1024)
def _salt_key(salt: int) -> np.uint64:
    """A salt's mixed key (once a salt: a simulation salts every prompt of a tree copy)."""
    key: HashArray = _mix(np.array([salt * 2 + 1], dtype=np.uint64))
    return np.uint64(key[0])


def common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """Length of the longest common prefix of two id tuples, by C-level slice comparisons
    (fast when the tuples share their int objects, as consecutive rows of a thread do)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n - 1  # a[:lo] == b[:lo] and a[:hi + 1] != b[:hi + 1]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def extend_chain(
    ids: npt.ArrayLike, start: int, carry: np.uint64 | None
) -> tuple[npt.NDArray[np.uint64], HashArray]:
    """``(prefix sums, chained hashes)`` of per-block ids at positions ``start, start + 1, ...``
    of a chain whose prefix sum before ``start`` is ``carry`` (``None`` at position 0): the
    chain of a row that extends an earlier one costs only its new ids.
    ``chain_ids(a + b) == concat(chain_ids(a), extend_chain(b, len(a), sums_of_a[-1])[1])``."""
    tail = np.asarray(ids, dtype=np.int64).astype(np.uint64)
    end = start + tail.size
    with np.errstate(over="ignore"):
        sums = np.cumsum((tail + np.uint64(1)) * _powers_upto(end)[start:end], dtype=np.uint64)
        if carry is not None:
            sums += carry
    return sums, _mix(sums ^ np.arange(start + 1, end + 1, dtype=np.uint64))


@dataclass(slots=True)
class _Chain:
    ids: tuple[int, ...] = ()
    sums: npt.NDArray[np.uint64] = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    hashes: npt.NDArray[np.uint64] = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))


class IdChainer:
    """``chain_ids(ids)`` for a stream of hash-only requests, incrementally per thread.

    A turn repeats its thread's previous ids and appends a few: only the ids after the prefix
    they share are converted and chained (a 100-turn thread costs its new ids, not 100
    prompts). The result is a view that stays valid until the next call for the same thread.
    At most ``max_threads`` threads are remembered (LRU; ~50 KB each for a 100K-token prompt):
    a forgotten thread's next turn is chained whole, with the same result.
    """

    def __init__(self, max_threads: int = 512) -> None:
        self._max_threads = max_threads
        self._threads: OrderedDict[Hashable, _Chain] = OrderedDict()

    def chain(self, thread: Hashable, ids: tuple[int, ...]) -> HashArray:
        state = self._threads.pop(thread, None) or _Chain()
        self._threads[thread] = state
        while len(self._threads) > self._max_threads:
            self._threads.popitem(last=False)
        if not isinstance(ids, tuple):
            ids = tuple(ids)
        k = common_prefix(state.ids, ids) if state.ids else 0
        n = len(ids)
        state.sums = _grow(state.sums, n, k)
        state.hashes = _grow(state.hashes, n, k)
        if n > k:
            carry = state.sums[k - 1] if k else None
            state.sums[k:n], state.hashes[k:n] = extend_chain(ids[k:], k, carry)
        state.ids = ids
        return state.hashes[:n]


@dataclass(slots=True)
class _ThreadState:
    head: list[tokens.Source] = field(default_factory=list)  # tools, system
    conv: list[JSON] = field(default_factory=list)  # the conversation's items
    ends: list[int] = field(default_factory=list)  # token offset where each segment ends
    # the polynomial prefix sum (mod 2**64) of the tokens before each of ``ends``: a request
    # resumes hashing only where a segment or a tail piece ends, so the sums there are all it
    # needs, not one per token (8 bytes a token: ~1 MB for a 100K-token prompt)
    end_sums: list[int] = field(default_factory=list)
    hashes: npt.NDArray[np.uint64] = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    n_hashed: int = 0  # blocks of ``hashes`` that are valid
    # the last segment (piecewise encodings only): its index, its piece cuts, the tokens
    # before each and the prefix sum there, so a request that extends it (a synthetic prompt
    # is one growing message) encodes only what follows the last cut they share
    tail: int = -1
    tail_cuts: list[int] = field(default_factory=list)
    tail_tokens: list[int] = field(default_factory=list)
    tail_sums: list[int] = field(default_factory=list)
    # a compact hasher's instead of ``head``, ``conv`` and the tail's text: a digest of each
    # segment (its kind and value; empty for the tail, compared by its text), and of the tail's
    # text in windows up to each cut and from the last cut on
    # (:mod:`agentx.prefixcache.segment_digests`)
    keys: list[bytes] = field(default_factory=list)
    tail_windows: list[bytes] = field(default_factory=list)
    tail_rest: bytes = b""


def _same_value(a: JSON, b: JSON) -> bool:
    if a is b:
        return True
    # == alone would call 1, 1.0 and True equal, which render differently
    return bool(a == b) and canonical(a) == canonical(b)


def _common_head(new: list[tokens.Source], old: list[tokens.Source]) -> int:
    n = 0
    for (kind, value), (old_kind, old_value) in zip(new, old, strict=False):
        if kind != old_kind or not _same_value(value, old_value):
            break
        n += 1
    return n


def _common_items(new: list[JSON], old: list[JSON]) -> int:
    """Length of the common prefix of two conversations; identical objects are skipped in C."""
    limit = min(len(new), len(old))
    same = map(operator.is_, new[:limit], old[:limit])
    for i in itertools.compress(range(limit), map(operator.not_, same)):
        if not _same_value(new[i], old[i]):
            return i
    return limit


def _source(state: _ThreadState, i: int) -> tokens.Source:
    """Segment ``i`` of the thread's previous request."""
    if i < len(state.head):
        return state.head[i]
    return ("message", state.conv[i - len(state.head)])


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix of two strings (slices compare in C; ~2 passes)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while hi - lo > 1:  # a[:lo] == b[:lo], a[:hi] != b[:hi]
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _shared_cut(text: str, old: str, state: _ThreadState) -> tuple[int, int]:
    """(the last piece cut ``text`` shares with ``old``, the tail's tokens before it): a cut
    ``c`` depends on ``text[:c + 1]`` only (:func:`agentx.prefixcache.tokens.piece_cuts`), so
    every cut of ``old`` below their common prefix's length is a cut of ``text`` too, with the
    same pieces, hence the same tokens, before it; (0, 0) when they share none."""
    k = bisect.bisect_left(state.tail_cuts, _common_prefix(text, old))
    return (state.tail_cuts[k - 1], state.tail_tokens[k - 1]) if k else (0, 0)


def _grow(buf: npt.NDArray[np.uint64], n: int, keep: int) -> npt.NDArray[np.uint64]:
    if n <= buf.size:
        return buf
    grown = np.empty(max(n, 2 * buf.size), dtype=np.uint64)
    grown[:keep] = buf[:keep]
    return grown


class RequestHasher:
    """Block hashes of a stream of requests, incrementally.

    ``hash_request(api, body, thread)`` returns exactly
    ``block_hashes(tokens.request_tokens(api, body), block_size)`` and the token count, but only
    renders, tokenizes and hashes what the request changed relative to the previous request of
    the same ``thread``: a session of n turns costs O(its unique content), not O(n^2).
    Bodies are assumed not to be mutated after they were passed in (unchanged items are
    recognised by identity first). At most ``max_threads`` threads are remembered (LRU).

    ``compact``: a thread keeps a digest of each segment's value and of its last segment's text
    every piece (:data:`tokens.PIECE_CHARS` characters), not the values and the text: a few KB
    for a 100K-token prompt instead of the prompt, parsed. The same hashes; each request then
    digests its whole prompt (~1 GB/s), which costs nothing extra only where bodies are parsed
    afresh each time (no item is ever the previous request's object: a log of bodies sent).
    """

    def __init__(
        self,
        block_size: int = DEFAULT_BLOCK_SIZE,
        encoding: str = tokens.DEFAULT_ENCODING,
        max_threads: int = 64,
        *,
        compact: bool = False,
    ) -> None:
        if block_size < 1:
            raise ValueError("block_size must be >= 1")
        self.block_size = block_size
        self.encoding = encoding
        self.compact = compact
        self._max_threads = max_threads
        self._threads: OrderedDict[Hashable, _ThreadState] = OrderedDict()

    def hash_request(self, api: str, body: JSON, thread: Hashable = None) -> tuple[HashArray, int]:
        """(chained hashes of the full blocks, number of prompt tokens) of one request."""
        state = self._threads.pop(thread, None) or _ThreadState()
        self._threads[thread] = state
        while len(self._threads) > self._max_threads:
            self._threads.popitem(last=False)

        head = tokens.head_sources(api, body)
        conv = conversation(api, body) if isinstance(body, dict) else []
        compact = self.compact
        piecewise = self.encoding in tokens.PIECEWISE_ENCODINGS
        last = len(head) + len(conv) - 1
        tail_text, tail_match = "", 0  # a compact hasher's tail, compared: its windows alike
        if compact:
            segments = [*head, *(("message", item) for item in conv)]
            keep, keys, tail_text, tail_match = self._compact_keep(segments, state, piecewise)
        else:
            keep = _common_head(head, state.head)
            if keep == len(head) == len(state.head):
                keep += _common_items(conv, state.conv)
        start = state.ends[keep - 1] if keep else 0
        base = state.end_sums[keep - 1] if keep else 0  # the prefix sum before ``start``
        ends = state.ends[:keep]
        n_kept = keep  # segments whose sums are known
        tail_at = tail_kept = -1  # the tail's first token; its cuts whose sums are known
        arrays: list[tokens.TokenArray] = []
        offset = start
        for i in range(keep, last + 1):
            src = head[i] if i < len(head) else ("message", conv[i - len(head)])
            text = tail_text if compact and i == state.tail == keep else tokens.render_source(src)
            if i < last or not piecewise:
                arr = tokens.encode(text, self.encoding)
                arrays.append(arr)
                offset += int(arr.size)
                ends.append(offset)
                continue
            cut = reused = 0
            tail_at = offset
            if i == keep == state.tail:  # the previous request's last segment, changed
                if compact:
                    k = tail_match
                    cut, reused = (
                        (state.tail_cuts[k - 1], state.tail_tokens[k - 1]) if k else (0, 0)
                    )
                else:
                    old = tokens.render_source(_source(state, i))
                    cut, reused = _shared_cut(text, old, state)
                if cut:  # the sums up to the cut are still valid
                    base = state.tail_sums[bisect.bisect_left(state.tail_cuts, cut)]
                start = offset = offset + reused
            cuts, pieces = tokens.encode_pieces_from(text, cut, self.encoding)
            arrays.extend(pieces)
            tail_kept = bisect.bisect_right(state.tail_cuts, cut) if cut else 0
            before = itertools.accumulate((int(a.size) for a in pieces[:-1]), initial=reused)
            state.tail_tokens = [*state.tail_tokens[:tail_kept], *itertools.islice(before, 1, None)]
            state.tail_cuts = [*state.tail_cuts[:tail_kept], *cuts]
            if compact:
                cuts_all = state.tail_cuts
                windows = (window(text, cuts_all, j) for j in range(tail_kept, len(cuts_all)))
                state.tail_windows = [*state.tail_windows[:tail_kept], *windows]
                state.tail_rest = rest_digest(text, cuts_all)
            offset += sum(int(a.size) for a in pieces)
            ends.append(offset)
        if keep <= last:
            state.tail = last if piecewise else -1
        elif state.tail != last:  # cut to a prefix: the remembered tail is gone
            state.tail = -1
        n = offset
        sums = np.zeros(0, dtype=np.uint64)  # the prefix sums through tokens start+1..n
        if n > start:
            new = tokens.concat(arrays).astype(np.uint64)
            with np.errstate(over="ignore"):
                sums = np.cumsum((new + np.uint64(1)) * _powers_upto(n)[start:n], dtype=np.uint64)
                if base:
                    sums += np.uint64(base)

        def sum_at(end: int) -> int:  # the prefix sum of the tokens before ``end`` >= start
            return int(sums[end - start - 1]) if end > start else base

        state.end_sums = [*state.end_sums[:n_kept], *(sum_at(e) for e in ends[n_kept:])]
        if tail_kept >= 0:
            new_cuts = state.tail_tokens[tail_kept:]
            new_sums = (sum_at(tail_at + t) for t in new_cuts)
            state.tail_sums = [*state.tail_sums[:tail_kept], *new_sums]
        if compact:
            if keys and state.tail != last and not keys[last]:  # no longer compared by text
                keys[last] = segment_key(segments[last])
            state.keys = keys
        else:
            state.head, state.conv = head, conv
        state.ends = ends
        # blocks that end inside the unchanged prefix keep their hashes
        bs = self.block_size
        first = min(state.n_hashed, start // bs)
        n_blocks = n // bs
        state.hashes = _grow(state.hashes, n_blocks, first)
        if n_blocks > first:
            block_ends = np.arange(first + 1, n_blocks + 1, dtype=np.uint64) * np.uint64(bs)
            at = (block_ends - np.uint64(start + 1)).astype(np.intp)  # all end after ``start``
            state.hashes[first:n_blocks] = _mix(sums[at] ^ block_ends)
        state.n_hashed = n_blocks
        return state.hashes[:n_blocks].copy(), n

    def forget(self, thread: Hashable) -> None:
        """Drop the thread's state (it sends no more): a later request of it is hashed whole."""
        self._threads.pop(thread, None)

    @staticmethod
    def _compact_keep(
        segments: list[tokens.Source], state: _ThreadState, piecewise: bool
    ) -> tuple[int, list[bytes], str, int]:
        """A compact hasher's comparison with the thread's previous request: (segments kept,
        each segment's key, and when the previous tail was compared, the new text there and
        its windows alike). The tail (the last segment, piecewise) gets no key: it is compared
        by its text, rendered anyway when it changed (a growing message is never dumped and
        digested whole). A segment is kept when its key is the previous one's, or for the
        previous tail, when its text is."""
        last = len(segments) - 1
        keys = [segment_key(s) for s in segments[:last]]
        if segments:
            keys.append(b"" if piecewise else segment_key(segments[last]))
        old = state.keys
        keep, text, match = 0, "", 0
        for i in range(min(len(segments), len(old))):
            if i == state.tail:  # the previous tail: compared by its text
                text = tokens.render_source(segments[i])
                match = matching_windows(text, state.tail_cuts, state.tail_windows)
                cuts = state.tail_cuts
                if match < len(cuts) or rest_digest(text, cuts) != state.tail_rest:
                    break
                if i < last:  # kept, and no longer the tail: keyed by value from now on
                    keys[i] = segment_key(segments[i])
            elif (keys[i] or segment_key(segments[i])) != old[i] or not old[i]:
                break
            keep = i + 1
        return keep, keys, text, match


class Hasher(Protocol):
    def hash_request(self, api: str, body: JSON, thread: Hashable = None) -> tuple[HashArray, int]:
        """(chained hashes of the full blocks, prompt tokens) of one request."""
        ...

    def forget(self, thread: Hashable) -> None:
        """The thread sends no more: what is kept for it may go."""
        ...


class TokenizerHasher:
    """Block hashes of each request under ``tokenizer``, the whole prompt every time."""

    def __init__(self, tokenizer: Tokenizer, block_size: int) -> None:
        if block_size < 1:
            raise ValueError("block_size must be >= 1")
        self.tokenizer = tokenizer
        self.block_size = block_size

    def hash_request(self, api: str, body: JSON, thread: Hashable = None) -> tuple[HashArray, int]:
        ids = self.tokenizer.request_tokens(api, body)
        return block_hashes(ids, self.block_size), int(ids.size)

    def forget(self, thread: Hashable) -> None:
        pass  # nothing is kept per thread


def make_hasher(
    tokenizer: Tokenizer | None, block_size: int, *, max_threads: int = 64, compact: bool = False
) -> Hasher:
    """The incremental cl100k hasher for the default tokenizer, else a whole-prompt one.

    agentx's own rendering is prefix-stable, so :class:`RequestHasher` hashes incrementally per
    thread; a chat template can rewrite history (a date, the last message marked), so other
    tokenizers tokenize and hash the whole prompt every time (Rust-fast for HF). ``compact``:
    :class:`RequestHasher`'s (digests kept, not the prompts)."""
    if tokenizer is None or isinstance(tokenizer, Cl100kTokenizer):
        return RequestHasher(block_size, max_threads=max_threads, compact=compact)
    return TokenizerHasher(tokenizer, block_size)
