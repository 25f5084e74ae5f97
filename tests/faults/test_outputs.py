"""No command destroys a file the user already had, nor leaves a temporary one behind.

Every output is written to a temporary file beside it and renamed on success; an existing output
is replaced only with ``--force``; a failed command leaves the old output byte for byte and no
temporary file behind; a leftover of a killed command never blocks the next one.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.examples import example_path
from agentx.store import TraceWriter, open_trace, read_trace, spool_path
from agentx.store.results import write_requests

EXAMPLE = example_path("example")  # 48 exchanges


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.stderr
    return res.exit_code, res.stderr


def corrupt_copy(dst: Path) -> Path:
    """The example trace with its data pages damaged: it opens, and fails on the first row."""
    data = bytearray(EXAMPLE.read_bytes())
    for i in range(len(data) // 3, len(data) // 3 + 2000):
        data[i] ^= 0x55
    dst.write_bytes(bytes(data))
    return dst


def bad_mooncake(dst: Path) -> Path:
    line = {"timestamp": 0, "input_length": 32, "output_length": 4, "hash_ids": [1, 2]}
    dst.write_text(orjson.dumps(line).decode() + "\n" + "{broken\n" + orjson.dumps(line).decode())
    return dst


def files(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


@pytest.fixture
def old_output(tmp_path: Path) -> Path:
    """The user's existing output: a trace of 48 exchanges."""
    out = tmp_path / "out.parquet"
    shutil.copy(EXAMPLE, out)
    return out


# -- an existing output is replaced only with --force ------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["scrub", str(EXAMPLE), "--no-hit-rate"],
        ["anonymize", str(EXAMPLE)],
        ["convert", str(EXAMPLE)],
        ["convert", str(EXAMPLE), "--to", "mooncake"],
        ["convert", str(EXAMPLE), "--to", "weka"],
        ["capture", "--no-status", "--", "true"],
    ],
    ids=["scrub", "anonymize", "convert", "mooncake", "weka", "capture"],
)
def test_an_existing_output_is_refused_without_force(
    command: list[str], old_output: Path, tmp_path: Path
) -> None:
    before = old_output.read_bytes()
    code, err = run(command[0], "-o", old_output, *command[1:])
    assert code == 2 and "already exists" in err and "--force" in err
    assert err.count("\n") == 1
    assert old_output.read_bytes() == before
    assert files(tmp_path) == ["out.parquet"]


@pytest.mark.parametrize(
    "command",
    [
        ["scrub", str(EXAMPLE), "--no-hit-rate"],
        ["anonymize", str(EXAMPLE)],
        ["convert", str(EXAMPLE)],
    ],
    ids=["scrub", "anonymize", "convert"],
)
def test_force_replaces_the_output(command: list[str], old_output: Path, tmp_path: Path) -> None:
    code, err = run(*command, "-o", old_output, "--force")
    assert code == 0, err
    assert open_trace(old_output).num_rows > 0
    assert files(tmp_path) == ["out.parquet"]


def test_capture_refuses_the_trace_it_would_overwrite(old_output: Path) -> None:
    """``capture -o existing.parquet -- true`` turned 48 rows into 0."""
    code, err = run("capture", "-o", old_output, "--no-status", "--", "true")
    assert code == 2 and "--force" in err
    assert len(read_trace(old_output)) == 48


# -- a failed command leaves the old output as it was ------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["scrub", "--no-hit-rate"], ["anonymize"], ["convert"]],
    ids=["scrub", "anonymize", "convert"],
)
def test_a_corrupt_input_leaves_the_existing_output(
    command: list[str], old_output: Path, tmp_path: Path
) -> None:
    bad = corrupt_copy(tmp_path / "bad.parquet")
    before = old_output.read_bytes()
    code, err = run(command[0], bad, *command[1:], "-o", old_output, "--force")
    assert code == 1 and "corrupt" in err
    assert old_output.read_bytes() == before  # not replaced by an empty trace
    assert files(tmp_path) == ["bad.parquet", "out.parquet"]  # no temporary file left


@pytest.mark.parametrize("to", ["agentx", "mooncake", "weka"])
def test_a_bad_mooncake_file_leaves_the_existing_output(
    to: str, old_output: Path, tmp_path: Path
) -> None:
    """``convert`` of a bad Mooncake file left 1 row (the writer compacted on the exception)."""
    src = bad_mooncake(tmp_path / "in.jsonl")
    before = old_output.read_bytes()
    code, err = run("convert", src, "--to", to, "-o", old_output, "--force")
    assert code == 1 and "in.jsonl" in err
    assert old_output.read_bytes() == before
    assert files(tmp_path) == ["in.jsonl", "out.parquet"]


