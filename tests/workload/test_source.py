"""Trace sources: a metadata index first, rows materialised on demand, equal to an eager load."""

from __future__ import annotations

import dataclasses
import random
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replay.factory import T0, chat_session

from agentx.core.errors import FormatError
from agentx.core.examples import example_path
from agentx.core.models import Exchange, ExchangeMeta
from agentx.formats import load_exchanges
from agentx.store import write_trace
from agentx.store.dataset import DatasetWriter
from agentx.store.rowids import RowIds
from agentx.workload.plan import ReplayPlan, build_plan
from agentx.workload.source import (
    CompactRows,
    Forgetting,
    MooncakeSource,
    ParquetSource,
    WekaSource,
    _grouped,
    open_source,
)
from agentx.workload.trees import tree_of

WEKA = example_path("weka")


def _same_row(lazy: Exchange, eager: Exchange) -> None:
    for name in (
        "request_id",
        "session_id",
        "thread_id",
        "api",
        "parent_request_id",
        "model",
        "usage",
        "think_time_s",
        "api_time_s",
        "flags",
        "hash_ids",
        "hash_block_size",
    ):
        assert getattr(lazy, name) == getattr(eager, name), name
    assert lazy.timing.start_wall_ns == eager.timing.start_wall_ns
    assert lazy.timing.e2e_ns == eager.timing.e2e_ns


def _materialise(source: WekaSource | MooncakeSource | ParquetSource) -> list[Exchange]:
    out = []
    for session in source.index():
        loader = source.load_session(session)
        out.extend(loader.exchange(m) for m in session.exchanges)
    return out


def _rows_equal_eager(source: ParquetSource, path: Path) -> int:
    eager = {ex.request_id: ex for ex in load_exchanges(path)}
    n = 0
    for session in reversed(list(source.index())):  # any order: each loads on its own
        loader = source.load_session(session)
        stored = source.session_ids(session)  # by locator, across a dataset's files too
        for m in session.exchanges:
            ex = loader.exchange(m)
            _same_row(ex, eager[m.request_id])
            assert ex.request == eager[m.request_id].request
            assert _full_ids(stored, m.locator) == list(eager[m.request_id].hash_ids or ())
            n += 1
    assert n == len(eager)
    return n


def _full_ids(stored: dict[int, RowIds], locator: int) -> list[int]:
    ids = stored[locator]
    head = _full_ids(stored, ids.base)[: ids.base_len] if ids.base >= 0 else []
    return head + ids.delta.tolist()


def _weka_dir(tmp_path: Path) -> Path:
    d = tmp_path / "weka"
    d.mkdir()
    for f in sorted(WEKA.glob("*.json")):
        shutil.copy(f, d / f.name)
    # the same session pretty-printed, with spaces around the ids: spans still find them
    doc = orjson.loads((WEKA / "trace_0001.json").read_bytes())
    doc["id"] = "pretty"
    (d / "z_pretty.json").write_text(
        orjson.dumps(doc, option=orjson.OPT_INDENT_2)
        .decode()
        .replace('"hash_ids":', '"hash_ids" :')
    )
    return d


def test_weka_rows_read_back_equal_the_eager_import(tmp_path: Path) -> None:
    d = _weka_dir(tmp_path)
    source = WekaSource(d)
    assert source.candidates == 3
    lazy = _materialise(source)
    eager = list(load_exchanges(d))
    by_id = {ex.request_id: ex for ex in eager}
    assert sorted(ex.request_id for ex in lazy) == sorted(by_id)
    for ex in lazy:
        _same_row(ex, by_id[ex.request_id])  # local-scope ids offset per file, as imported


def test_the_index_holds_no_block_ids(tmp_path: Path) -> None:
    for session in WekaSource(_weka_dir(tmp_path)).index():
        for m in session.exchanges:
            assert isinstance(m, ExchangeMeta) and m.hash_only and m.prompt_tokens
            assert not hasattr(m, "hash_ids")


