"""capture -> scrub -> anonymize -> pack -> verify -> replay: what a team publishes is what a
receiver checks and replays (serve-sim as the server); ``stats``, ``simulate`` and ``replay``
take the packed directory, and an ``hf://`` repository of one."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from agentx.demo.run import run_demo
from agentx.replay.options import ReplayOptions
from agentx.replay.run import run_replay
from agentx.scrub.anonymize import AnonymizeOptions, anonymize_trace
from agentx.serve_sim.config import SimConfig
from agentx.serve_sim.server import SimServer
from agentx.simulate import run_simulate
from agentx.simulate.options import simulate_options
from agentx.workload.source import ParquetSource, open_source


def test_capture_scrub_anonymize_pack_verify_replay(tmp_path: Path) -> None:
    from agentx.dataset.options import PackOptions
    from agentx.dataset.pack import pack
    from agentx.dataset.verify import verify

    demo = run_demo(
        tmp_path / "demo", agent_sessions=2, agent_turns=3, trace=None, time_scale=0.0,
        say=lambda _: None,
    )  # fmt: skip
    shareable = tmp_path / "shareable.parquet"
    anonymize_trace(demo.clean_path, shareable, AnonymizeOptions(key=b"k"))
    packed = tmp_path / "dataset"
    manifest = pack([shareable], packed, PackOptions(plots=False))
    assert manifest.stats.requests == demo.captured_requests == 6
    assert manifest.privacy.scrubbed_by == "agentx.scrub/1"
    assert verify(packed).ok

    with SimServer(SimConfig.of(port=0, fast=True)) as server:
        result = run_replay(
            ReplayOptions.of(
                trace=packed,
                endpoint=server.url,
                concurrency=2,
                time_scale=0.0,
                output_dir=tmp_path / "results",
                progress=False,
            )
        )
    summary = result.summary.to_json()
    assert (summary["requests"]["total"], summary["requests"]["ok"]) == (6, 6)
    # the replay's theoretical hit rate is the packed card's: the same prompts, token for token
    assert summary["cache"]["theoretical_hit_rate"] == pytest.approx(
        manifest.stats.theoretical_hit_rate, abs=0.05
    )


def test_simulate_reads_a_packed_directory(packed: Path) -> None:
    by_dir = run_simulate(simulate_options(trace=packed, capacity_tokens=(4096, 65536)))
    by_config = run_simulate(
        simulate_options(trace=packed / "data" / "all", capacity_tokens=(4096, 65536))
    )
    assert by_dir.data.points == by_config.data.points
    assert by_dir.data.format == "agentx"


class FakeHub:
    """``huggingface_hub``'s two downloads, served from a local directory (the hub cannot be
    reached from the test machines): a file of the repository, and a snapshot of the files the
    patterns allow, each into a cache folder named by the revision, as the client does."""

    def __init__(self, repo_dir: Path, cache: Path) -> None:
        self.repo_dir, self.cache = repo_dir, cache
        self.calls: list[tuple[str, Any]] = []

    def _snap(self, revision: str | None) -> Path:
        return self.cache / (revision or "0" * 40)

    def hf_hub_download(self, repo: str, filename: str, **kw: Any) -> str:
        self.calls.append(("file", filename))
        target = self._snap(kw.get("revision")) / filename
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.repo_dir / filename, target)
        return str(target)

    def snapshot_download(self, repo: str, **kw: Any) -> str:
        import fnmatch

        patterns = kw.get("allow_patterns")
        self.calls.append(("snapshot", patterns))
        snap = self._snap(kw.get("revision"))
        for f in self.repo_dir.rglob("*"):
            rel = f.relative_to(self.repo_dir).as_posix()
            if f.is_file() and (patterns is None or any(fnmatch.fnmatch(rel, p) for p in patterns)):
                (snap / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, snap / rel)
        return str(snap)


def test_an_hf_repository_of_a_packed_dataset_reads_its_default_config(
    packed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub_module = pytest.importorskip("huggingface_hub")
    from agentx.dataset.verify import verify
    from agentx.workload.stats import compute_stats

    hub = FakeHub(packed, tmp_path / "cache")
    monkeypatch.setattr(hub_module, "hf_hub_download", hub.hf_hub_download)
    monkeypatch.setattr(hub_module, "snapshot_download", hub.snapshot_download)
    url = "hf://datasets/org/name@" + "a" * 40
    source = open_source(url)
    assert isinstance(source, ParquetSource)
    assert hub.calls[-1] == (
        "snapshot",
        ["manifest.json", "README.md", "data/all/train-00000-of-00001.parquet"],
    )  # the default config only, not every config and export
    stats = compute_stats(url).to_json()
    assert stats["sessions"] == compute_stats(packed).sessions
    report = verify(url)  # downloads every file
    assert report.ok, report.differences
    assert report.revision == "a" * 40 and hub.calls[-1] == ("snapshot", None)
