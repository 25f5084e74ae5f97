"""Hugging Face datasets of Weka traces read lazily (replay, simulate): a ``.jsonl`` row's
metadata indexed with its ``hash_ids`` cut out, a request's ids read back from the file by byte
span when it is sent. What comes out equals the whole read (``iter_hf``), request by request."""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentx.formats.hf as hf
from agentx.apis.bodies import exchange_meta
from agentx.core.errors import FormatError
from agentx.core.models import Exchange, ExchangeMeta
from agentx.formats import load_exchanges
from agentx.formats.lazy import hf_rows, index_hf_jsonl, index_weka_file
from agentx.workload.plan import build_plan
from agentx.workload.source import HFSource, MemorySource, open_source

from .hf_dataset import make_hf_dataset, make_parquet_rows, weka_docs

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _unlocated(m: ExchangeMeta) -> ExchangeMeta:
    return dataclasses.replace(m, locator=-1)


def _lazy_rows(path: Path | str) -> list[tuple[ExchangeMeta, Exchange]]:
    """Every request of the source, loaded session by session (last session first: each loads
    on its own)."""
    source = open_source(path)
    assert isinstance(source, HFSource)
    out = []
    for session in reversed(list(source.index())):
        loader = source.load_session(session)
        out.extend((m, loader.exchange(m)) for m in session.exchanges)
    return out


def assert_same_as_whole_read(path: Path | str) -> int:
    """The lazy source's sessions, metadata and block ids equal the whole read's, request by
    request; returns how many requests were compared."""
    eager = list(load_exchanges(path))
    lazy = _lazy_rows(path)
    by_id = {ex.request_id: ex for ex in eager}
    assert len(by_id) == len(eager) == len(lazy)
    for meta, ex in lazy:
        whole = by_id[meta.request_id]
        assert _unlocated(meta) == exchange_meta(whole)  # ids, threads, timings, tokens, flags
        assert _unlocated(exchange_meta(ex)) == _unlocated(meta)
        assert ex.hash_ids == whole.hash_ids and ex.hash_block_size == whole.hash_block_size
    # sessions in row order, each with its rows in the whole read's order
    source = open_source(path)
    got = [(s.session_id, [_unlocated(m) for m in s.exchanges]) for s in source.index()]
    want = [
        (s.session_id, [_unlocated(m) for m in s.exchanges]) for s in MemorySource(eager).index()
    ]
    assert got == want
    return len(lazy)


def test_the_bundled_dataset_reads_lazily_as_it_reads_whole(tmp_path: Path) -> None:
    ds = make_hf_dataset(tmp_path / "ds")
    assert isinstance(open_source(ds), HFSource)
    assert isinstance(open_source(ds / "traces.jsonl"), HFSource)
    assert assert_same_as_whole_read(ds) == len(list(load_exchanges(ds))) > 50


def test_a_generated_multi_trace_jsonl_reads_lazily_as_it_reads_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(SCRIPTS))
    generate_corpus = importlib.import_module("weka_corpus").generate_corpus
    generate_corpus(tmp_path / "w", 12, seed=5, scale=0.05)
    docs = [orjson.loads(f.read_bytes()) for f in sorted((tmp_path / "w").glob("*.json"))]
    docs[3]["hash_id_scope"] = "global"  # kept as they are
    del docs[4]["id"]  # called row4
    lines = [orjson.dumps(d) for d in docs]
    lines[5] = lines[5].replace(b'"hash_ids":', b'"hash_ids" :  ')  # spans still found
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b"\n".join(lines[:7]) + b"\n\n  \n" + b"\n".join(lines[7:]))  # blank rows
    n = assert_same_as_whole_read(path)
    assert n == sum(len(list(load_exchanges(f))) for f in (tmp_path / "w").glob("*.json"))
    ids = [s.id for s in index_hf_jsonl([path])]
    assert ids[4] == "row4" and len(set(ids)) == 12
    # and as a dataset directory of two files: rows count on across files
    d = tmp_path / "ds" / "data"
    d.mkdir(parents=True)
    (d / "a.jsonl").write_bytes(b"\n".join(lines[:5]) + b"\n")
    (d / "b.jsonl").write_bytes(b"\n".join(lines[5:]) + b"\n")
    assert assert_same_as_whole_read(tmp_path / "ds") == n


