"""A memoised prompt keeps the ids its thread's renumbering gave it (as runs); a hash-only
trace's prompts from its stored ids."""

from __future__ import annotations

import contextlib
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings

from agentx.core.examples import example_path
from agentx.formats import load_exchanges
from agentx.prefixcache.engine import EngineParams
from agentx.prefixcache.hashing import make_hasher
from agentx.schedule import ScheduleOptions
from agentx.simulate.dense import Renumberer
from agentx.simulate.prompts import Prompt, PromptSource
from agentx.simulate.replayed import run_engine
from agentx.simulate.runs import id_runs
from agentx.simulate.schedule import SharedSchedule
from agentx.store import write_trace
from agentx.workload.build import BuildConfig
from agentx.workload.plan import build_plan
from agentx.workload.source import open_source

from .test_dense import _chains, turns


@settings(max_examples=150, deadline=None)
@given(turns)
def test_prompts_keep_the_renumbered_ids(plan: list[tuple[int, int | None, int]]) -> None:
    numbers = Renumberer(max_threads=3, first_id=1)
    for thread, hashes in _chains(plan):
        ids = numbers.ids(hashes, thread)
        want = ids.tolist()  # before the thread's later turns reuse its buffer
        prompt = Prompt(id_runs(ids), len(want), 0)
        assert prompt.blocks.tolist() == want


@pytest.mark.parametrize(("block_size", "kv_tokens"), [(64, 1 << 40), (128, 60_000)])
def test_stored_ids_give_the_prompts_the_decoded_rows_give(
    tmp_path: Path, block_size: int, kv_tokens: int
) -> None:
    """A hash-only agentx trace's prompts chained from its stored ids (no row decoded) are the
    ones its decoded exchanges give, request for request, under eviction too."""
    path = tmp_path / "weka.parquet"
    write_trace(path, load_exchanges(example_path("weka")))
    plan = build_plan(open_source(path))
    runs = []
    for stored in (True, False):
        src = PromptSource(
            BuildConfig("chat", "m", {}, True, False),
            make_hasher(None, block_size),
            plan.source,
            hash_block_size=block_size,
        )
        if not stored:
            src._id_source = None  # the rows decoded whole, as for any other source
        sched = SharedSchedule(plan.sessions, ScheduleOptions(concurrency=2, time_scale=0))
        failing = mock.patch.object(src, "_exchange", side_effect=AssertionError("row decoded"))
        with failing if stored else contextlib.nullcontext():
            runs.append(
                run_engine(sched, src, EngineParams(block_size=block_size, kv_tokens=kv_tokens))
            )
        assert src.hashed_prompts == plan.requests
    assert runs[0].records == runs[1].records and runs[0].records
