"""`agentx report DIR [--compare BASE] [--html FILE] [--json]` on results directories."""

from __future__ import annotations

import csv
import json
import struct
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.metrics import latency
from agentx.report import load_results
from agentx.report.results_dir import write_results
from agentx.store.results import write_requests

from .sample import records, summary, typed


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
        assert r.exit_code == 0 and "TTFT p50" in r.output and "2.00x" in r.output
        assert "▲ worse" in r.output and "verdict: worse" in r.output

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
        assert s.to_json()["schema"] == "agentx.summary/1"
        assert recs == records(1.0)

    def test_records_are_optional(self, tmp_path: Path) -> None:
        (tmp_path / "summary.json").write_bytes(orjson.dumps(summary()))
        s, recs = load_results(tmp_path)
        assert recs == [] and s.requests.total == 18


COST = ["--gpu-hour-cost", "2", "--gpus", "8", "--price", "input=3,cached=0.3,output=15"]


class TestRecompute:
    def test_cost_from_a_saved_run(self, runs: tuple[Path, Path]) -> None:
        base, _ = runs
        r = runner.invoke(app, ["report", str(base), "--json", *COST, "--license-fraction", "0.3"])
        assert r.exit_code == 0, r.output
        s = json.loads(r.stdout)
        out_tps = s["throughput"]["output_tokens_per_s"]
        assert s["cost"]["usd_per_million_output_tokens"] == pytest.approx(
            16 / (out_tps * 3600) * 1e6
        )
        assert s["cost"]["gross_margin"] is not None
        # the saved summary is not rewritten
        assert json.loads((base / "summary.json").read_text()).get("cost") is None
        r = runner.invoke(app, ["report", str(base), *COST])
        assert "cost per million output tokens" in r.stdout and "gross margin" in r.stdout

    def test_percentiles_from_requests_parquet(self, runs: tuple[Path, Path]) -> None:
        base, _ = runs
        r = runner.invoke(app, ["report", str(base), "--json", "--percentiles", "50,95,99.9"])
        assert r.exit_code == 0, r.output
        ttft = json.loads(r.stdout)["latency_ms"]["ttft"]
        assert list(ttft) == ["p50", "p90", "p95", "p99", "p99.9", "mean", "max"]
        assert ttft["p90"] <= ttft["p95"] <= ttft["p99"] <= ttft["p99.9"] <= ttft["max"]
        r = runner.invoke(app, ["report", str(base), "--percentiles", "95,99.9"])
        assert "p99.9" in r.stdout and "p95" in r.stdout

    def test_percentiles_need_the_records(self, tmp_path: Path) -> None:
        (tmp_path / "summary.json").write_bytes(orjson.dumps(summary()))
        r = runner.invoke(app, ["report", str(tmp_path), "--percentiles", "95"])
        assert r.exit_code == 1 and "requests.parquet" in r.output

    def test_bad_cost_options_are_usage_errors(self, runs: tuple[Path, Path]) -> None:
        base, _ = runs
        for extra in (["--price", "input=3"], ["--price-preset", "nope"], ["--pue", "1.2"]):
            r = runner.invoke(app, ["report", str(base), *extra])
            assert r.exit_code == 2, (extra, r.output)
            assert "Traceback" not in r.output


class TestCompareHtml:
    def test_the_page_is_the_comparison(self, runs: tuple[Path, Path], tmp_path: Path) -> None:
        base, new = runs
        out = tmp_path / "cmp.html"
        r = runner.invoke(app, ["report", str(new), "--compare", str(base), "--html", str(out)])
        assert r.exit_code == 0, r.output
        html = out.read_text()
        assert "agentx comparison" in html and "verdict: worse" in html
        assert "<td><span class='worse'>TTFT p50</span></td>" in html and "2.00x" in html
        assert "TTFT distribution (CDF)" in html and 'stroke-dasharray="6 4"' in html  # base
        own = tmp_path / "own.html"
        runner.invoke(app, ["report", str(new), "--html", str(own)])
        assert own.read_text() != html

    def test_warns_when_configurations_differ(self, tmp_path: Path) -> None:
        a, b = summary(), summary()
        b["config"] = {**b["config"], "concurrency": 8}
        base = results_dir(tmp_path / "a", a)
        new = results_dir(tmp_path / "b", b)
        html = tmp_path / "c.html"
        r = runner.invoke(app, ["report", str(new), "--compare", str(base), "--html", str(html)])
        assert r.exit_code == 0
        assert "configured differently" in r.stdout and "config.concurrency 3 -> 8" in r.stdout
        assert r.output.count("configured differently") == 1  # once: in the report, not stderr
        assert "configured differently" in html.read_text()
        r = runner.invoke(app, ["report", str(new), "--compare", str(base), "--json"])
        assert r.stderr.count("configured differently") == 1  # stdout is the JSON
        diffs = json.loads(r.stdout)["config_differences"]
        assert diffs == [{"key": "config.concurrency", "base": 3, "new": 8}]

    def test_same_configuration_no_warning(self, runs: tuple[Path, Path]) -> None:
        base, new = runs
        r = runner.invoke(app, ["report", str(new), "--compare", str(base)])
        assert "configured differently" not in r.output


