"""`agentx report DIR [--compare BASE] [--html FILE] [--json]` on results directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.report import load_results
from agentx.store.results import write_requests

from .sample import records, summary


def results_dir(path: Path, s: dict[str, Any], slow: float = 1.0) -> Path:
    path.mkdir()
    (path / "summary.json").write_bytes(orjson.dumps(s))
    write_requests(path / "requests.parquet", records(slow))
    return path


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    base = results_dir(tmp_path / "base", summary(), 1.0)
    new = results_dir(tmp_path / "new", summary(slow=2.0), 2.0)
    return base, new


runner = CliRunner()


class TestReportCommand:
    def test_renders_the_summary(self, runs: tuple[Path, Path]) -> None:
        base, _ = runs
        r = runner.invoke(app, ["report", str(base)])
        assert r.exit_code == 0, r.output
        assert "| TTFT " in r.output and "73.4%" in r.output

    def test_json_is_the_summary(self, runs: tuple[Path, Path]) -> None:
        base, _ = runs
        r = runner.invoke(app, ["report", str(base), "--json"])
        assert r.exit_code == 0
        assert json.loads(r.stdout) == json.loads((base / "summary.json").read_text())

    def test_compare(self, runs: tuple[Path, Path]) -> None:
        base, new = runs
        r = runner.invoke(app, ["report", str(new), "--compare", str(base), "--json"])
        assert r.exit_code == 0
        cmp = json.loads(r.stdout)
        assert cmp["schema"] == "agentx.compare/1"
        ttft = next(m for m in cmp["metrics"] if m["key"] == "latency_ms.ttft.p50")
        assert ttft["ratio"] == pytest.approx(2.0) and ttft["change"] == "worse"
        r = runner.invoke(app, ["report", str(new), "--compare", str(base)])
        assert r.exit_code == 0 and "latency_ms.ttft.p50" in r.output and "2.00x" in r.output

    def test_html(self, runs: tuple[Path, Path], tmp_path: Path) -> None:
        base, _ = runs
        out = tmp_path / "r.html"
        r = runner.invoke(app, ["report", str(base), "--html", str(out)])
        assert r.exit_code == 0
        assert out.read_text().startswith("<!DOCTYPE html>")

    def test_not_a_results_dir_is_one_line_exit_1(self, tmp_path: Path) -> None:
        r = runner.invoke(app, ["report", str(tmp_path)])
        assert r.exit_code == 1
        assert "no summary.json" in r.output and "Traceback" not in r.output

    def test_wrong_schema(self, tmp_path: Path) -> None:
        (tmp_path / "summary.json").write_text('{"schema": "agentx.stats/1"}')
        r = runner.invoke(app, ["report", str(tmp_path)])
        assert r.exit_code == 1 and "agentx.summary/1" in r.output

    def test_corrupt_json(self, tmp_path: Path) -> None:
        (tmp_path / "summary.json").write_text('{"schema": ')
        r = runner.invoke(app, ["report", str(tmp_path)])
        assert r.exit_code == 1 and "unreadable" in r.output


class TestLoadResults:
    def test_summary_and_records(self, runs: tuple[Path, Path]) -> None:
        base, _ = runs
        s, recs = load_results(base)
        assert s["schema"] == "agentx.summary/1"
        assert recs == records(1.0)

    def test_records_are_optional(self, tmp_path: Path) -> None:
        (tmp_path / "summary.json").write_bytes(orjson.dumps(summary()))
        s, recs = load_results(tmp_path)
        assert recs == [] and s["requests"]["total"] == 18