def test_the_trace_writer_does_not_compact_on_an_exception(old_output: Path) -> None:
    """A library user's ``with TraceWriter(path)`` that raises: the old file stays, and the
    spool of what was appended is kept for ``agentx recover``."""
    ex = read_trace(EXAMPLE)[0]
    with pytest.raises(RuntimeError), TraceWriter(old_output) as w:
        w.append(ex)
        raise RuntimeError("the producer failed")
    assert len(read_trace(EXAMPLE)) == 48
    assert open_trace.__name__  # the old file was not touched:
    assert spool_path(old_output).exists()
    spool_path(old_output).unlink()
    assert len(read_trace(old_output)) == 48


# -- results directories, reports, plots -------------------------------------------------------


def test_replay_refuses_a_results_directory_before_running(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "summary.json").write_text("{}")
    code, err = run("replay", EXAMPLE, "--endpoint", "http://127.0.0.1:9", "-o", out)
    assert code == 2 and "already holds results" in err  # refused before the probe
    assert (out / "summary.json").read_text() == "{}"


def test_sweep_refuses_a_sweep_directory_before_running(tmp_path: Path) -> None:
    out = tmp_path / "sw"
    out.mkdir()
    (out / "sweep.json").write_text("{}")
    code, err = run(
        "sweep", EXAMPLE, "--endpoint", "http://127.0.0.1:9", "--concurrency", "1,2", "-o", out
    )
    assert code == 2 and "already holds results" in err
    assert (out / "sweep.json").read_text() == "{}"


def results_dir(tmp_path: Path) -> Path:
    from report.sample import summary  # a complete agentx.summary/1

    d = tmp_path / "res"
    d.mkdir()
    (d / "summary.json").write_bytes(orjson.dumps(summary()))
    write_requests(d / "requests.parquet", [])
    return d


def test_report_html_and_simulate_plot_refuse_existing_files(tmp_path: Path) -> None:
    res = results_dir(tmp_path)
    page, plot = tmp_path / "r.html", tmp_path / "p.svg"
    page.write_text("mine")
    plot.write_text("mine")
    code, err = run("report", res, "--html", page)
    assert code == 2 and "--force" in err and page.read_text() == "mine"
    code, err = run("simulate", EXAMPLE, "--plot", plot)
    assert code == 2 and "--force" in err and plot.read_text() == "mine"
    report_json = tmp_path / "scrub.json"
    report_json.write_text("mine")
    code, err = run("scrub", EXAMPLE, "-o", tmp_path / "c.parquet", "--report", report_json)
    assert code == 2 and report_json.read_text() == "mine"
    assert not (tmp_path / "c.parquet").exists()  # refused before any work
    assert run("report", res, "--html", page, "--force")[0] == 0
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert run("simulate", EXAMPLE, "--plot", plot, "--force")[0] == 0
    assert plot.read_text().startswith("<?xml")


def test_html_into_a_missing_directory_is_created(tmp_path: Path) -> None:
    res = results_dir(tmp_path)
    code, err = run("report", res, "--html", tmp_path / "new" / "dir" / "r.html")
    assert code == 0, err and (tmp_path / "new" / "dir" / "r.html").is_file()


# -- leftovers of killed commands never block the next ones -----------------------------------


KILLED_SCRUB = """
import os, signal, sys
from agentx.scrub import pipeline
process = pipeline.Scrubber.process
def dying(self, exchanges):
    for i, ex in enumerate(process(self, exchanges)):
        if i == 5:
            os.kill(os.getpid(), signal.SIGKILL)  # mid-write, as the OOM killer would
        yield ex
pipeline.Scrubber.process = dying
sys.argv = ["agentx", *sys.argv[1:]]
from agentx.cli import main
main()
"""


def test_a_killed_scrub_neither_blocks_nor_replaces_the_output(
    old_output: Path, tmp_path: Path
) -> None:
    args = ["scrub", str(EXAMPLE), "--no-hit-rate", "-o", str(old_output), "--force"]
    killed = subprocess.run([sys.executable, "-c", KILLED_SCRUB, *args], timeout=120)
    assert killed.returncode == -signal.SIGKILL
    assert len(read_trace(old_output)) == 48  # reading it does not "recover" the killed output
    code, err = run(*args)
    assert code == 0, err  # the leftover does not block the next scrub
    info = open_trace(old_output)
    assert "scrubbed_by" in info.metadata and info.num_rows == len(read_trace(old_output))
    assert not spool_path(old_output).exists()
