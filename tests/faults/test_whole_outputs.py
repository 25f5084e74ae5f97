"""A directory output is replaced as a whole: a Weka export (``convert --to weka -o DIR``) and a
merged results directory (``merge -o DIR --force``) are built beside their directory and swapped
in with one rename. A SIGKILL mid-write leaves the old directory as it was (or none), never a
half export that ``stats`` reads as a smaller corpus, nor an old ``summary.json`` beside new
rows; ``--force`` leaves no file of the older output behind.

Real ``agentx`` subprocesses, killed with a real SIGKILL at a chosen point of the write.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from replay.factory import T0, chat_session, write
from report.test_merge import shard_dir, shard_records, theory_rows, with_theory
from typer.testing import CliRunner

from agentx.cli import app
from agentx.report.results_dir import load_results
from agentx.store.results import read_requests

# ``agentx ARGS`` that SIGKILLs itself (as the OOM killer would) at the ``n``-th call of
# ``module.name``, once that call returned: mid-write.
DYING = """
import importlib, os, signal, sys
module, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
owner, _, attr = name.rpartition(".")
target = importlib.import_module(module)
holder = getattr(target, owner) if owner else target
real = getattr(holder, attr)
calls = [0]
def dying(*args, **kwargs):
    out = real(*args, **kwargs)
    calls[0] += 1
    if calls[0] == n:
        os.kill(os.getpid(), signal.SIGKILL)
    return out
setattr(holder, attr, dying)
sys.argv = ["agentx", *sys.argv[4:]]
from agentx.cli import main
main()
"""


def killed(module: str, name: str, n: int, *args: str | Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", DYING, module, name, str(n), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def run(*args: str | Path) -> tuple[int, str]:
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.stderr
    return res.exit_code, res.stderr


def corpus(path: Path, prefix: str, sessions: int) -> Path:
    rows = []
    for i in range(sessions):
        rows += chat_session(f"{prefix}{i}", turns=1, start_ns=T0 + i)
    return write(path, rows)


def listing(d: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(d.iterdir())}


# -- convert --to weka -o DIR ------------------------------------------------------------------

WEKA_FILES = ("agentx.formats.weka.write", "Path.write_bytes")


def test_a_killed_weka_export_leaves_no_half_corpus(tmp_path: Path) -> None:
    """SIGKILL after 100 of 300 session files: it left 100 files that ``stats`` read as a
    100-session corpus."""
    big = corpus(tmp_path / "big.parquet", "s", 300)
    out = tmp_path / "weka"
    killed(*WEKA_FILES, 100, "convert", big, "--to", "weka", "-o", out)
    assert not out.exists()  # nothing at DIR: no corpus, not a smaller one
    code, err = run("stats", out)
    assert code != 0 and "no such" in err.lower()


def test_a_killed_forced_weka_export_leaves_the_old_one(tmp_path: Path) -> None:
    old = corpus(tmp_path / "old.parquet", "o", 7)
    out = tmp_path / "weka"
    assert run("convert", old, "--to", "weka", "-o", out)[0] == 0
    before = listing(out)
    assert len(before) == 7
    big = corpus(tmp_path / "big.parquet", "s", 300)
    killed(*WEKA_FILES, 100, "convert", big, "--to", "weka", "-o", out, "--force")
    assert listing(out) == before  # the old export, byte for byte
    # the killed export's hidden build is removed by the next export to the same directory
    new = corpus(tmp_path / "new.parquet", "n", 5)
    code, err = run("convert", new, "--to", "weka", "-o", out, "--force")
    assert code == 0, err
    assert sorted(listing(out)) == [f"n{i}.json" for i in range(5)]  # 5 new, no old one left
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "big.parquet",
        "new.parquet",
        "old.parquet",
        "weka",
    ]
    code, err = run("stats", out, "--json")
    assert code == 0, err


def test_force_keeps_what_is_not_a_weka_file(tmp_path: Path) -> None:
    """Replacing an export replaces its ``.json`` files; anything else in the directory stays."""
    out = tmp_path / "weka"
    assert run("convert", corpus(tmp_path / "a.parquet", "o", 3), "--to", "weka", "-o", out)[0] == 0
    (out / "NOTES.md").write_text("mine")
    code, err = run(
        "convert", corpus(tmp_path / "b.parquet", "n", 2), "--to", "weka", "-o", out, "--force"
    )
    assert code == 0, err
    assert sorted(listing(out)) == ["NOTES.md", "n0.json", "n1.json"]
    assert (out / "NOTES.md").read_text() == "mine"


# -- merge -o DIR --force ----------------------------------------------------------------------


def shards(tmp_path: Path, name: str, rows: int, *, theory: bool) -> list[Path]:
    out = []
    for i in range(2):
        perf0 = (1 + 100 * i) * 10**9
        records = shard_records(i, perf0, [100.0 + k for k in range(rows)])
        kept = theory_rows(i, [[*range(40 + k)] for k in range(rows)], perf0) if theory else None
        if kept is not None:
            records = with_theory(records, kept)
        out.append(shard_dir(tmp_path / f"{name}{i}", f"{i}/2", records, theory=kept))
    return out


@pytest.fixture
def old_merge(tmp_path: Path) -> Path:
    merged = tmp_path / "merged"
    code, err = run("merge", *shards(tmp_path, "old", 3, theory=True), "-o", merged)
    assert code == 0, err
    return merged


def consistent(d: Path) -> int:
    """The rows of a results directory, checked to be the ones its summary counts."""
    summary, records = load_results(d)
    assert summary.requests.total == len(records)
    return len(records)


def test_a_killed_forced_merge_leaves_the_old_directory_whole(
    old_merge: Path, tmp_path: Path
) -> None:
    """SIGKILL after the new requests.parquet was written: the old summary.json (6 rows) stood
    beside the new rows (40), and ``report`` showed the old summary silently."""
    before = listing(old_merge)
    new = shards(tmp_path, "new", 20, theory=False)
    killed("agentx.store.results", "write_requests", 1, "merge", *new, "-o", old_merge, "--force")
    assert listing(old_merge) == before
    assert consistent(old_merge) == 6


def test_a_forced_merge_replaces_the_whole_directory(old_merge: Path, tmp_path: Path) -> None:
    """The older merge's theory.parquet stayed beside a merge whose shards had none."""
    assert (old_merge / "theory.parquet").is_file()
    new = shards(tmp_path, "new", 20, theory=False)
    code, err = run("merge", *new, "-o", old_merge, "--force")
    assert code == 0, err
    assert sorted(p.name for p in old_merge.iterdir()) == [
        "report.html",
        "requests.parquet",
        "summary.json",
    ]
    assert consistent(old_merge) == 40
    assert len(read_requests(old_merge / "requests.parquet")) == 40
    summary = orjson.loads((old_merge / "summary.json").read_bytes())
    assert [m["shard"] for m in summary["merged_from"]] == ["0/2", "1/2"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no build left
