"""``report --trend``: runs oldest first, series by the labels that differ, the frontier, a
warning for runs of different traces, and the files ``-o DIR`` writes."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from typer.testing import CliRunner

from agentx.cli import app
from agentx.report.trend import build_trend, frontier
from agentx.results.trend import Trend

from .sample import summary

runner = CliRunner()


def _run(tmp: Path, name: str, slow: float, day: int, fingerprint: str, **labels: str) -> Path:
    s = summary(slow=slow)
    s["started_at"] = f"2026-11-{day:02d}T03:00:00+00:00"
    s["labels"], s["trace_fingerprint"] = labels, fingerprint
    path = tmp / name
    path.mkdir()
    (path / "summary.json").write_bytes(orjson.dumps(s))
    return path


def test_runs_in_time_order_in_series_with_their_frontier(tmp_path: Path) -> None:
    fp = "cd" * 32
    late = _run(tmp_path, "late", 1.5, 12, fp, engine="b", host="x")
    early = _run(tmp_path, "early", 1.0, 10, fp, engine="a", host="x")
    mid = _run(tmp_path, "mid", 0.8, 11, fp, engine="b", host="x")
    trend = build_trend([late, early, mid])
    assert [Path(p.results_dir).name for p in trend.points] == ["early", "mid", "late"]
    assert trend.group_by == ("engine",) and trend.warnings == ()
    assert [p.series for p in trend.points] == ["engine=a", "engine=b", "engine=b"]
    # the fastest run is faster per user and delivers more: it alone is on the frontier
    assert [p.on_frontier for p in trend.points] == [False, True, False]
    assert frontier(trend.points) == [p.on_frontier for p in trend.points]
    assert Trend.from_json(json.loads(json.dumps(trend.to_json()))) == trend


def test_other_traces_warn_and_the_files_are_written(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", 1.0, 1, "aa" * 32)
    b = _run(tmp_path, "b", 1.2, 2, "bb" * 32)
    out = tmp_path / "trend"
    res = runner.invoke(app, ["report", str(a), str(b), "--trend", "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    assert "the runs replayed different traces" in res.stderr
    assert json.loads(res.stdout)["schema"] == "agentx.trend/1"
    assert {"trend.json", "trend.html", "trend.csv", "trend_pareto.png"} <= {
        p.name for p in out.iterdir()
    }
    assert all(p.series == "all runs" for p in build_trend([a, b]).points)
    refused = runner.invoke(app, ["report", str(a), str(b), "--trend", "--compare", str(a)])
    assert refused.exit_code == 2 and "--trend" in refused.output
    one = runner.invoke(app, ["report", str(a), "--trend"])
    assert one.exit_code == 2 and "two or more" in one.output
