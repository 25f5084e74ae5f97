"""The recorded workload of a hash-only agentx trace, from its block-id columns as arrays.

The same requests and blocks as reading the trace's exchanges (which rows count and how a row becomes blocks:
:func:`agentx.prefixcache.theory.hash_row_counts` and
:func:`~agentx.prefixcache.theory.hash_only_shape`; the chaining:
:func:`agentx.prefixcache.hashing.extend_chain`), without building an exchange or an id tuple
per row: a row's stored delta extends its base's chain, whose prefix sums and hashes are kept
only until its last extender has read them (which then takes the buffers over instead of
copying them). A trace with a counted text row is left to the exchange path (:class:`TextRow`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agentx.core.errors import TraceError
from agentx.prefixcache.hashing import HashArray, extend_chain
from agentx.prefixcache.theory import hash_only_shape, hash_row_counts, is_model_row
from agentx.store.blockcols import BlockFile


@dataclass(slots=True)
class _Chain:
    """A row's chain that later rows extend: prefix sums and hashes (``n`` valid of each)."""

    sums: npt.NDArray[np.uint64]
    hashes: HashArray
    n: int


@dataclass(frozen=True, slots=True)
class HashOnlyRow:
    """A counted row: its blocks' chained hashes (valid until the next row is read) and what
    the simulator takes of its other columns."""

    hashes: HashArray
    prompt_tokens: int
    block_size: int
    completion_tokens: int | None
    start_wall_ns: int
    e2e_ns: int | None
    api_time_s: float | None
    session_id: str
    thread_id: str


class TextRow(Exception):
    """A counted row is text (hashed from its rendered request): read the trace as exchanges."""


def hash_only_rows(files: Iterable[BlockFile], requested: int | None) -> Iterator[HashOnlyRow]:
    """The counted rows of a hash-only trace in trace order; raises :class:`TextRow` at the
    first counted row without hash ids."""
    for f in files:
        refs = dict(f.base_refs)
        kept: dict[str, _Chain] = {}
        for rows in f.rows:
            c = rows.columns
            for i in range(rows.num_rows):
                api, flags = c["api"][i], c["flags"][i] or ()
                if not isinstance(api, str):  # as the row reader: a row without an API is void
                    raise TraceError(f"corrupt trace (request {c['request_id'][i]} has no api)")
                if not rows.has_ids[i]:
                    if is_model_row(api, flags):
                        raise TextRow(c["request_id"][i])
                    continue
                rid = c["request_id"][i]
                delta = rows.values[rows.starts[i] : rows.ends[i]]
                chain = _extend(
                    kept, refs, rid, c["hash_ids_base_id"][i], c["hash_ids_base_len"][i], delta
                )
                if refs.get(rid, 0) > 0:
                    kept[rid] = chain
                native = c["hash_block_size"][i]
                if not hash_row_counts(api, flags, native):
                    continue
                shape = hash_only_shape(chain.n, native, c["prompt_tokens"][i], requested)
                chained = chain.hashes[: shape.full_ids]
                if shape.group > 1:
                    chained = chained[shape.group - 1 :: shape.group]
                yield HashOnlyRow(
                    chained,
                    shape.prompt_tokens,
                    shape.block_size,
                    c["completion_tokens"][i],
                    c["start_wall_ns"][i],
                    c["e2e_ns"][i],
                    c["api_time_s"][i],
                    c["session_id"][i],
                    c["thread_id"][i],
                )


def _extend(
    kept: dict[str, _Chain],
    refs: dict[str, int],
    rid: str,
    base_id: str | None,
    base_len: int | None,
    delta: npt.NDArray[np.int64],
) -> _Chain:
    """The row's chain: its base's first ``base_len`` entries, then its delta chained on."""
    k = 0
    base: _Chain | None = None
    if base_id is not None:
        base = kept.get(base_id)
        k = base_len or 0
        if base is None or k > base.n:
            raise TraceError(
                f"corrupt trace (row {rid} extends the ids of {base_id}, not before it)"
            )
        refs[base_id] -= 1
        if refs[base_id] <= 0:
            del kept[base_id]
        else:
            base = _Chain(base.sums[:k].copy(), base.hashes[:k].copy(), k)  # others read it
    n = k + int(delta.size)
    if base is None:
        sums = np.empty(n, dtype=np.uint64)
        hashes = np.empty(n, dtype=np.uint64)
    elif n > base.sums.size:  # taken over, no room: a larger buffer
        size = max(n, 2 * base.sums.size)
        sums, hashes = np.empty(size, dtype=np.uint64), np.empty(size, dtype=np.uint64)
        sums[:k], hashes[:k] = base.sums[:k], base.hashes[:k]
    else:
        sums, hashes = base.sums, base.hashes
    if n > k:
        sums[k:n], hashes[k:n] = extend_chain(delta, k, sums[k - 1] if k else None)
    return _Chain(sums, hashes, n)