def test_a_weka_directory_is_sampled_by_file_and_indexed_when_used(tmp_path: Path) -> None:
    d = tmp_path / "many"
    d.mkdir()
    for i in range(6):
        shutil.copy(WEKA / "trace_0010_head.json", d / f"t{i}.json")
    (d / "t3.json").write_text("{not json")  # only reading it fails
    plan = build_plan(open_source(d))  # reads no file
    assert len(plan.sessions) == 6 and plan.sessions.lazy and plan.sessions.tally.indexed == 0
    assert plan.sessions[0].session_id == "trace_0010_head" and plan.sessions.tally.indexed == 1
    with pytest.raises(FormatError, match=r"t3\.json"):
        list(plan.sessions)
    seed = next(s for s in range(50) if 3 not in random.Random(s).sample(range(6), 2))
    plan = build_plan(open_source(d), sessions=2, seed=seed)
    picked = sorted(random.Random(seed).sample(range(6), 2))
    assert [s.index for s in plan.sessions] == picked
    assert plan.sessions.complete and plan.requests == 2 * 35


def test_mooncake_rows_read_back_equal_the_eager_import(tmp_path: Path) -> None:
    lines = [
        {"timestamp": 0, "input_length": 655, "output_length": 52, "hash_ids": [46, 47]},
        {"timestamp": 5, "session_id": "a", "input_length": 700, "hash_ids": [1, 2]},
        {"timestamp": 9, "session_id": "a", "input_length": 900, "hash_ids": [1, 2, 3]},
        {"timestamp": 12, "input_length": 3, "text_input": "hi there"},
    ]
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n\n")
    lazy = _materialise(MooncakeSource(path))
    eager = list(load_exchanges(path))
    assert len(lazy) == len(eager) == 4
    for a, b in zip(sorted(lazy, key=lambda e: e.request_id), eager, strict=True):
        _same_row(a, b)
        assert a.request == b.request
    assert [s.session_id for s in MooncakeSource(path).index()] == ["m/1", "a", "m/4"]


def test_parquet_sessions_decode_with_the_rows_they_extend(tmp_path: Path) -> None:
    rows = [*chat_session("a", turns=4), *chat_session("b", turns=3, start_ns=T0 + 10**10)]
    # a row of session b stored as a delta over a row of session a (the encoder picks its parent)
    b0 = rows[4]
    rows[4] = dataclasses.replace(
        b0,
        request={**b0.request, "messages": rows[2].request["messages"]},
        parent_request_id=rows[2].request_id,
    )
    rows.sort(key=lambda e: e.timing.start_wall_ns)
    path = tmp_path / "t.parquet"
    write_trace(path, rows)
    source = ParquetSource(path)
    index = source._file(0)
    assert index.rows[int(index.bases[0][4])].request_id == "a-main-2"  # across sessions
    _rows_equal_eager(source, path)


def _shape(plan: ReplayPlan) -> list[object]:
    return [
        (
            s.session_id,
            [
                (
                    t.thread_id,
                    t.after,
                    t.delay_s,
                    [dataclasses.replace(u.meta, locator=-1) for u in t.turns],
                )
                for t in s.threads
            ],
        )
        for s in plan.sessions
    ]


@pytest.mark.parametrize("name", ["weka", "example"])
def test_a_plan_from_the_index_equals_a_plan_from_loaded_exchanges(name: str) -> None:
    path = example_path(name)
    lazy = build_plan(open_source(path))
    eager = build_plan(list(load_exchanges(path)))
    assert _shape(lazy) == _shape(eager)
    assert (lazy.apis, lazy.skipped, lazy.synthesized) == (
        eager.apis,
        eager.skipped,
        eager.synthesized,
    )


SHARED_WEKA = Path("/work/shared/fixtures/weka")  # the four published samples, when present


def _absolute_inner_times(src: Path, dst: Path) -> Path:
    """``src`` with its subagents' inner ``t`` absolute (newer captures store them so)."""
    doc = orjson.loads(src.read_bytes())
    for entry in doc["requests"]:
        if entry.get("type") == "subagent":
            for r in entry["requests"]:
                r["t"] = round(r["t"] + entry["t"], 6)
    dst.write_bytes(orjson.dumps(doc))
    return dst


