"""A memoised prompt keeps the ids its thread's renumbering gave it (as runs)."""

from __future__ import annotations

from hypothesis import given, settings

from agentx.simulate.dense import Renumberer
from agentx.simulate.prompts import Prompt
from agentx.simulate.runs import id_runs

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