def test_plans_are_the_whole_reads_sampled_or_not(tmp_path: Path) -> None:
    ds = make_hf_dataset(tmp_path / "ds")
    eager = list(load_exchanges(ds))
    for sessions in (None, 1):
        lazy = build_plan(open_source(ds), sessions=sessions, seed=3)
        whole = build_plan(eager, sessions=sessions, seed=3)
        assert not lazy.sessions.complete  # rows are sampled before any is indexed
        assert [(s.session_id, s.requests) for s in lazy.sessions] == [
            (s.session_id, s.requests) for s in whole.sessions
        ]
        assert lazy.sessions.complete
        if sessions is None:  # every row indexed: the same tally
            assert lazy.requests == whole.requests and lazy.max_threads == whole.max_threads


def _planned(path: Path) -> list[Any]:
    """Every session of the plan, each row indexed as a lane reaching it indexes it."""
    return list(build_plan(open_source(path)).sessions)


def _digits_shifted(raw: bytes) -> bytes:
    return raw.translate(bytes.maketrans(b"12345678", b"23456789"))


def _shifted(x: int) -> int:
    return int(_digits_shifted(str(x).encode()))


def test_block_ids_are_read_when_a_request_is_loaded_not_when_indexed(tmp_path: Path) -> None:
    """The index holds no block ids: ids rewritten in the file after indexing (same byte
    lengths) are what a request loads. An eager source would give the old ones."""
    ds = make_hf_dataset(tmp_path / "ds")
    path = ds / "traces.jsonl"
    eager = {ex.request_id: ex for ex in load_exchanges(ds)}
    source = open_source(ds)
    sessions = list(source.index())
    for s in sessions:
        assert all(isinstance(m, ExchangeMeta) and m.hash_only for m in s.exchanges)
    data = path.read_bytes()
    start = 0
    out = []
    while (i := data.find(b'"hash_ids": [', start)) >= 0:  # json.dumps's spacing
        j = data.index(b"]", i)
        out += [data[start:i], _digits_shifted(data[i:j])]
        start = j
    path.write_bytes(b"".join(out) + data[start:])
    assert len(path.read_bytes()) == len(data)
    changed = 0
    for s in sessions:
        loader = source.load_session(s)
        for m in s.exchanges:
            got = loader.exchange(m).hash_ids
            old = eager[m.request_id].hash_ids
            assert got is not None and old is not None
            # row k > 0 of local scope: ids offset by k * 2**32, the digits shifted before that
            offset = old[0] - (old[0] & 0xFFFFFFFF) if old else 0
            assert got == tuple(offset + _shifted(x - offset) for x in old)
            changed += got != old
    assert changed > 50


def test_bad_rows_raise_naming_file_and_line(tmp_path: Path) -> None:
    doc = weka_docs()[0]
    dup = tmp_path / "dup.jsonl"
    dup.write_bytes(orjson.dumps(doc) + b"\n\n" + orjson.dumps(doc) + b"\n")
    with pytest.raises(FormatError, match=r"dup.jsonl:3.*duplicate trace id"):
        _planned(dup)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(orjson.dumps(doc) + b"\n{not json\n")
    with pytest.raises(FormatError, match=r"bad.jsonl:2.*not valid JSON"):
        _planned(bad)
    # an id array the cut cannot find the end of: the whole read's own error
    odd = {**doc, "requests": [{**doc["requests"][0], "hash_ids": ["a]"]}]}
    tricky = tmp_path / "tricky.jsonl"
    tricky.write_bytes(orjson.dumps(doc) + b"\n" + orjson.dumps(odd) + b"\n")
    with pytest.raises(FormatError) as whole:
        list(load_exchanges(tricky))
    with pytest.raises(FormatError) as lazy:
        _planned(tricky)
    assert str(lazy.value) == str(whole.value) and "tricky.jsonl:2" in str(lazy.value)
    # ids are checked when read back, as for a Weka file, and name the row
    late = {**doc, "id": "late", "requests": [{**doc["requests"][0], "hash_ids": [1, 2.5]}]}
    path = tmp_path / "late.jsonl"
    path.write_bytes(orjson.dumps(doc) + b"\n" + orjson.dumps(late) + b"\n")
    source = open_source(path)
    *_, last = source.index()
    with pytest.raises(FormatError, match=r"late.jsonl:2.*hash_ids"):
        source.load_session(last).exchange(last.exchanges[0])


def test_parquet_rows_are_still_read_whole(tmp_path: Path) -> None:
    rows = make_parquet_rows(tmp_path / "ds" / "data" / "train-0.parquet")
    assert isinstance(open_source(rows), MemorySource)
    assert isinstance(open_source(tmp_path / "ds"), MemorySource)


