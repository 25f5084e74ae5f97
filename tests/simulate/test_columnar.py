"""The recorded workload of a hash-only agentx trace read from its block-id columns: the same
workload, request for request and id for id, as reading the trace's exchanges."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentx.apis import Api
from agentx.core.examples import example_path
from agentx.core.flags import FLAG_NON_MODEL
from agentx.core.models import Exchange, Timing, Usage
from agentx.formats import load_block_files, load_exchanges
from agentx.simulate import workload as wl
from agentx.simulate.columnar import TextRow, hash_only_rows
from agentx.store import write_trace

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# (thread, fork from: thread or None, keep of it, ids appended, non-model, no block size)
turns = st.lists(
    st.tuples(
        st.integers(0, 4),
        st.none() | st.integers(0, 4),
        st.integers(0, 30),
        st.integers(0, 12),
        st.booleans(),
        st.integers(0, 9),
    ),
    min_size=1,
    max_size=40,
)


def _exchanges(plan: list[tuple[int, int | None, int, int, bool, int]]) -> list[Exchange]:
    """Threads that grow, fork from a prefix of another thread, share a system prefix; some
    rows are not model calls or have no block size (they still serve as bases)."""
    ids: dict[int, list[int]] = {}
    nxt = 100
    out = []
    for i, (thread, fork, keep, add, non_model, odd) in enumerate(plan):
        mine = ids.get(thread, [0, 1, 2])
        if fork is not None and fork in ids:
            mine = ids[fork][:keep]
        mine = mine + list(range(nxt, nxt + add))
        nxt += add
        ids[thread] = mine
        prompt = None if odd == 1 else len(mine) * 4 - (odd % 4)
        out.append(
            Exchange(
                request_id=f"r{i}",
                session_id=f"s{thread % 2}",
                thread_id=f"t{thread}",
                api=Api.OPENAI_CHAT,
                request={},
                flags=(FLAG_NON_MODEL,) if non_model else (),
                timing=Timing(start_wall_ns=(i * 7) % 11, e2e_ns=None if odd == 2 else i),
                api_time_s=0.5 if odd == 2 else None,
                usage=Usage(prompt_tokens=prompt, completion_tokens=odd),
                hash_ids=tuple(mine),
                hash_block_size=None if odd == 3 else 4,
            )
        )
    return out


def _both(path: Path, block_size: int | None) -> tuple[wl.Workload, wl.Workload]:
    columnar = wl.load_workload(path, block_size)
    with mock.patch.object(wl, "_hash_only_workload", return_value=None):
        rows = wl.load_workload(path, block_size)
    return columnar, rows


def _same(a: wl.Workload, b: wl.Workload) -> None:
    assert (a.block_size, a.unique_blocks, a.sessions) == (
        b.block_size,
        b.unique_blocks,
        b.sessions,
    )
    assert len(a.requests) == len(b.requests)
    for x, y in zip(a.requests, b.requests, strict=True):
        assert x.blocks.tolist() == y.blocks.tolist()
        assert (x.prompt_tokens, x.output_tokens, x.start_ns, x.duration_ns) == (
            y.prompt_tokens,
            y.output_tokens,
            y.start_ns,
            y.duration_ns,
        )


@FAST
@given(turns, st.sampled_from([None, 4, 8]))
def test_columns_give_the_workload_the_exchanges_give(
    tmp_path_factory: pytest.TempPathFactory,
    plan: list[tuple[int, int | None, int, int, bool, int]],
    block_size: int | None,
) -> None:
    exchanges = _exchanges(plan)
    if not any(e.usage.prompt_tokens for e in exchanges if not e.flags and e.hash_block_size):
        return  # nothing to simulate: both paths refuse it
    path = tmp_path_factory.mktemp("t") / "t.parquet"
    write_trace(path, exchanges)
    _same(*_both(path, block_size))


def test_a_converted_weka_trace_reads_from_its_columns(tmp_path: Path) -> None:
    """No exchange is read (the row reader refuses here), and the workload is the rows'."""
    path = tmp_path / "w.parquet"
    write_trace(path, load_exchanges(example_path("weka")))
    with mock.patch("agentx.formats.load_exchanges", side_effect=AssertionError("rows read")):
        columnar = wl.load_workload(path)
    with mock.patch.object(wl, "_hash_only_workload", return_value=None):
        rows = wl.load_workload(path)
    assert columnar.requests
    _same(columnar, rows)


def test_a_text_trace_is_read_as_exchanges() -> None:
    files = load_block_files(example_path("example"))
    assert files is not None
    with pytest.raises(TextRow):
        list(hash_only_rows(files, None))
    assert wl.load_workload(example_path("example")).requests


@FAST
@given(turns, st.sampled_from([None, 8]))
def test_a_v1_trace_reads_from_its_full_id_columns(
    tmp_path_factory: pytest.TempPathFactory,
    write_v1_trace: Callable[[Path, Sequence[Exchange]], None],
    plan: list[tuple[int, int | None, int, int, bool, int]],
    block_size: int | None,
) -> None:
    """Format v1 stores each row's full ``hash_ids`` (no base, no delta): the columns still
    give the exchanges' workload."""
    exchanges = _exchanges(plan)
    if not any(e.usage.prompt_tokens for e in exchanges if not e.flags and e.hash_block_size):
        return
    path = tmp_path_factory.mktemp("t") / "v1.parquet"
    write_v1_trace(path, exchanges)
    with mock.patch("agentx.formats.load_exchanges", side_effect=AssertionError("rows read")):
        columnar = wl.load_workload(path, block_size)
    with mock.patch.object(wl, "_hash_only_workload", return_value=None):
        rows = wl.load_workload(path, block_size)
    _same(columnar, rows)
