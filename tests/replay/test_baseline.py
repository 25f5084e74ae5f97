"""Baselines: a run against serve-sim, then the same against a slower serve-sim (a lower
decode speed) fails the check (exit 3), against the same server passes, and a threshold
tighter than the runs' noise is inconclusive (failed under --strict). JUnit and the step
summary carry each check."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.errors import UsageError
from agentx.metrics.regression import check, delta, parse_fail_on, verdict
from agentx.metrics.slo import parse_slo
from agentx.report.check_options import CheckInputs
from agentx.results.baseline import BaselineCheck, Bootstrap, Verdict
from agentx.results.junit import JUnitSuite
from agentx.serve_sim import SimConfig, SimServer

from .factory import T0, chat_session, write

TIMED = {"prefill_tps": 2_000_000.0, "overhead_ms": 1.0}
runner = CliRunner()


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("trace")
    rows = [
        ex
        for i in range(12)
        for ex in chat_session(f"s{i}", turns=2, output_tokens=20 + 5 * (i % 4), start_ns=T0 + i)
    ]
    return write(d / "t.parquet", rows)


@pytest.fixture(scope="module")
def fast_url() -> Iterator[str]:
    with SimServer(SimConfig.of(port=0, decode_tps=200.0, **TIMED)) as sim:
        yield sim.url


def _replay(trace: Path, url: str, out: Path, *args: str) -> Any:
    return runner.invoke(
        app,
        [
            "replay",
            str(trace),
            "--endpoint",
            url,
            "--time-scale",
            "0",
            "--concurrency",
            "3",
            "--no-preflight",
            "-o",
            str(out),
            "--force",
            *args,
        ],
    )


def test_a_slower_server_fails_the_same_passes_a_tight_threshold_is_inconclusive(
    trace: Path, fast_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path / "base"
    assert _replay(trace, fast_url, base, "--label", "engine=sim").exit_code == 0
    saved = runner.invoke(
        app, ["baseline", "save", str(base), "nightly", "--dir", str(tmp_path / "bl")]
    )
    assert saved.exit_code == 0, saved.output

    summary_md = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary_md))
    rules = "tpot_p50>+20%,e2e_p50>+50%"
    same = _replay(
        trace,
        fast_url,
        tmp_path / "same",
        "--baseline",
        str(tmp_path / "bl"),
        "--fail-on",
        rules,
        "--junit",
        str(tmp_path / "same.xml"),
    )
    assert same.exit_code == 0, same.output
    check_same = BaselineCheck.from_json(
        orjson.loads((tmp_path / "same" / "baseline.json").read_bytes())
    )
    # no check failed (on a loaded machine one may widen to inconclusive, which passes too)
    assert check_same.passed and len(check_same.checks) == 2
    assert check_same.base.results_dir == str(tmp_path / "bl" / "nightly")
    assert JUnitSuite.from_xml((tmp_path / "same.xml").read_text()).failures == 0
    assert "agentx replay: passed" in summary_md.read_text()

    with SimServer(SimConfig.of(port=0, decode_tps=50.0, **TIMED)) as slow:
        slower = _replay(
            trace,
            slow.url,
            tmp_path / "slow",
            "--baseline",
            str(tmp_path / "bl"),
            "--fail-on",
            rules,
            "--junit",
            str(tmp_path / "slow.xml"),
        )
    assert slower.exit_code == 3, slower.output
    assert "REGRESSION" in slower.output
    check_slow = BaselineCheck.from_json(
        orjson.loads((tmp_path / "slow" / "baseline.json").read_bytes())
    )
    tpot = next(c for c in check_slow.checks if c.metric == "tpot_p50")
    assert tpot.verdict is Verdict.FAILED and tpot.ci_low is not None and tpot.ci_low > 20.0
    suite = JUnitSuite.from_xml((tmp_path / "slow.xml").read_text())
    failed = [c for c in suite.cases if c.failure is not None]
    assert [c.name for c in failed] == ["regression tpot_p50>+20%", "regression e2e_p50>+50%"]
    assert "threshold" not in failed[0].message and "fails > +20.00%" in failed[0].message
    md = summary_md.read_text()
    assert "agentx replay: failed" in md
    # failed checks first in the step summary's table
    lines = md.split("## agentx replay: failed")[1].splitlines()
    first = lines[lines.index("| check | result | measured |") + 2]
    assert "❌ failed" in first and "tpot_p50" in first

    # the same server, a throughput threshold tighter than the sessions' spread: inconclusive
    tight = ["--fail-on", "output_tokens_per_s<-0.5%"]
    report = runner.invoke(
        app, ["report", str(tmp_path / "same"), "--baseline", str(base), *tight, "--json"]
    )
    assert report.exit_code == 0, report.output
    got = BaselineCheck.from_json(orjson.loads(report.stdout))
    (c,) = got.checks
    assert c.verdict is Verdict.INCONCLUSIVE and c.ci_low is not None and c.ci_high is not None
    assert c.ci_low < -0.5 < c.ci_high
    strict = runner.invoke(
        app, ["report", str(tmp_path / "same"), "--baseline", str(base), *tight, "--strict"]
    )
    assert strict.exit_code == 3 and "REGRESSION" in strict.output


def test_another_configuration_is_refused(trace: Path, fast_url: str, tmp_path: Path) -> None:
    assert _replay(trace, fast_url, tmp_path / "c3").exit_code == 0
    other = runner.invoke(
        app,
        [
            "replay",
            str(trace),
            "--endpoint",
            fast_url,
            "--time-scale",
            "0",
            "--concurrency",
            "2",
            "--no-preflight",
            "-o",
            str(tmp_path / "c2"),
        ],
    )
    assert other.exit_code == 0
    res = runner.invoke(app, ["report", str(tmp_path / "c2"), "--baseline", str(tmp_path / "c3")])
    assert res.exit_code == 2
    assert "no baseline of this run's configuration" in res.output
    assert "concurrency 3 vs 2" in res.output


def test_rules_parsed_and_refused() -> None:
    r1, r2, r3, r4 = parse_fail_on(
        "ttft_p99>+10%,itl_p50>2ms,reported_hit_rate<-2pt,output_tokens_per_s<5%"
    )
    assert (r1.metric, r1.threshold, r1.unit) == ("ttft_p99", 10.0, "%")
    assert (r2.metric, r2.threshold, r2.unit) == ("itl_p50", 2.0, "ms")
    assert (r3.metric, r3.threshold, r3.unit) == ("reported_hit_rate", -2.0, "pt")
    assert (r4.metric, r4.threshold, r4.op) == ("output_tokens_per_s", -5.0, "<")
    for bad in ("ttft>+10%", "reported_hit_rate<-2", "itl_p50>2pt", "nope>1%", ""):
        with pytest.raises(UsageError, match="--fail-on"):
            parse_fail_on(bad)
    with pytest.raises(UsageError, match="need --baseline"):
        CheckInputs(fail_on="ttft_p99>+10%")
    assert parse_slo("ttft_p99<=2s")  # the metric names are --slo's


def test_the_verdict_follows_the_interval() -> None:
    (up,) = parse_fail_on("ttft_p99>+10%")
    (down,) = parse_fail_on("reported_hit_rate<-2pt")
    assert verdict(up, 11.0, 30.0, strict=False) is Verdict.FAILED
    assert verdict(up, -3.0, 9.0, strict=False) is Verdict.PASSED
    assert verdict(up, 5.0, 15.0, strict=False) is Verdict.INCONCLUSIVE
    assert verdict(up, 5.0, 15.0, strict=True) is Verdict.FAILED
    assert verdict(down, -5.0, -3.0, strict=False) is Verdict.FAILED
    assert verdict(down, -1.0, 1.0, strict=False) is Verdict.PASSED
    assert verdict(up, None, None, strict=False) is Verdict.UNKNOWN
    assert delta(up, 100.0, 120.0) == pytest.approx(20.0)
    assert delta(down, 0.90, 0.85) == pytest.approx(-5.0)
    assert delta(up, 0.0, 1.0) is None
    assert check(up, [], [], Bootstrap(100, 0, 0.95)).verdict is Verdict.UNKNOWN


def test_sweep_junit_and_a_comparison_of_other_traces(
    trace: Path, fast_url: str, tmp_path: Path
) -> None:
    res = runner.invoke(
        app,
        [
            "sweep",
            str(trace),
            "--endpoint",
            fast_url,
            "--concurrency",
            "1,2",
            "--time-scale",
            "0",
            "--max-requests",
            "4",
            "--no-preflight",
            "-o",
            str(tmp_path / "sw"),
            "--junit",
            str(tmp_path / "sweep.xml"),
        ],
    )
    assert res.exit_code == 0, res.output
    suite = JUnitSuite.from_xml((tmp_path / "sweep.xml").read_text())
    assert [c.name for c in suite.cases] == ["concurrency 1: gates", "concurrency 2: gates"]
    assert suite.name == "agentx sweep" and suite.failures == 0

    other = write(tmp_path / "other.parquet", chat_session("x", turns=2, start_ns=T0))
    for t, out in ((trace, "a"), (other, "b")):
        assert _replay(t, fast_url, tmp_path / out).exit_code == 0
    cmp = runner.invoke(
        app, ["report", str(tmp_path / "b"), "--compare", str(tmp_path / "a"), "--json"]
    )
    assert cmp.exit_code == 0
    assert "the runs replayed different traces" in cmp.stderr
