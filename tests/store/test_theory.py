"""theory.parquet: rows round-trip in order, in several row groups, with the block size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentx.core.errors import TraceError
from agentx.prefixcache.theory import TheoryRow
from agentx.store import theory as store
from agentx.store.results import write_requests


def row(i: int, n: int) -> TheoryRow:
    blocks = np.arange(n, dtype=np.uint64) * np.uint64(2**63 + 1) + np.uint64(i)
    return TheoryRow(f"0.0.{i}", 1_000 * i, 16 * n + 3, 16 * i, blocks)


def test_round_trip_in_send_order_across_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "BATCH_ROWS", 3)
    rows = [row(i, i % 4) for i in range(10)]  # empty new_blocks included
    store.write_theory(tmp_path / "theory.parquet", rows, block_size=16)
    f = store.open_theory(tmp_path / "theory.parquet")
    assert (f.block_size, f.rows) == (16, 10)
    back = list(f)
    assert [r.request_id for r in back] == [r.request_id for r in rows]
    for a, b in zip(rows, back, strict=True):
        assert (a.sent_ns, a.prompt_tokens, a.hit_tokens) == (
            b.sent_ns,
            b.prompt_tokens,
            b.hit_tokens,
        )
        assert b.new_blocks.dtype == np.uint64
        assert b.new_blocks.tolist() == a.new_blocks.tolist()  # full 64 bits kept


def test_empty(tmp_path: Path) -> None:
    store.write_theory(tmp_path / "t.parquet", [], block_size=32)
    f = store.open_theory(tmp_path / "t.parquet")
    assert (f.block_size, f.rows, list(f)) == (32, 0, [])


def test_not_a_theory_file(tmp_path: Path) -> None:
    write_requests(tmp_path / "requests.parquet", [])
    with pytest.raises(TraceError, match=r"not an agentx\.theory/1"):
        store.open_theory(tmp_path / "requests.parquet")
    with pytest.raises(TraceError, match="no such file"):
        store.open_theory(tmp_path / "missing.parquet")
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(TraceError, match="not a readable"):
        store.open_theory(tmp_path / "junk.parquet")


def test_routed_rows_round_trip_and_one_endpoint_files_keep_their_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "BATCH_ROWS", 2)
    rows = [
        TheoryRow(
            r.request_id,
            r.sent_ns,
            r.prompt_tokens,
            r.hit_tokens,
            r.new_blocks,
            i % 3,
            8 * i,
            r.new_blocks[: i % 2] + np.uint64(7),
        )
        for i, r in enumerate(row(i, i % 4) for i in range(7))
    ]
    store.write_theory(tmp_path / "routed.parquet", rows, block_size=16, routed=True)
    back = list(store.open_theory(tmp_path / "routed.parquet"))
    for a, b in zip(rows, back, strict=True):
        assert (b.replica, b.replica_hit_tokens) == (a.replica, a.replica_hit_tokens)
        assert b.replica_new_blocks is not None and a.replica_new_blocks is not None
        assert b.replica_new_blocks.tolist() == a.replica_new_blocks.tolist()
        assert b.new_blocks.tolist() == a.new_blocks.tolist()

    plain = [row(i, 2) for i in range(3)]
    store.write_theory(tmp_path / "plain.parquet", plain, block_size=16)
    import pyarrow.parquet as pq

    assert pq.read_schema(tmp_path / "plain.parquet").names == store.SCHEMA.names
    assert all(
        r.replica is None and r.replica_new_blocks is None
        for r in store.open_theory(tmp_path / "plain.parquet")
    )
