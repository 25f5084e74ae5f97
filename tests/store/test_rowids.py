"""A few rows' block ids as stored (``read_row_ids``): each row's ids rebuilt from its base's and
its delta are the row's ids, in files of format v1.1 (deltas) and v1 (full ids)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentx.apis import Api
from agentx.core.errors import TraceError
from agentx.core.models import Exchange, Timing, Usage
from agentx.store import write_trace, writer
from agentx.store.rowids import RowIds, read_row_ids
from agentx.store.select import read_index

V1Writer = Callable[[Path, Sequence[Exchange]], None]
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# (thread, fork from: thread or None, ids kept of it, ids appended, no ids at all)
turns = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.none() | st.integers(0, 3),
        st.integers(0, 20),
        st.integers(0, 9),
        st.booleans(),
    ),
    min_size=1,
    max_size=30,
)


def _exchanges(plan: list[tuple[int, int | None, int, int, bool]]) -> list[Exchange]:
    ids: dict[int, list[int]] = {}
    nxt = 100
    out = []
    for i, (thread, fork, keep, add, text) in enumerate(plan):
        mine = ids.get(thread, [0, 1, 2])
        if fork is not None and fork in ids:
            mine = ids[fork][:keep]
        mine = mine + list(range(nxt, nxt + add))
        nxt += add
        ids[thread] = mine
        out.append(
            Exchange(
                request_id=f"r{i}",
                session_id="s",
                thread_id=f"t{thread}",
                api=Api.OPENAI_CHAT,
                request={"messages": [{"role": "user", "content": "hi"}]} if text else {},
                timing=Timing(start_wall_ns=i),
                usage=Usage(prompt_tokens=len(mine) * 4),
                hash_ids=None if text else tuple(mine),
                hash_block_size=None if text else 4,
            )
        )
    return out


def _full(got: dict[int, RowIds], r: int) -> list[int]:
    ids = got[r]
    head = _full(got, ids.base)[: ids.base_len] if ids.base >= 0 else []
    return head + ids.delta.tolist()


@FAST
@given(turns, st.booleans(), st.data())
def test_each_row_is_its_base_prefix_then_its_delta(
    tmp_path_factory: pytest.TempPathFactory,
    write_v1_trace: V1Writer,
    plan: list[tuple[int, int | None, int, int, bool]],
    v1: bool,
    data: st.DataObject,
) -> None:
    exchanges = _exchanges(plan)
    path = tmp_path_factory.mktemp("rowids") / "t.parquet"
    with mock.patch.object(writer, "ROW_GROUP_ROWS", 4):  # rows and bases in several groups
        (write_v1_trace if v1 else write_trace)(path, exchanges)
    index = read_index(path)
    asked = data.draw(st.lists(st.integers(0, len(exchanges) - 1), min_size=1, unique=True))
    got = read_row_ids(index, asked)
    assert set(asked) <= set(got)
    for r, ids in got.items():
        assert ids.base < r and (ids.base in got or ids.base == -1)
        want = exchanges[r].hash_ids
        assert _full(got, r) == list(want or ())
        assert ids.size == len(want or ())
        assert ids.block_size == exchanges[r].hash_block_size
        if v1:
            assert ids.base == -1


def _rewrite(path: Path, column: str, row: int, value: object) -> None:
    table = pq.read_table(path)
    values = table.column(column).to_pylist()
    values[row] = value
    i = table.schema.get_field_index(column)
    table = table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))
    pq.write_table(table, path)


def test_a_row_keeping_more_ids_than_its_base_has_is_a_corrupt_trace(tmp_path: Path) -> None:
    exchanges = _exchanges([(0, None, 0, 3, False), (0, None, 0, 2, False)])
    path = tmp_path / "t.parquet"
    write_trace(path, exchanges)
    assert read_row_ids(read_index(path), [1])[1].base == 0
    _rewrite(path, "hash_ids_base_len", 1, 99)
    with pytest.raises(TraceError, match="corrupt trace"):
        read_row_ids(read_index(path), [1])