@pytest.mark.parametrize("which", ["bundled", "absolute", "shared"])
def test_lazy_weka_gives_the_eager_metadata_and_trees(which: str, tmp_path: Path) -> None:
    if which == "shared" and not SHARED_WEKA.is_dir():
        pytest.skip("the published Weka samples are not on this machine")
    path = {
        "bundled": WEKA,
        "absolute": _absolute_inner_times(
            WEKA / "trace_0010_head.json", tmp_path / "trace_abs.json"
        ),
        "shared": SHARED_WEKA,
    }[which]
    lazy = build_plan(open_source(path))
    eager = build_plan(list(load_exchanges(path)))
    assert lazy.sessions.lazy and not eager.sessions.lazy
    assert _shape(lazy) == _shape(eager)  # every ExchangeMeta but its locator, and the threads
    lazy_trees = [tree_of(s) for s in lazy.sessions]
    assert lazy_trees == [tree_of(s) for s in eager.sessions]
    with_subagents = [t for t in lazy_trees if len(t.streams) > 1]
    assert with_subagents  # trace_0010's subagents: spawning turn, recorded end, joins
    for t in with_subagents:
        for s in t.streams[1:]:
            assert s.parent == 0 and s.spawn_turn is not None and s.end_s is not None
            assert t.streams[0].turns[s.spawn_turn].start_s <= s.start_s


def test_lazy_and_eager_weka_subagents_keep_the_spawning_turn_and_duration() -> None:
    (session,) = build_plan(open_source(WEKA / "trace_0010_head.json")).sessions
    doc = orjson.loads((WEKA / "trace_0010_head.json").read_bytes())
    entries = [e for e in doc["requests"] if e.get("type") == "subagent"]
    subs = session.threads[1:]
    assert len(subs) == len(entries) == 3
    main = session.threads[0]
    for th, entry in zip(subs, entries, strict=True):
        first = th.turns[0].meta
        assert f"weka.duration_ms={entry['duration_ms']}" in first.flags
        assert th.after is not None and th.after[0] == 0
        # the main request written just before the entry spawned it
        assert first.parent_request_id == main.turns[th.after[1]].meta.request_id


def test_hash_only_rows_decode_their_delta_encoded_block_ids(tmp_path: Path) -> None:
    """Format v1.1: a row's ids are its base's prefix plus a delta; a session's rows bring the
    rows they extend (through either base column)."""
    path = tmp_path / "w.parquet"
    write_trace(path, list(load_exchanges(WEKA)))
    source = ParquetSource(path)
    index = source._file(0)
    assert "hash_ids_delta" in index.columns and len(index.bases) == 2
    assert (index.bases[1] >= 0).sum() > len(index.rows) // 2  # most rows extend another
    assert _rows_equal_eager(source, path) == len(index.rows)
    (one,) = [s for s in source.index() if len(s.exchanges) > 3][:1]
    last = one.exchanges[-1]
    assert (
        source.load_session(dataclasses.replace(one, exchanges=(last,))).exchange(last).hash_ids
        == next(e for e in load_exchanges(path) if e.request_id == last.request_id).hash_ids
    )


def test_a_v1_trace_file_reads_lazily_too(
    tmp_path: Path, write_v1_trace: Callable[[Path, Sequence[Exchange]], None]
) -> None:
    path = tmp_path / "v1.parquet"
    exs = list(load_exchanges(WEKA / "trace_0001.json"))
    write_v1_trace(path, exs)
    source = ParquetSource(path)
    assert len(source._file(0).bases) == 1  # no hash_ids_base_id in v1
    assert _rows_equal_eager(source, path) == len(exs)


def test_a_dataset_of_one_session_per_file_is_indexed_file_by_file(tmp_path: Path) -> None:
    d = tmp_path / "ds"
    d.mkdir()
    files = [*sorted(WEKA.glob("*.json")), *sorted(SHARED_WEKA.glob("*.json"))]
    for k, f in enumerate(files):
        exs = list(load_exchanges(f))
        exs = [  # files may repeat a session: made distinct
            dataclasses.replace(
                ex,
                session_id=f"{ex.session_id}.{k}",
                thread_id=f"{ex.thread_id}.{k}",
                request_id=f"{ex.request_id}.{k}",
                parent_request_id=ex.parent_request_id and f"{ex.parent_request_id}.{k}",
            )
            for ex in exs
        ]
        write_trace(d / f"part-{k:05d}.parquet", exs)
    source = open_source(d)
    assert isinstance(source, ParquetSource) and source.candidates == len(files)
    plan = build_plan(source, sessions=len(files) - 1, seed=1)
    assert plan.sessions.lazy and len(plan.sessions) == len(files) - 1
    assert source._indexes.keys() == set()  # nothing read until a lane wants it
    picked = [s.session_id for s in plan.sessions]
    assert len(source._indexes) == len(files) - 1
    eager = build_plan(list(load_exchanges(d)))
    assert set(picked) <= {s.session_id for s in eager.sessions}
    assert _shape(build_plan(open_source(d))) == _shape(eager)
    _rows_equal_eager(source, d)


