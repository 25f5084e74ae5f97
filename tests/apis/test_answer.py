"""The answer serve-sim's emitters render: the filler text."""

from __future__ import annotations

import pytest

from agentx.apis.answer import filler_cycle, filler_text
from agentx.prefixcache.tokens import count_tokens


@pytest.mark.parametrize("n", [1, 7, 100, 1000, len(filler_cycle(0)) + 5])
def test_filler_retokenizes_to_its_length(n: int) -> None:
    assert count_tokens(filler_text(n)) == n


def test_filler_is_deterministic_and_seeded() -> None:
    assert filler_text(50, seed=1) == filler_text(50, seed=1)
    assert filler_text(50, seed=1) != filler_text(50, seed=2)
