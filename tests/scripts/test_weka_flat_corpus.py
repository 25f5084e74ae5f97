"""Generated corpora with flat parallel agents (scripts/weka_corpus/flat.py): every chain the
generator makes is one of agentx's threads, of its kind, and agentx splits a corpus of them
exactly as agentx-harness 1.0.12 does (its reading recorded in data/flat-corpus.reading).

The recording is the harness's own, made in its venv; regenerate it after changing the
generator (the test says so when the corpus no longer matches it):

    .venv/bin/python tests/scripts/test_weka_flat_corpus.py /tmp/flat-corpus
    .venv-harness/bin/python scripts/harness_reading.py /tmp/flat-corpus \\
        > tests/scripts/data/flat-corpus.reading

The side-by-side replay against the harness itself is `make bench BENCH=harness`
(scripts/bench_harness.py): its venv is ~1 GB and minutes to install, too much for a test.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from weka_corpus import DEFAULT_PARAMS, generate_corpus, plan_trace
from weka_corpus.session import Request

from agentx.core.flags import FLAG_SUBAGENT, WEKA_CHAIN, weka_values
from agentx.formats.weka import read_weka_file
from agentx.formats.weka.flat import ChainKind

READING = Path(__file__).parent / "data" / "flat-corpus.reading"
SEED = 11
TRACES = 24
# every session has flat agents, of every kind
PARAMS = dataclasses.replace(
    DEFAULT_PARAMS,
    p_flat=1.0,
    flat_extra_episodes=1.5,
    flat_kinds=(0.3, 0.25, 0.15, 0.15, 0.15),
)
KIND = {
    "inline": ChainKind.AGENT,
    "parallel": ChainKind.AGENT,
    "workers": ChainKind.WORKER,
    "reduction": ChainKind.REDUCTION,
    "sidecar": ChainKind.SIDECAR,
}


def write(out: Path) -> None:
    generate_corpus(out, TRACES, SEED, params=PARAMS)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("flat")
    write(out)
    return out


def chains_of(path: Path) -> dict[str, dict[int, tuple[int, int | None]]]:
    """agentx's top-level threads of a file: name -> turn -> (start ns, in)."""
    out: dict[str, dict[int, tuple[int, int | None]]] = defaultdict(dict)
    for ex in read_weka_file(path).exchanges:
        if FLAG_SUBAGENT not in ex.flags:
            thread, _, n = ex.request_id.rpartition("/")
            key = (ex.timing.start_wall_ns, ex.usage.prompt_tokens)
            out[thread.rsplit("/", 1)[-1]][int(n)] = key
    return dict(out)


def test_every_generated_chain_is_a_thread_of_its_kind(corpus: Path) -> None:
    kinds: set[ChainKind] = set()
    for i in range(TRACES):
        trace = plan_trace(i, TRACES, SEED, params=PARAMS)
        made: dict[int, set[tuple[int, int]]] = defaultdict(set)
        for x in trace.items:
            if isinstance(x, Request) and x.chain is not None:
                made[x.chain].add((round(x.t * 1e9), x.in_tokens))
        found: dict[str, set[tuple[int, int | None]]] = defaultdict(set)
        kind_of: dict[str, ChainKind] = {}
        for ex in read_weka_file(corpus / f"{trace.id}.json").exchanges:
            kind = weka_values(ex.flags, WEKA_CHAIN)
            if kind:
                found[ex.thread_id].add((ex.timing.start_wall_ns, ex.usage.prompt_tokens))
                kind_of[ex.thread_id] = ChainKind(kind[0])
        by_requests = {frozenset(v): kind_of[t] for t, v in found.items()}
        for c, reqs in made.items():
            assert frozenset(reqs) in by_requests, (trace.id, c)
            assert by_requests[frozenset(reqs)] is KIND[trace.flat_kinds[c]], (trace.id, c)
            kinds.add(KIND[trace.flat_kinds[c]])
    assert kinds == set(ChainKind)  # the corpus has every kind


def test_the_split_is_the_harness_reading(corpus: Path) -> None:
    reading: dict[str, Any] = orjson.loads(READING.read_bytes())
    files = sorted(corpus.glob("*.json"))
    assert sorted(reading) == [f.name for f in files], "stale recording: see the docstring"
    for f in files:
        theirs: dict[str, dict[int, tuple[int, int]]] = defaultdict(dict)
        top = [r for r in orjson.loads(f.read_bytes())["requests"] if r["type"] != "subagent"]
        assert len(top) == len(reading[f.name]["chains"]), f"{f.name}: stale recording"
        for (name, turn), r in zip(reading[f.name]["chains"], top, strict=True):
            theirs[name][turn] = (round(r["t"] * 1e9), r["in"])
        assert chains_of(f) == dict(theirs), f.name
    split = sum(e["counts"]["traces_split"] for e in reading.values())
    assert split == TRACES  # every session has flat agents


if __name__ == "__main__":  # write the corpus the recording is made of
    write(Path(sys.argv[1]))
