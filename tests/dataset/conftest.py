"""A shareable trace and its packed dataset, made once per test session: the bundled example
scrubbed and anonymized (what a user publishes), then packed."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentx.core.examples import example_path
from agentx.dataset.options import PackOptions
from agentx.dataset.pack import pack
from agentx.scrub.anonymize import AnonymizeOptions, anonymize_trace
from agentx.scrub.pipeline import ScrubOptions, scrub_trace


@pytest.fixture(scope="session")
def scrubbed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scrubbed") / "scrubbed.parquet"
    scrub_trace(example_path("example"), out, ScrubOptions(hit_rate=False))
    return out


@pytest.fixture(scope="session")
def shareable(tmp_path_factory: pytest.TempPathFactory, scrubbed: Path) -> Path:
    out = tmp_path_factory.mktemp("shareable") / "shareable.parquet"
    anonymize_trace(scrubbed, out, AnonymizeOptions(key=b"test"))
    return out


@pytest.fixture(scope="session")
def packed(tmp_path_factory: pytest.TempPathFactory, shareable: Path) -> Path:
    out = tmp_path_factory.mktemp("packed") / "example-dataset"
    pack([shareable], out, PackOptions(name="agentx example", license="apache-2.0"))
    return out
