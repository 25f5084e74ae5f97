"""A bad argument is one line on stderr and exit 1 or 2, never a traceback.

Every case reaches agentx's own code (typer's own range checks print their usage box).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from agentx.cli import app

DEAD = "http://127.0.0.1:9"  # nothing listens: a case that got past its check would say so
THIRTY = "1" * 30


def summary_with(**fields: object) -> dict[str, object]:
    from report.sample import summary

    s = summary()
    s.update(fields)
    return s


CASES: dict[str, list[str]] = {
    "endpoint-port-abc": ["replay", "example", "--endpoint", "http://127.0.0.1:abc"],
    "endpoint-ipv6-open": ["replay", "example", "--endpoint", "http://[::1"],
    "endpoint-userinfo": ["replay", "example", "--endpoint", "http://u:p@host"],
    "endpoint-no-host": ["replay", "example", "--endpoint", "http://"],
    "endpoint-ftp": ["replay", "example", "--endpoint", "ftp://h"],
    "metrics-url-bad": ["replay", "example", "--endpoint", DEAD, "--metrics-url", "http://[x"],
    "sweep-endpoint": [
        "sweep",
        "example",
        "--endpoint",
        "http://h:99999",
        "--concurrency",
        "1",
        "-o",
        "{tmp}/sw",
    ],
    "duration-inf": ["replay", "example", "--endpoint", DEAD, "--duration", "inf"],
    "duration-nan": ["replay", "example", "--endpoint", DEAD, "--duration", "nan"],
    "duration-huge": ["replay", "example", "--endpoint", DEAD, "--duration", "1e308"],
    "time-scale-inf": ["replay", "example", "--endpoint", DEAD, "--time-scale", "inf"],
    "time-scale-1e308": ["replay", "example", "--endpoint", DEAD, "--time-scale", "1e308"],
    "max-think-inf": ["replay", "example", "--endpoint", DEAD, "--max-think", "1e309"],
    "timeout-inf": ["replay", "example", "--endpoint", DEAD, "--timeout", "inf"],
    "sweep-duration-inf": [
        "sweep",
        "example",
        "--endpoint",
        DEAD,
        "--concurrency",
        "1",
        "--duration",
        "inf",
        "-o",
        "{tmp}/sw",
    ],
    "report-wrong-type": ["report", "{tmp}/wrong"],
    "report-wrong-nested": ["report", "{tmp}/nested"],
    "report-not-json": ["report", "{tmp}/garbage"],
    "report-html-onto-dir": ["report", "{tmp}/good", "--html", "{tmp}"],
    "report-html-under-file": ["report", "{tmp}/good", "--html", "{tmp}/afile/r.html"],
    "simulate-capacity-30-digits": ["simulate", "example", "--capacity-tokens", THIRTY],
    "simulate-block-30-digits": ["simulate", "example", "--block-size", THIRTY],
    "simulate-offload-30-digits": ["simulate", "example", "--offload-tokens", THIRTY],
    "demo-workdir-unwritable": ["demo", "--fast", "--workdir", "{tmp}/afile/demo"],
    "capture-upstream-ipv6-open": [
        "capture",
        "-o",
        "{tmp}/c.parquet",
        "--upstream",
        "http://[::1",
        "--",
        "true",
    ],
    "capture-out-under-file": [
        "capture",
        "-o",
        "{tmp}/afile/c.parquet",
        "--confdir",
        "{tmp}/conf",
        "--no-status",
        "--",
        "true",
    ],
    "scrub-out-under-file": ["scrub", "example", "-o", "{tmp}/afile/c.parquet"],
    "convert-out-onto-dir": ["convert", "example", "-o", "{tmp}/good"],
}


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    (tmp_path / "afile").write_text("a file, not a directory")
    for name, content in (
        ("wrong", orjson.dumps(summary_with(latency_ms="abc", requests=5))),
        ("nested", orjson.dumps(summary_with(throughput={"requests_per_s": "fast"}))),
        ("garbage", b"{not json"),
        ("good", orjson.dumps(summary_with())),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_bytes(content)
    return tmp_path


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_line_and_exit_1_or_2(case: str, tmp: Path) -> None:
    args = [a.replace("{tmp}", str(tmp)) for a in CASES[case]]
    res = CliRunner().invoke(app, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code in (1, 2), (res.exit_code, res.output)
    assert res.stderr.startswith("agentx: error: ") and res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.output
    assert "cannot reach" not in res.stderr  # refused before the endpoint was contacted