class TestExports:
    def test_csv(self, runs: tuple[Path, Path], tmp_path: Path) -> None:
        base, _ = runs
        out = tmp_path / "csv"
        r = runner.invoke(app, ["report", str(base), "--csv", str(out)])
        assert r.exit_code == 0, r.output
        names = {p.name for p in out.iterdir()}
        assert names == {
            "requests.csv",
            "summary.csv",
            "sessions.csv",
            "turns.csv",
            "time_series.csv",
        }
        with (out / "requests.csv").open() as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == len(records(1.0))
        ok = next(r for r in rows if r["ok"] == "True")
        record = {r.request_id: r for r in records(1.0)}[ok["request_id"]]
        assert int(ok["ttft_ns"]) == record.ttft_ns
        assert float(ok["ttft_ms"]) == pytest.approx(latency.ttft_ms(record))  # the derived column
        assert len(ok["itl_ns"].split()) == 31
        with (out / "summary.csv").open() as f:
            kv = dict(csv.reader(f))
        assert kv["latency_ms.ttft.p50"] == "165.0" and kv["schema"] == "agentx.summary/1"
        assert "rollups.per_session" not in kv  # the roll-ups have their own files

    def test_png_of_every_chart(self, runs: tuple[Path, Path], tmp_path: Path) -> None:
        base, _ = runs
        out = tmp_path / "png"
        r = runner.invoke(app, ["report", str(base), "--png", str(out), *COST])
        assert r.exit_code == 0, r.output
        names = {p.stem for p in out.glob("*.png")}
        assert {"ttft_cdf", "itl_cdf", "e2e_cdf", "margin_vs_utilization", "ttft_by_turn"} <= names
        assert {"requests_over_time", "hit_rate_over_time", "prompt_tokens_by_source"} <= names
        for p in out.glob("*.png"):
            data = p.read_bytes()
            assert data.startswith(b"\x89PNG\r\n\x1a\n")
            width, height = struct.unpack(">II", data[16:24])
            assert width >= 600 and height >= 100  # rendered at 2x
            assert f"wrote {p}" in r.stderr


def test_results_written_before_the_cdfs_get_them_from_the_records(tmp_path: Path) -> None:
    old = summary()
    del old["rollups"]["latency_quantiles_ms"]
    d = results_dir(tmp_path / "old", old)
    r = runner.invoke(app, ["report", str(d), "--json"])
    curves = json.loads(r.stdout)["rollups"]["latency_quantiles_ms"]
    assert curves["ttft"] == summary()["rollups"]["latency_quantiles_ms"]["ttft"]


class TestOwnPages:
    def test_its_own_page_is_rewritten_without_force(self, runs: tuple[Path, Path]) -> None:
        base, new = runs
        page = base.parent / "report.html"
        assert runner.invoke(app, ["report", str(base), "--html", str(page)]).exit_code == 0
        first = page.read_text()
        r = runner.invoke(app, ["report", str(base), "--html", str(page)])
        assert r.exit_code == 0, r.output
        assert page.read_text() == first
        r = runner.invoke(app, ["report", str(new), "--html", str(page)])  # another run's
        assert r.exit_code == 2 and "agentx's page of other results" in r.output
        assert page.read_text() == first
        assert (
            runner.invoke(app, ["report", str(new), "--html", str(page), "--force"]).exit_code == 0
        )

    def test_a_users_file_is_never_replaced_without_force(self, runs: tuple[Path, Path]) -> None:
        base, _ = runs
        mine = base.parent / "mine.html"
        mine.write_text("<!DOCTYPE html><p>my notes</p>")
        r = runner.invoke(app, ["report", str(base), "--html", str(mine)])
        assert r.exit_code == 2 and "already exists: pass --force" in r.output
        assert mine.read_text() == "<!DOCTYPE html><p>my notes</p>"

    def test_the_page_a_run_wrote_in_its_directory(self, tmp_path: Path) -> None:
        run_dir = tmp_path / "run"
        write_results(run_dir, typed(), records())  # as replay writes it: report.html inside
        page = run_dir / "report.html"
        r = runner.invoke(app, ["report", str(run_dir), "--html", str(page), "--percentiles", "95"])
        assert r.exit_code == 0, r.output
        assert "p95" in page.read_text()


class TestTerminalCompare:
    def test_the_comparison_alone(self, runs: tuple[Path, Path]) -> None:
        base, new = runs
        r = runner.invoke(app, ["report", str(new), "--compare", str(base)])
        assert r.exit_code == 0
        assert r.stdout.startswith("base ") and "verdict: " in r.stdout
        assert "cache & throughput" not in r.stdout and "| latency " not in r.stdout
