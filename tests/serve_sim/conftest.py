"""Fixtures for serve-sim tests: an in-process server on a free port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentx.serve_sim import SimConfig, SimServer

from .helpers import QUICK


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    """One server per test module (tests use unique prompts so they do not share prefixes)."""
    with SimServer(SimConfig.of(port=0, **QUICK)) as server:
        yield server
