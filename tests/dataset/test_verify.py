"""``agentx dataset verify``: a packed directory verifies; a flipped byte, a card that no longer
says what the data gives, a missing or an extra file are each named; the command exits 1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.dataset.pack import sha256_of
from agentx.dataset.verify import verify
from agentx.results.dataset import MANIFEST, VerifyReport


@pytest.fixture
def copy(packed: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(packed, tmp_path / "copy"))


def test_a_packed_directory_verifies(packed: Path) -> None:
    report = verify(packed)
    assert report.ok, report.differences
    assert report.files_checked == len(json.loads((packed / MANIFEST).read_text())["files"])
    assert VerifyReport.from_json(report.to_json()) == report
    result = CliRunner().invoke(app, ["dataset", "verify", str(packed)])
    assert result.exit_code == 0 and "verified" in result.output


def test_a_flipped_byte_is_caught(copy: Path) -> None:
    target = copy / "data" / "all" / "train-00000-of-00001.parquet"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    report = verify(copy)
    assert "data/all/train-00000-of-00001.parquet: sha256 differs from the manifest's" in (
        report.differences
    )
    result = CliRunner().invoke(app, ["dataset", "verify", str(copy), "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["ok"] is False


def test_a_card_that_disagrees_with_the_data_is_caught(copy: Path) -> None:
    card = copy / "README.md"
    text = card.read_text()
    before = "| requests per session |"
    line = next(ln for ln in text.splitlines() if ln.startswith(before))
    card.write_text(text.replace(line, before + " 1 | 1 | 1 | 1 | 1 |"))
    manifest = json.loads((copy / MANIFEST).read_text())
    for f in manifest["files"]:  # the manifest made to agree: only the recomputation disagrees
        if f["path"] == "README.md":
            f["sha256"], f["size_bytes"] = sha256_of(card), card.stat().st_size
    (copy / MANIFEST).write_text(json.dumps(manifest))
    (diff,) = verify(copy).differences
    assert diff.startswith("README.md statistics: '| requests per session | 1 | 1 |")
    assert diff.endswith(f"the data gives {line!r}")


def test_changed_figures_in_the_manifest_are_caught(copy: Path) -> None:
    manifest = json.loads((copy / MANIFEST).read_text())
    manifest["stats"]["input_tokens"]["p50"] += 1
    manifest["figures"]["hit_rate_by_turn"][0]["hit_tokens"] += 1
    (copy / MANIFEST).write_text(json.dumps(manifest))
    diffs = verify(copy).differences
    assert any(d.startswith("stats.input_tokens.p50: manifest ") for d in diffs)
    assert any(d.startswith("figures.hit_rate_by_turn: manifest ") for d in diffs)


def test_missing_and_extra_files_are_named(copy: Path) -> None:
    (copy / "mooncake.jsonl").unlink()
    (copy / "data" / "all" / "train-00001-of-00001.parquet").write_bytes(b"PAR1")
    (copy / ".gitattributes").write_text("*.parquet filter=lfs\n")  # the hub's own: ignored
    diffs = verify(copy).differences
    assert "mooncake.jsonl: missing" in diffs
    assert "data/all/train-00001-of-00001.parquet: not in the manifest" in diffs
    assert not any(".gitattributes" in d for d in diffs)


def test_a_directory_without_a_manifest(tmp_path: Path) -> None:
    report = verify(tmp_path)
    assert not report.ok and "manifest.json" in report.differences[0]
