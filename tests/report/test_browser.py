"""The HTML reports in a real headless Chromium: a run's report, a comparison, a sweep page and a
run over two replicas load with no console error, no script exception and no network request, do
not overflow a phone-sized viewport, show the hit rate and the failed requests on the first
screen, and leave screenshots in ``artifacts/browser/`` (git-ignored; CI keeps them).

Chromium is Debian's package (``scripts/install_chromium.sh``, run by ``.ci/run``). Without it
the test skips with the reason, except under ``CI=true`` where it fails: CI must run it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.report.sweep_view import sweep_point
from agentx.results.summary import Summary
from agentx.results.sweep import SCHEMA as SWEEP_SCHEMA
from agentx.store.results import write_requests

from .browser import Browser, find_chromium
from .sample import records, routed, routed_records, summary

ARTIFACTS = Path(os.environ.get("AGENTX_ARTIFACTS", Path(__file__).parents[2] / "artifacts"))
WIDTHS = (1100, 390)  # a laptop window, a phone
COST = ["--gpu-hour-cost", "2", "--gpus", "8", "--price-preset", "claude-sonnet-4.5"]
COST += ["--license-fraction", "0.3", "--utilization", "0.6"]

runner = CliRunner()


@pytest.fixture(scope="module")
def chromium() -> str:
    path = find_chromium()
    if path is None:
        reason = "chromium is not installed (bash scripts/install_chromium.sh installs it)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}: CI must run the browser test")
        pytest.skip(reason)
    return path


def _results(path: Path, slow: float, concurrency: int) -> Path:
    s = summary(slow=slow)
    s["config"] = {**s["config"], "concurrency": concurrency}
    path.mkdir(parents=True)
    (path / "summary.json").write_bytes(orjson.dumps(s))
    write_requests(path / "requests.parquet", records(slow))
    return path


def _pages(tmp: Path) -> dict[str, Path]:
    """A run's report, a comparison (differently configured: it warns), a sweep page and the
    report of a run over two replicas."""
    base = _results(tmp / "base", 1.0, 3)
    new = _results(tmp / "new", 1.6, 4)
    pages = {"report": tmp / "report.html", "compare": tmp / "compare.html"}
    r = runner.invoke(app, ["report", str(new), "--html", str(pages["report"]), *COST])
    assert r.exit_code == 0, r.output
    args = ["report", str(new), "--compare", str(base), "--html", str(pages["compare"]), *COST]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    sweep = tmp / "sweep"
    points = []
    for n, slow in ((1, 1.0), (2, 1.3), (4, 1.6), (8, 2.4)):
        level = _results(sweep / f"c{n}", slow, n)
        s = Summary.from_json(json.loads((level / "summary.json").read_text()))
        points.append(sweep_point(n, s).to_json())
    doc = {"schema": SWEEP_SCHEMA, "endpoint": "http://127.0.0.1:8011", "trace": "example"}
    (sweep / "sweep.json").write_text(json.dumps({**doc, "model": "m", "points": points}))
    pages["sweep"] = tmp / "sweep.html"
    r = runner.invoke(app, ["report", str(sweep), "--html", str(pages["sweep"]), *COST])
    assert r.exit_code == 0, r.output
    over_two = tmp / "routed"  # a run over two replicas: its Replicas section, 14 columns wide
    over_two.mkdir()
    (over_two / "summary.json").write_bytes(orjson.dumps(routed().to_json()))
    write_requests(over_two / "requests.parquet", routed_records())
    pages["routed"] = tmp / "routed.html"
    r = runner.invoke(app, ["report", str(over_two), "--html", str(pages["routed"])])
    assert r.exit_code == 0, r.output
    return pages


async def test_reports_in_chromium(chromium: str, tmp_path: Path) -> None:
    pages = _pages(tmp_path)
    problems = []
    async with Browser(chromium) as browser:
        for name, page in pages.items():
            for width in WIDTHS:
                shot = ARTIFACTS / "browser" / f"{name}-{width}.png"
                rep = await browser.open(page, width, screenshot=shot)
                where = f"{name} at {width}px"
                problems += [f"{where}: console error {e}" for e in rep.console_errors]
                problems += [f"{where}: exception {e}" for e in rep.exceptions]
                problems += [f"{where}: network request {u}" for u in rep.network]
                if rep.overflow_px > 0:
                    problems.append(f"{where}: {rep.overflow_px}px wider than the viewport")
                assert rep.requests and rep.requests[0].startswith("file:")  # it did load
                assert shot.read_bytes().startswith(b"\x89PNG")
    assert problems == []


FIRST_SCREEN = (1280, 800)  # a laptop's viewport at load


def _failing(path: Path, errors: int) -> Path:
    """The sample run with ``errors`` of its 48 measured requests failed, and their messages."""
    s = summary()
    s["requests"].update(total=48, ok=48 - errors, errors=errors)
    s["errors_by_type"] = {"http": errors} if errors else {}
    if errors:
        message = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser'
        by_kind = [{"kind": "http", "status": 400, "count": errors, "message": message}]
        s["errors"] = {"by_kind": by_kind}
    path.mkdir(parents=True)
    (path / "summary.json").write_bytes(orjson.dumps(s))
    write_requests(path / "requests.parquet", records())
    return path


async def test_the_first_screen_shows_the_hit_rate_and_the_errors(
    chromium: str, tmp_path: Path
) -> None:
    """At load, without scrolling: the hit rate, the run's configuration and, when requests
    failed, the errors card (a page with a long warning and cost cards included)."""
    pages = {}
    for name, errors in (("clean", 0), ("some", 3), ("most", 38)):
        run = _failing(tmp_path / name, errors)
        pages[name] = tmp_path / f"{name}.html"
        r = runner.invoke(app, ["report", str(run), "--html", str(pages[name]), *COST])
        assert r.exit_code == 0, r.output
    width, height = FIRST_SCREEN
    async with Browser(chromium) as browser:
        for name, page in pages.items():
            await browser.open(page, width, height=height)
            shot = ARTIFACTS / "browser" / f"first-screen-{name}.png"
            await browser.viewport_screenshot(shot)
            assert await browser.first_screen("#hit-rate"), name
            assert await browser.first_screen("#config"), name
            card = await browser.evaluate("document.getElementById('errors').className")
            if name == "clean":
                assert card == "card"
                continue
            assert await browser.first_screen("#errors"), name
            assert card == ("card bad" if name == "most" else "card err")
            assert await browser.first_screen(".errors"), name  # the first message
        # and the check can fail: the page's last section is there, below the fold
        assert await browser.evaluate("document.querySelector('details') !== null")
        assert not await browser.first_screen("details")


async def test_the_driver_sees_errors_and_requests(chromium: str, tmp_path: Path) -> None:
    """The checks above can fail: a page with a script error and a fetch is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><html><body><div style='width:2000px'>wide</div>"
        "<img src='http://127.0.0.1:9/x.png'>"
        "<script>console.error('boom'); undefinedFunction();</script></body></html>"
    )
    async with Browser(chromium) as browser:
        rep = await browser.open(bad, 800)
    assert any("boom" in e for e in rep.console_errors)
    assert rep.exceptions
    assert "http://127.0.0.1:9/x.png" in rep.network
    assert rep.overflow_px > 0


