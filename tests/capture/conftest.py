from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from upstream import Upstream

from agentx.capture.runner import Capture, CaptureConfig


@pytest.fixture(scope="session")
def confdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One private mitmproxy confdir (CA) for the whole run: generating a CA costs time."""
    return tmp_path_factory.mktemp("mitmconf")


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream().start()
    yield up
    up.stop()


@pytest.fixture
def start_capture(tmp_path: Path, confdir: Path) -> Iterator[Callable[..., Capture]]:
    started: list[Capture] = []

    def start(upstream_url: str | None = None, **kw: object) -> Capture:
        cfg = CaptureConfig(
            out=Path(str(kw.pop("out", tmp_path / "trace.parquet"))),
            upstream=upstream_url,
            port=0,
            confdir=confdir,
            **kw,  # type: ignore[arg-type]
        )
        cap = Capture(cfg, report=lambda msg: reports.append(msg)).start()
        cap.reports = reports  # type: ignore[attr-defined]
        started.append(cap)
        return cap

    reports: list[str] = []
    yield start
    for cap in started:
        cap.close()
