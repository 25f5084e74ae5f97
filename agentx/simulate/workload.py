"""A trace as the simulator sees it: model calls in start order, each a run of dense block ids.

Which rows count, and how a row becomes blocks, is exactly what ``agentx stats`` does (the same
:class:`agentx.prefixcache.theory.ExchangeBlocks`), so the unbounded limit of the simulation is
``agentx stats``' theoretical hit rate.

Requests are ordered by ``start_wall_ns`` (ties keep the trace's order): a trace with several
sessions (a Weka directory, whose sessions all start at t=0, or a capture of parallel agents)
runs them concurrently, as a server would see them. Block hashes are renumbered densely
(``0 .. unique_blocks-1``) so the engines can keep their state in flat arrays; the trace is
streamed, each request renumbered as it is read (:class:`Renumberer`) and kept as runs of
consecutive ids (:mod:`agentx.simulate.runs`: a few bytes a turn, not 4 a block).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentx.core.errors import AgentxError, UsageError
from agentx.core.models import Exchange
from agentx.core.progress import Progress
from agentx.prefixcache.hashing import DEFAULT_BLOCK_SIZE, HashArray
from agentx.prefixcache.theory import ExchangeBlocks
from agentx.simulate.dense import Renumberer
from agentx.simulate.runs import BlockIds, Runs, id_runs, run_blocks, run_ids


@dataclass(frozen=True, slots=True, eq=False)
class SimRequest:
    """One model call: its full prompt blocks and when it ran."""

    runs: Runs  # dense ids of the full prompt blocks, in prompt order, as runs (id_runs)
    prompt_tokens: int
    output_tokens: int  # usage.completion_tokens; 0 when the trace does not say
    start_ns: int  # start_wall_ns
    duration_ns: int | None  # e2e (or the imported api_time); None when unknown

    @property
    def blocks(self) -> BlockIds:
        """The dense ids, rebuilt from the runs (a new array each time)."""
        return run_ids(self.runs)

    @property
    def block_count(self) -> int:
        return run_blocks(self.runs)


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


def duration_ns(e2e_ns: int | None, api_time_s: float | None) -> int | None:
    """A request's recorded duration: its e2e, else the imported ``api_time``."""
    if e2e_ns is not None:
        return max(0, e2e_ns)
    if api_time_s is not None:
        return max(0, round(api_time_s * 1e9))
    return None


def _duration_ns(ex: Exchange) -> int | None:
    return duration_ns(ex.timing.e2e_ns, ex.api_time_s)


def raw_requests(
    exchanges: Iterable[Exchange], block_size: int | None = None
) -> tuple[list[RawRequest], int]:
    """Hash every model call (in trace order, as ``agentx stats`` does); returns the block size.

    Raises :class:`UsageError` when rows need different block sizes (a text row at 16 and a
    hash-only row at 64, say): the simulated cache has one block size.
    """
    text_bs = block_size or DEFAULT_BLOCK_SIZE
    counted = ExchangeBlocks(text_bs, block_size, incremental_ids=False)  # hashes are kept
    out: list[RawRequest] = []
    sizes: set[int] = set()
    for ex in exchanges:
        blocks = counted.of(ex)  # None: what stats skips too
        if blocks is None:
            continue
        hashes, n, bs = blocks
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
        raise mixed_block_sizes(sizes)
    return out, (sizes.pop() if sizes else text_bs)


def build_workload(raw: Sequence[RawRequest], block_size: int) -> Workload:
    """Order by start time (stable) and renumber the block hashes densely (:class:`Renumberer`)."""
    reqs = sorted(raw, key=lambda r: r.start_ns)
    numbers = Renumberer()
    requests = [
        SimRequest(
            runs=id_runs(numbers.ids(r.hashes, r.thread or r.session)),
            prompt_tokens=r.prompt_tokens,
            output_tokens=r.output_tokens,
            start_ns=r.start_ns,
            duration_ns=r.duration_ns,
        )
        for r in reqs
    ]
    return Workload(
        requests=tuple(requests),
        block_size=block_size,
        unique_blocks=numbers.index.size,
        sessions=len({r.session for r in reqs}),
    )


# What simulate reads of an agentx trace: no response text, no timings it does not use.
SIMULATE_SKIPS = frozenset(
    {
        "response_text",
        "response_reasoning",
        "response_tool_calls",
        "response_message",
        "chunk_offsets_ns",
        "credentials",
        "import_fields",
    }
)