def _trend_runs(tmp: Path) -> list[Path]:
    """Five nightly runs, two engine versions and two offload settings among them."""
    runs = []
    nights = [("vllm-0.31", "none", 1.0), ("vllm-0.31", "dram", 1.2), ("vllm-0.32", "none", 0.8)]
    nights += [("vllm-0.32", "dram", 0.9), ("vllm-0.32", "none", 1.5)]
    for i, (engine, offload, slow) in enumerate(nights):
        s = summary(slow=slow)
        s["started_at"] = f"2026-11-2{i}T03:17:00+00:00"
        s["labels"] = {"engine": engine, "offload": offload, "gpu": "h100"}
        s["trace_fingerprint"] = "ab" * 32
        path = tmp / f"night{i}"
        path.mkdir(parents=True)
        (path / "summary.json").write_bytes(orjson.dumps(s))
        runs.append(path)
    return runs


async def test_a_trend_over_five_labelled_runs_reads_in_chromium(
    chromium: str, tmp_path: Path
) -> None:
    runs = _trend_runs(tmp_path)
    out = tmp_path / "trend"
    r = runner.invoke(app, ["report", *map(str, runs), "--trend", "-o", str(out), *COST])
    assert r.exit_code == 0, r.output
    trend = json.loads((out / "trend.json").read_text())
    assert trend["group_by"] == ["engine", "offload"]  # gpu is the same for every run
    assert [p["series"] for p in trend["points"]][:2] == [
        "engine=vllm-0.31,offload=none",
        "engine=vllm-0.31,offload=dram",
    ]
    assert any(p["on_frontier"] for p in trend["points"])
    assert (out / "trend.csv").read_text().count("\n") == 6  # a header and five runs
    assert (out / "trend_pareto.png").read_bytes().startswith(b"\x89PNG")
    problems = []
    async with Browser(chromium) as browser:
        for width in WIDTHS:
            shot = ARTIFACTS / "browser" / f"trend-{width}.png"
            rep = await browser.open(out / "trend.html", width, screenshot=shot)
            problems += [f"{width}px: console error {e}" for e in rep.console_errors]
            problems += [f"{width}px: exception {e}" for e in rep.exceptions]
            problems += [f"{width}px: network request {u}" for u in rep.network]
            if rep.overflow_px > 0:
                problems.append(f"{width}px: {rep.overflow_px}px wider than the viewport")
            # every chart drawn, sized, titled, with its series in the legend
            charts = await browser.evaluate(
                "[...document.querySelectorAll('svg')].map(s => {const b ="
                " s.getBoundingClientRect(); return [b.width, b.height, s.textContent]})"
            )
            assert len(charts) == 12  # cost and throughput per GPU from the cost flags
            for w, h, text in charts:
                assert 150 < w <= width and h > 100, (w, h, text[:60])
                assert "run by run" in text or "frontier" in text
            assert all("engine=vllm-0.32,offload=none" in text for _, _, text in charts)
            pareto = [text for _, _, text in charts if "frontier" in text]
            assert pareto and "#5" in pareto[0]  # each run named by its number
    assert problems == []
