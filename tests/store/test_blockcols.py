"""The block-id columns as arrays: each row's stored ids, on its base, are the ids the row
reader rebuilds."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentx.apis import Api
from agentx.core.models import Exchange, Timing, Usage
from agentx.store import iter_records, write_trace
from agentx.store.blockcols import iter_block_files

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 20), st.integers(0, 6), st.booleans()),
        min_size=1,
        max_size=30,
    )
)
def test_stored_ids_on_their_base_are_the_rows_ids(
    tmp_path_factory: pytest.TempPathFactory, plan: list[tuple[int, int, int, bool]]
) -> None:
    ids: dict[int, list[int]] = {}
    exchanges = []
    for i, (thread, keep, add, text) in enumerate(plan):
        mine = ids.get(thread, [])[:keep] + list(range(100 * i, 100 * i + add))
        ids[thread] = mine
        exchanges.append(
            Exchange(
                request_id=f"r{i}",
                session_id="s",
                thread_id=f"t{thread}",
                api=Api.OPENAI_CHAT,
                request={"messages": [{"role": "user", "content": "x"}]} if text else {},
                timing=Timing(start_wall_ns=i),
                usage=Usage(prompt_tokens=len(mine) * 4),
                hash_ids=None if text else tuple(mine),
                hash_block_size=None if text else 4,
            )
        )
    path: Path = tmp_path_factory.mktemp("t") / "t.parquet"
    write_trace(path, exchanges)
    want = [r["hash_ids"] for r in iter_records(path, ["hash_ids"])]
    got: list[tuple[int, ...] | None] = []
    full: dict[str, list[int]] = {}
    for f in iter_block_files(path):
        for rows in f.rows:
            c = rows.columns
            for i in range(rows.num_rows):
                if not rows.has_ids[i]:
                    got.append(None)
                    continue
                base = c["hash_ids_base_id"][i]
                head = full[base][: c["hash_ids_base_len"][i] or 0] if base is not None else []
                row = head + rows.values[rows.starts[i] : rows.ends[i]].tolist()
                full[c["request_id"][i]] = row
                got.append(tuple(row))
    assert got == want
