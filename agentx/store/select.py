"""Reading a trace in parts: the metadata of every row, then chosen rows on demand.

:func:`read_index` reads only the small per-row columns (ids, structure, timings, token counts,
flags: no request bodies, no response text, no block ids) into
:class:`~agentx.models.ExchangeMeta` values whose ``locator`` is the row number.
:meth:`TraceIndex.read_rows` decodes chosen rows with their full bodies: a row stored as a delta
over an earlier row needs that row too, so the rows it extends (transitively) are decoded with
it, and only the row groups holding them are read.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from agentx.errors import TraceError
from agentx.models import Exchange, ExchangeMeta
from agentx.store.codec import DeltaDecoder
from agentx.store.reader import _first_line, open_trace
from agentx.store.schema import COLUMNS
from agentx.store.writer import REPEATED_COLUMNS

INDEX_COLUMNS = (
    "session_id",
    "thread_id",
    "request_id",
    "parent_request_id",
    "api",
    "status",
    "model",
    "prompt_tokens",
    "completion_tokens",
    "start_wall_ns",
    "ttft_ns",
    "e2e_ns",
    "think_time_s",
    "api_time_s",
    "flags",
    "hash_block_size",
    "conversation_key",
    "conversation_base_id",
)


@dataclass(frozen=True, slots=True)
class TraceIndex:
    """Every row of one trace file as metadata, in file order."""

    path: Path
    rows: tuple[ExchangeMeta, ...]
    bases: npt.NDArray[np.int64]  # row number of each row's delta base, -1 for none
    group_starts: tuple[int, ...]  # first row number of each row group

    def read_rows(self, rows: Sequence[int]) -> list[Exchange]:
        """The exchanges of rows ``rows`` (row numbers), in that order, with full bodies."""
        needed: set[int] = set()
        for r in rows:
            while r >= 0 and r not in needed:
                needed.add(r)
                r = int(self.bases[r])
        ordered = sorted(needed)
        refs = Counter(
            self.rows[int(self.bases[r])].request_id for r in ordered if self.bases[r] >= 0
        )
        decoded: dict[int, Exchange] = {}
        try:
            pf = pq.ParquetFile(self.path, read_dictionary=list(REPEATED_COLUMNS))
            decoder = DeltaDecoder(dict(refs), shared=True)
            starts = np.asarray(self.group_starts, dtype=np.int64)
            by_group: dict[int, list[int]] = {}
            for r in ordered:
                by_group.setdefault(int(np.searchsorted(starts, r, side="right")) - 1, []).append(r)
            for g, members in sorted(by_group.items()):
                table = pf.read_row_group(g, columns=list(COLUMNS))
                local = pa.array([r - self.group_starts[g] for r in members], type=pa.int64())
                for r, row in zip(members, table.take(local).to_pylist(), strict=True):
                    decoded[r] = decoder.decode(row)
        except (pa.ArrowException, OSError, KeyError, ValueError, TypeError) as exc:
            raise TraceError(f"{self.path}: corrupt trace ({_first_line(exc)})") from None
        return [decoded[r] for r in rows]


def read_index(path: str | os.PathLike[str]) -> TraceIndex:
    """The metadata of every row of an agentx trace file (recovered first if its writer died)."""
    info = open_trace(path)
    try:
        pf = pq.ParquetFile(info.path)
        table = pf.read(columns=list(INDEX_COLUMNS))
        starts = []
        n = 0
        for g in range(pf.num_row_groups):
            starts.append(n)
            n += pf.metadata.row_group(g).num_rows
        cols = {name: table.column(name).to_pylist() for name in INDEX_COLUMNS}
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        raise TraceError(f"{info.path}: corrupt trace ({_first_line(exc)})") from None
    del table
    row_of = {rid: i for i, rid in enumerate(cols["request_id"])}
    bases = np.fromiter(
        (row_of.get(b, -1) if b is not None else -1 for b in cols["conversation_base_id"]),
        dtype=np.int64,
        count=n,
    )
    metas = []
    for i in range(n):
        hash_only = cols["conversation_key"][i] is None and cols["hash_block_size"][i] is not None
        metas.append(
            ExchangeMeta(
                request_id=cols["request_id"][i],
                session_id=cols["session_id"][i],
                thread_id=cols["thread_id"][i],
                api=cols["api"][i],
                start_wall_ns=cols["start_wall_ns"][i],
                e2e_ns=cols["e2e_ns"][i],
                ttft_ns=cols["ttft_ns"][i],
                parent_request_id=cols["parent_request_id"][i],
                status=cols["status"][i],
                model=cols["model"][i],
                prompt_tokens=cols["prompt_tokens"][i],
                completion_tokens=cols["completion_tokens"][i],
                think_time_s=cols["think_time_s"][i],
                api_time_s=cols["api_time_s"][i],
                flags=tuple(cols["flags"][i] or ()),
                hash_only=hash_only,
                has_prompt=hash_only or cols["conversation_key"][i] is not None,
                locator=i,
            )
        )
    return TraceIndex(info.path, tuple(metas), bases, tuple(starts))