def test_a_dataset_with_sessions_across_files_is_indexed_whole(tmp_path: Path) -> None:
    d = tmp_path / "ds"
    rows = [*chat_session("a", turns=4), *chat_session("b", turns=3, start_ns=T0 + 10**10)]
    with DatasetWriter(d, part_rows=3) as w:  # a session split over two files
        for ex in rows:
            w.append(ex)
    source = open_source(d)
    assert isinstance(source, ParquetSource) and source.candidates is None
    assert [s.session_id for s in source.index()] == ["a", "b"]
    assert _shape(build_plan(source)) == _shape(build_plan(list(load_exchanges(d))))
    _rows_equal_eager(source, d)


@st.composite
def _hash_rows(draw: st.DrawFn) -> tuple[dict[int, Exchange], list[int]]:
    """Rows of a few threads, each turn's ids its thread's previous ones cut and extended (or
    not: a rewrite, no ids, a row that is no hash row), and an order to ask for them in."""
    base = chat_session("s", turns=1)[0]
    rows: dict[int, Exchange] = {}
    last: dict[str, tuple[int, ...]] = {}
    for loc in draw(st.lists(st.integers(0, 10**6), unique=True, max_size=14)):
        thread = draw(st.sampled_from("abc"))
        prev = last.get(thread, ())
        kept = draw(st.integers(0, len(prev)))
        ids: tuple[int, ...] | None = prev[:kept] + tuple(
            draw(st.lists(st.integers(-5, 40), max_size=5))
        )
        if draw(st.integers(0, 9)) == 0:
            ids = None
        else:
            last[thread] = ids  # type: ignore[assignment]
        rows[loc] = dataclasses.replace(base, request_id=f"r{loc}", thread_id=thread, hash_ids=ids)
    order = draw(st.lists(st.sampled_from(sorted(rows)), max_size=30)) if rows else []
    return rows, draw(st.permutations(sorted(rows))) + order


@settings(max_examples=300, deadline=None)
@given(_hash_rows())
def test_compact_rows_give_every_row_back(case: tuple[dict[int, Exchange], list[int]]) -> None:
    rows, order = case
    compact = CompactRows(dict(rows))
    assert len(compact) == len(rows)
    for loc in order:
        assert compact.get(loc) == rows[loc]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.sampled_from("abcd"), min_size=1, max_size=16),
    st.integers(1, 5),
)
def test_a_datasets_sessions_are_grouped_as_its_rows_are(
    tmp_path_factory: pytest.TempPathFactory, sessions: list[str], part_rows: int
) -> None:
    """Sessions interleaved over a dataset's files: grouped by id in the order of their first
    row, each session's rows in file order, as grouping every row's metadata gives them; and
    ``reindex(unit)`` gives each session again, equal."""
    d = tmp_path_factory.mktemp("ds") / "ds"
    base = chat_session("x", turns=1)[0]
    with DatasetWriter(d, part_rows=part_rows) as w:
        for i, sid in enumerate(sessions):
            w.append(
                dataclasses.replace(
                    base,
                    request_id=f"r{i}",
                    session_id=sid,
                    timing=dataclasses.replace(base.timing, start_wall_ns=T0 + i),
                )
            )
    source = open_source(d)
    assert isinstance(source, ParquetSource)
    got = list(source.index())
    rows = [m for k in range(len(source._files)) for m in source._file(k).rows]
    want = list(_grouped(rows)) if source.candidates is None else None
    if want is not None:
        assert [(s.session_id, s.exchanges) for s in got] == [
            (s.session_id, s.exchanges) for s in want
        ]
        assert [source.reindex(s.unit) for s in got] == got


def test_a_row_forgotten_and_asked_for_again_is_read_again(tmp_path: Path) -> None:
    """A loader drops the rows it is told its caller is done with; one asked for after all
    (not expected) is read back with its session, equal."""
    path = tmp_path / "t.parquet"
    write_trace(path, chat_session("a", turns=4))
    source = open_source(path)
    session = next(iter(source.index()))
    loader = source.load_session(session)
    first = [loader.exchange(m) for m in session.exchanges]
    assert isinstance(loader, Forgetting)
    held = len(loader.rows)  # type: ignore[attr-defined]
    loader.forget(session.exchanges[0])
    assert len(loader.rows) == held - 1  # type: ignore[attr-defined]
    assert [loader.exchange(m) for m in session.exchanges] == first