def test_an_hf_url_resolving_to_jsonl_reads_lazily(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = make_hf_dataset(tmp_path / "ds")
    monkeypatch.setattr(hf, "download", lambda url: ds)
    url = "hf://datasets/semianalysisai/cc-traces-weka-062126"
    assert isinstance(open_source(url), HFSource)
    assert assert_same_as_whole_read(url) > 50


def test_a_weka_file_indexes_as_before(tmp_path: Path) -> None:
    """The shared indexer, given a whole file: spans relative to the file, errors naming it."""
    doc = weka_docs()[1]
    f = tmp_path / "t.json"
    f.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    ws = index_weka_file(f, 2)
    whole = list(load_exchanges(f))
    assert [_unlocated(m) for m in ws.exchanges] == [exchange_meta(ex) for ex in whole]
    assert ws.where == str(f) and ws.id == whole[0].session_id
    f.write_bytes(b'{"block_size": 64, "requests": [}')
    with pytest.raises(FormatError, match=r"t\.json.*not valid JSON"):
        index_weka_file(f)


# -- property: any rows, any spacing ---------------------------------------------------------------

_ids = st.lists(st.integers(0, 2**32 - 1), max_size=12)
_seconds = st.floats(0, 1e5, allow_nan=False, allow_infinity=False)
_request = st.fixed_dictionaries(
    {
        "t": _seconds,
        "type": st.sampled_from(["n", "s"]),
        "in": st.integers(-1, 10**6),  # -1: a bad row, refused alike
        "out": st.integers(0, 10**4),
        "hash_ids": _ids,
    },
    optional={
        "model": st.text(max_size=6),  # may hold '"', ']' or "hash_ids": escaped, never cut
        "ttft": _seconds,
        "api_time": _seconds,
        "think_time": _seconds,
        "stop": st.sampled_from(["end_turn", "tool_use", ""]),
    },
)
_subagent = st.fixed_dictionaries(
    {"t": _seconds, "type": st.just("subagent"), "requests": st.lists(_request, max_size=3)},
    optional={"agent_id": st.sampled_from(["a1", "a2", "main"])},
)
_doc = st.fixed_dictionaries(
    {
        "block_size": st.sampled_from([16, 64]),
        "requests": st.lists(st.one_of(_request, _request, _subagent), max_size=5),
    },
    optional={
        "id": st.one_of(st.sampled_from(["a", "b", "c", "row1", ""]), st.integers(0, 9)),
        "hash_id_scope": st.sampled_from(["local", "global"]),
        "models": st.lists(st.sampled_from(["m1", "m2"]), max_size=2),
    },
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    docs=st.lists(_doc, min_size=1, max_size=5),
    spaced=st.lists(st.booleans(), min_size=5, max_size=5),
    blanks=st.lists(st.sampled_from([b"", b"\n", b"  \n"]), min_size=5, max_size=5),
)
def test_any_rows_read_lazily_as_they_read_whole(
    tmp_path: Path, docs: list[dict[str, Any]], spaced: list[bool], blanks: list[bytes]
) -> None:
    lines = [
        json.dumps(d, separators=(", ", ": ") if s else (",", ":")).encode() + b"\n" + b
        for d, s, b in zip(docs, spaced, blanks, strict=False)
    ]
    path = tmp_path / "p.jsonl"
    path.write_bytes(b"".join(lines))
    try:
        eager = list(load_exchanges(path))
    except FormatError as exc:  # a duplicate id: refused the same way, at the same row
        with pytest.raises(FormatError) as lazy:
            _planned(path)
        assert str(lazy.value) == str(exc)
        return
    if not eager:
        assert sum(len(s.exchanges) for s in open_source(path).index()) == 0
        return
    assert_same_as_whole_read(path)
    # the sessions of a dataset without a trace id are called after their row
    assert {s.id for s in index_hf_jsonl([path])} >= {ex.session_id for ex in eager}


def _rows_by_lines(path: Path) -> list[tuple[int, int, int]]:
    """What the scan must find: every line that is not all blanks, as file iteration cuts it."""
    out, offset = [], 0
    with open(path, "rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.isspace():
                out.append((n, offset, len(line)))
            offset += len(line)
    return out


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(
        st.one_of(
            st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
            st.sampled_from([b"", b" ", b"\t \r", b" " * 70, b" " * 70 + b"x"]),
        ),
        max_size=12,
    ),
    last_newline=st.booleans(),
    chunk=st.integers(1, 80),
)
def test_the_row_scan_finds_every_line_that_is_not_blank(
    tmp_path: Path, lines: list[bytes], last_newline: bool, chunk: int
) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if last_newline and lines else b""))
    got = [(r.line, r.offset, r.length) for r in hf_rows([path], chunk_bytes=chunk)]
    assert got == _rows_by_lines(path)