def load_workload(
    path: str | os.PathLike[str],
    block_size: int | None = None,
    *,
    progress: Progress | None = None,
    flat_chains: bool = True,
) -> Workload:
    """Read any supported trace (agentx Parquet file or dataset, Weka JSON, Mooncake JSONL) as
    a workload, streamed: each request is hashed (incrementally per thread) and renumbered as
    it is read, so memory holds the dense ids (shared along threads), not the trace."""
    from agentx.formats import load_exchanges
    from agentx.store.schema import COLUMNS

    if block_size is not None and block_size < 1:
        raise UsageError("--block-size must be at least 1")
    prog = progress or Progress()
    prog.phase("loading")
    hash_only = _hash_only_workload(path, block_size, prog)
    if hash_only is not None:
        return hash_only
    columns = [c for c in COLUMNS if c not in SIMULATE_SKIPS]
    exchanges = load_exchanges(
        path, shared=True, columns=columns, progress=prog, flat_chains=flat_chains
    )
    text_bs = block_size or DEFAULT_BLOCK_SIZE
    counted = ExchangeBlocks(text_bs, block_size)
    numbers = Renumberer()
    requests: list[SimRequest] = []
    sizes: set[int] = set()
    sessions: set[str] = set()
    for ex in exchanges:
        blocks = counted.of(ex)  # None: what stats skips too
        if blocks is None:
            continue
        hashes, n, bs = blocks  # renumbered at once: a view of the thread's chain is enough
        sizes.add(bs)
        if len(sizes) > 1:
            raise mixed_block_sizes(sizes)
        prog.count("requests")
        sessions.add(ex.session_id)
        requests.append(
            SimRequest(
                runs=id_runs(numbers.ids(hashes, f"{ex.session_id}\x00{ex.thread_id}")),
                prompt_tokens=n,
                output_tokens=ex.usage.completion_tokens or 0,
                start_ns=ex.timing.start_wall_ns,
                duration_ns=_duration_ns(ex),
            )
        )
    if not sum(r.prompt_tokens for r in requests):
        raise AgentxError(f"{path}: no model calls with prompt tokens to simulate")
    requests.sort(key=lambda r: r.start_ns)
    return Workload(
        requests=tuple(requests),
        block_size=sizes.pop() if sizes else text_bs,
        unique_blocks=numbers.index.size,
        sessions=len(sessions),
    )


def mixed_block_sizes(sizes: set[int]) -> UsageError:
    return UsageError(
        f"the trace needs block sizes {sorted(sizes)} at once; the simulated cache has one: "
        f"pass --block-size {math.lcm(*sizes)}"
    )


def _hash_only_workload(
    path: str | os.PathLike[str], block_size: int | None, prog: Progress
) -> Workload | None:
    """An agentx trace whose counted rows are all hash-only, read from its block-id columns
    (:mod:`agentx.simulate.columnar`: the same requests, without exchanges); ``None`` for
    other traces and formats."""
    from agentx.formats import load_block_files
    from agentx.simulate.columnar import TextRow, hash_only_rows

    files = load_block_files(path, progress=prog)
    if files is None:
        return None
    numbers = Renumberer()
    requests: list[SimRequest] = []
    sizes: set[int] = set()
    sessions: set[str] = set()
    try:
        for row in hash_only_rows(files, block_size):
            sizes.add(row.block_size)
            if len(sizes) > 1:
                raise mixed_block_sizes(sizes)
            prog.count("requests")
            sessions.add(row.session_id)
            requests.append(
                SimRequest(
                    runs=id_runs(numbers.ids(row.hashes, f"{row.session_id}\x00{row.thread_id}")),
                    prompt_tokens=row.prompt_tokens,
                    output_tokens=row.completion_tokens or 0,
                    start_ns=row.start_wall_ns,
                    duration_ns=duration_ns(row.e2e_ns, row.api_time_s),
                )
            )
    except TextRow:
        return None
    if not requests:
        return None  # the exchange path says what is wrong
    if not sum(r.prompt_tokens for r in requests):
        raise AgentxError(f"{path}: no model calls with prompt tokens to simulate")
    requests.sort(key=lambda r: r.start_ns)
    return Workload(
        requests=tuple(requests),
        block_size=sizes.pop(),
        unique_blocks=numbers.index.size,
        sessions=len(sessions),
    )
