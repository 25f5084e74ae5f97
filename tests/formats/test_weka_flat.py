"""Flat parallel agents of Weka traces split into threads (agentx/formats/weka/flat.py), checked
against agentx-harness 1.0.12's own reading of three real traces (tests/formats/data/weka-flat,
recorded by scripts/harness_reading.py in the harness's venv), and the same threads from every
reader: whole files, the lazy index, Hugging Face rows, the Weka export back."""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentx.core.flags import WEKA_CHAIN, WEKA_SEAMS, weka_values
from agentx.core.models import Exchange, ExchangeMeta
from agentx.formats import load_exchanges
from agentx.formats.convert import convert
from agentx.formats.hf import iter_hf
from agentx.formats.lazy import index_hf_jsonl, index_weka_file
from agentx.formats.weka import read_weka_file

DATA = Path(__file__).parent / "data" / "weka-flat"
FILES = sorted(DATA.glob("*.json"))
READING: dict[str, Any] = orjson.loads((DATA / "HARNESS_READING").read_bytes())


def _doc(path: Path) -> dict[str, Any]:
    return orjson.loads(path.read_bytes())  # type: ignore[no-any-return]


def _top(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in doc["requests"] if r.get("type") != "subagent"]


def harness_chains(path: Path) -> dict[str, list[tuple[float, int]]]:
    """The harness's chains of a file: name -> (t, in) of its requests in turn order."""
    chains: dict[str, dict[int, tuple[float, int]]] = defaultdict(dict)
    for (name, turn), r in zip(READING[path.name]["chains"], _top(_doc(path)), strict=True):
        chains[name][turn] = (float(r["t"]), r["in"])
    return {name: [turns[k] for k in range(len(turns))] for name, turns in chains.items()}


def agentx_chains(rows: list[Exchange] | list[ExchangeMeta]) -> dict[str, list[tuple[float, int]]]:
    """agentx's threads of one session: name -> (t, in) of its requests in turn order."""
    turns: dict[str, dict[int, tuple[float, int]]] = defaultdict(dict)
    for ex in rows:
        thread, _, n = ex.request_id.rpartition("/")
        name = thread.rsplit("/", 1)[-1]
        start = ex.timing.start_wall_ns if isinstance(ex, Exchange) else ex.start_wall_ns
        tokens = ex.usage.prompt_tokens if isinstance(ex, Exchange) else ex.prompt_tokens
        assert tokens is not None
        turns[name][int(n)] = (round(start / 1e9, 6), tokens)
    return {name: [ts[k] for k in range(len(ts))] for name, ts in turns.items()}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_the_split_is_the_harness_reading(path: Path) -> None:
    trace = read_weka_file(path)
    assert agentx_chains(list(trace.exchanges)) == harness_chains(path)
    assert len(harness_chains(path)) == 1 + READING[path.name]["counts"]["chains"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_a_chain_is_spawned_by_the_last_main_request_before_it_in_the_file(path: Path) -> None:
    exs = read_weka_file(path).exchanges
    first_of = {ex.thread_id: ex for ex in exs if ex.request_id.endswith("/0")}
    last_main: int | None = None
    for name, turn in READING[path.name]["chains"]:  # the top-level requests in file order
        if name == "main":
            last_main = turn
            continue
        if turn == 0:
            spawner = f"{path.stem}/main/{0 if last_main is None else last_main}"
            assert first_of[f"{path.stem}/{name}"].parent_request_id == spawner
    for ex in exs:
        assert bool(weka_values(ex.flags, WEKA_CHAIN)) == (not ex.thread_id.endswith("/main"))


def test_the_counts_are_the_harness_logs(tmp_path: Path) -> None:
    from agentx.workload.stats import compute_stats

    want = defaultdict(int)
    for entry in READING.values():
        for key, n in entry["counts"].items():
            want[key] += n
    got = compute_stats(DATA).flat_chains
    assert got is not None
    assert (
        got.traces_split,
        got.chains,
        got.sidecars,
        got.reductions,
        got.worker_group,
        got.seams_merged,
        got.empty_hash_on_main,
    ) == (
        want["traces_split"],
        want["chains"],
        want["aux"],
        want["reductions"],
        want["worker_group"],
        want["seams"],
        want["empty_hash"],
    )
    assert got.agents == got.chains - got.sidecars - got.reductions - got.worker_group
    assert compute_stats(DATA, flat_chains=False).flat_chains is None
    seams = [
        v for ex in read_weka_file(FILES[0]).exchanges for v in weka_values(ex.flags, WEKA_SEAMS)
    ]
    assert seams == [str(READING[FILES[0].name]["counts"]["seams"])]


def test_off_keeps_the_flat_order_on_one_main_thread() -> None:
    for path in FILES:
        exs = read_weka_file(path, flat_chains=False).exchanges
        assert {ex.thread_id for ex in exs} == {f"{path.stem}/main"}
        assert [ex.usage.prompt_tokens for ex in exs] == [r["in"] for r in _top(_doc(path))]
        assert not any(weka_values(ex.flags, WEKA_CHAIN) for ex in exs)


def _meta(ex: Exchange) -> tuple[object, ...]:
    return (
        ex.request_id,
        ex.thread_id,
        ex.parent_request_id,
        ex.timing.start_wall_ns,
        ex.usage.prompt_tokens,
        ex.flags,
    )


def _meta_of(m: ExchangeMeta) -> tuple[object, ...]:
    return (
        m.request_id,
        m.thread_id,
        m.parent_request_id,
        m.start_wall_ns,
        m.prompt_tokens,
        m.flags,
    )


@pytest.mark.parametrize("flat", [True, False])
def test_every_reader_gives_the_same_threads(tmp_path: Path, flat: bool) -> None:
    whole = [[_meta(ex) for ex in read_weka_file(p, flat_chains=flat).exchanges] for p in FILES]
    lazy = [[_meta_of(m) for m in index_weka_file(p, flat_chains=flat).exchanges] for p in FILES]
    assert lazy == whole
    jsonl = tmp_path / "traces.jsonl"
    jsonl.write_bytes(b"".join(orjson.dumps(_doc(p)) + b"\n" for p in FILES))
    rows = [[_meta_of(m) for m in ws.exchanges] for ws in index_hf_jsonl([jsonl], flat_chains=flat)]
    read = defaultdict(list)
    for ex in iter_hf(jsonl, flat_chains=flat):
        read[ex.session_id].append(_meta(ex))
    strip = [[row[1:] for row in s] for s in whole]  # hf rows: ids offset per row, same threads
    assert [[row[1:] for row in s] for s in rows] == strip
    assert [[row[1:] for row in s] for s in read.values()] == strip


def test_weka_export_gives_the_files_back(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for p in FILES:
        shutil.copy(p, src / p.name)
    convert(src, tmp_path / "t.parquet")
    assert any(weka_values(ex.flags, WEKA_CHAIN) for ex in load_exchanges(tmp_path / "t.parquet"))
    convert(tmp_path / "t.parquet", tmp_path / "back", to="weka")
    convert(src, tmp_path / "direct", to="weka")
    for p in FILES:
        assert _doc(tmp_path / "back" / p.name) == _doc(p)
        assert _doc(tmp_path / "direct" / p.name) == _doc(p)
