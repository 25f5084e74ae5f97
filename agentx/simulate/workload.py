"""A trace as the simulator sees it: model calls in start order, each a run of dense block ids.

Which rows count, and how a row becomes blocks, is exactly what ``agentx stats`` does
(:func:`agentx.hitrate.is_model_call`, :func:`agentx.hitrate.hash_only_blocks`, and
:class:`agentx.prefix.RequestHasher` keyed by ``(session, thread)`` for text rows), so the
unbounded limit of the simulation is ``agentx stats``' theoretical hit rate.

Requests are ordered by ``start_wall_ns`` (ties keep the trace's order): a trace with several
sessions (a Weka directory, whose sessions all start at t=0, or a capture of parallel agents)
runs them concurrently, as a server would see them. Block hashes are then renumbered densely
(``0 .. unique_blocks-1``) so the engines can keep their state in flat arrays.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agentx.errors import AgentxError, UsageError
from agentx.hitrate import hash_only_blocks, is_model_call
from agentx.models import Exchange
from agentx.prefix import DEFAULT_BLOCK_SIZE, HashArray, RequestHasher

IdArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True, eq=False)
class SimRequest:
    """One model call: its full prompt blocks and when it ran."""

    blocks: IdArray  # dense ids of the full prompt blocks, in prompt order
    prompt_tokens: int
    output_tokens: int  # usage.completion_tokens; 0 when the trace does not say
    start_ns: int  # start_wall_ns
    duration_ns: int | None  # e2e (or the imported api_time); None when unknown


@dataclass(frozen=True, slots=True, eq=False)
class Workload:
    """The requests of a trace in start order, at one block size."""

    requests: tuple[SimRequest, ...]
    block_size: int
    unique_blocks: int  # distinct full blocks: the footprint is unique_blocks * block_size
    sessions: int

    @property
    def prompt_tokens(self) -> int:
        return sum(r.prompt_tokens for r in self.requests)

    @property
    def footprint_tokens(self) -> int:
        return self.unique_blocks * self.block_size

    @property
    def timed_requests(self) -> int:
        return sum(1 for r in self.requests if r.duration_ns is not None)


@dataclass(frozen=True, slots=True)
class RawRequest:
    """A request before renumbering: chained 64-bit block hashes."""

    hashes: HashArray
    prompt_tokens: int
    output_tokens: int
    start_ns: int
    duration_ns: int | None
    session: str = ""
    thread: str = ""  # consecutive requests of a thread share a prefix (renumbered once)


def _duration_ns(ex: Exchange) -> int | None:
    if ex.timing.e2e_ns is not None:
        return max(0, ex.timing.e2e_ns)
    if ex.api_time_s is not None:
        return max(0, round(ex.api_time_s * 1e9))
    return None


def raw_requests(
    exchanges: Iterable[Exchange], block_size: int | None = None
) -> tuple[list[RawRequest], int]:
    """Hash every model call (in trace order, as ``agentx stats`` does); returns the block size.

    Raises :class:`UsageError` when rows need different block sizes (a text row at 16 and a
    hash-only row at 64, say): the simulated cache has one block size.
    """
    text_bs = block_size or DEFAULT_BLOCK_SIZE
    hasher: RequestHasher | None = None
    out: list[RawRequest] = []
    sizes: set[int] = set()
    for ex in exchanges:
        if not is_model_call(ex):
            continue
        if ex.hash_ids is not None and ex.hash_block_size:
            hashes, n, bs = hash_only_blocks(ex, block_size)
        elif ex.hash_ids is None:
            hasher = hasher or RequestHasher(text_bs)
            hashes, n = hasher.hash_request(ex.api, ex.request, (ex.session_id, ex.thread_id))
            bs = text_bs
        else:
            continue  # hash ids without a block size: nothing to simulate (stats skips it too)
        sizes.add(bs)
        out.append(
            RawRequest(
                hashes=hashes,
                prompt_tokens=n,
                output_tokens=ex.usage.completion_tokens or 0,
                start_ns=ex.timing.start_wall_ns,
                duration_ns=_duration_ns(ex),
                session=ex.session_id,
                thread=f"{ex.session_id}\x00{ex.thread_id}",
            )
        )
    if len(sizes) > 1:
        raise UsageError(
            f"the trace needs block sizes {sorted(sizes)} at once; the simulated cache has one: "
            f"pass --block-size {math.lcm(*sizes)}"
        )
    return out, (sizes.pop() if sizes else text_bs)


def build_workload(raw: Sequence[RawRequest], block_size: int) -> Workload:
    """Order by start time (stable) and renumber the block hashes densely.

    A chained hash names its whole prefix, so the part a request shares with the previous
    request of its thread is found with one vectorised comparison and keeps that request's ids;
    only the rest goes through the dictionary. The cost is the trace's new content, not the
    sum of its prompts.
    """
    reqs = sorted(raw, key=lambda r: r.start_ns)
    index: dict[int, int] = {}
    last: dict[str, tuple[HashArray, IdArray]] = {}
    requests = []
    for r in reqs:
        key = r.thread or r.session
        prev = last.get(key)
        ids = np.empty(r.hashes.size, dtype=np.int64)
        k = 0
        if prev is not None:
            m = min(prev[0].size, r.hashes.size)
            differ = np.flatnonzero(prev[0][:m] != r.hashes[:m])
            k = int(differ[0]) if differ.size else m
            ids[:k] = prev[1][:k]
        ids[k:] = [index.setdefault(h, len(index)) for h in r.hashes[k:].tolist()]
        last[key] = (r.hashes, ids)
        requests.append(
            SimRequest(
                blocks=ids,
                prompt_tokens=r.prompt_tokens,
                output_tokens=r.output_tokens,
                start_ns=r.start_ns,
                duration_ns=r.duration_ns,
            )
        )
    return Workload(
        requests=tuple(requests),
        block_size=block_size,
        unique_blocks=len(index),
        sessions=len({r.session for r in reqs}),
    )


def load_workload(path: str | os.PathLike[str], block_size: int | None = None) -> Workload:
    """Read any supported trace (agentx Parquet, Weka JSON, Mooncake JSONL) as a workload."""
    from agentx.formats import load_exchanges

    if block_size is not None and block_size < 1:
        raise UsageError("--block-size must be at least 1")
    raw, bs = raw_requests(load_exchanges(path, shared=True), block_size)
    if not sum(r.prompt_tokens for r in raw):
        raise AgentxError(f"{path}: no model calls with prompt tokens to simulate")
    return build_workload(raw, bs)
