"""Datasets: a directory of Parquet trace files is one trace, for every command."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.errors import FormatError, TraceError
from agentx.core.examples import example_path
from agentx.formats import detect_format
from agentx.store import is_dataset, open_trace, read_trace, trace_files, write_trace
from agentx.store.dataset import DatasetWriter, concat_traces

from .test_hashdelta import growing_thread

runner = CliRunner()
WEKA = example_path("weka")


def test_a_directory_of_files_is_one_trace_in_name_order(tmp_path: Path) -> None:
    a, b = growing_thread(3, "a"), growing_thread(2, "b", start=10**6)
    write_trace(tmp_path / "2.parquet", b, trace_id="T")
    write_trace(tmp_path / "1.parquet", a, trace_id="T")
    (tmp_path / "notes.txt").write_text("not a part")
    assert is_dataset(tmp_path) and detect_format(tmp_path) == "agentx"
    assert trace_files(tmp_path) == [tmp_path / "1.parquet", tmp_path / "2.parquet"]
    info = open_trace(tmp_path)
    assert (info.num_rows, info.files, info.trace_id) == (5, tuple(trace_files(tmp_path)), "T")
    assert read_trace(tmp_path) == a + b


def test_dataset_writer_rolls_parts_and_appends(tmp_path: Path) -> None:
    exs = growing_thread(7)
    with DatasetWriter(tmp_path / "ds", trace_id="T", part_rows=3) as w:
        for ex in exs[:5]:
            w.append(ex)
    assert [p.name for p in trace_files(tmp_path / "ds")] == [
        "part-00000.parquet",
        "part-00001.parquet",
    ]
    with DatasetWriter(tmp_path / "ds", trace_id="T", part_rows=3) as w:  # appending
        for ex in exs[5:]:
            w.append(ex)
    assert len(trace_files(tmp_path / "ds")) == 3
    assert read_trace(tmp_path / "ds") == exs  # each part delta-encodes on its own
    with DatasetWriter(tmp_path / "empty"):
        pass
    assert read_trace(tmp_path / "empty") == []


def test_a_killed_part_is_recovered_when_the_dataset_is_opened(tmp_path: Path) -> None:
    write_trace(tmp_path / "a.parquet", growing_thread(2, "a"), trace_id="T")
    child = (
        "import sys, time\n"
        "from agentx.store import TraceWriter\n"
        "from tests.store.test_hashdelta import growing_thread\n"
        "w = TraceWriter(sys.argv[1], trace_id='T')\n"
        "for ex in growing_thread(3, 'b', start=10**6): w.append(ex)\n"
        "print('ok', flush=True); time.sleep(60)\n"
    )
    root = Path(__file__).parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", child, str(tmp_path / "b.parquet")],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ok"
    with pytest.raises(TraceError, match="still being written"):
        open_trace(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "b.parquet").exists()
    assert [ex.session_id for ex in read_trace(tmp_path)] == ["a"] * 2 + ["b"] * 3


def test_concat_keeps_rows_and_their_deltas(tmp_path: Path) -> None:
    a, b = growing_thread(4, "a"), growing_thread(5, "b", start=10**6)
    write_trace(tmp_path / "a.parquet", a, trace_id="T")
    write_trace(tmp_path / "b.parquet", b, trace_id="T")
    n = concat_traces(
        [tmp_path / "a.parquet", tmp_path / "b.parquet"], tmp_path / "ab.parquet", trace_id="T"
    )
    assert n == 9 and read_trace(tmp_path / "ab.parquet") == a + b


def test_mixed_and_empty_directories_are_clear_errors(tmp_path: Path) -> None:
    write_trace(tmp_path / "a.parquet", growing_thread(1))
    shutil.copy(WEKA / "trace_0001.json", tmp_path)
    with pytest.raises(FormatError, match="mixing Weka"):
        detect_format(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FormatError, match="without Weka"):
        detect_format(tmp_path / "empty")


def _stats(path: Path) -> dict[str, object]:
    result = runner.invoke(app, ["stats", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    data: dict[str, object] = json.loads(result.stdout)
    for key in ("trace", "format"):
        data.pop(key)
    return data


def test_every_command_takes_a_dataset(tmp_path: Path) -> None:
    """convert DIR -o OUT/ writes one file per Weka source; stats, simulate, scrub and the
    exports read the directory as the single file they would get otherwise."""
    ds, one = tmp_path / "ds", tmp_path / "one.parquet"
    result = runner.invoke(app, ["convert", str(WEKA), "-o", f"{ds}/", "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["dataset"] is True
    assert sorted(p.name for p in trace_files(ds)) == [
        "trace_0001.parquet",
        "trace_0010_head.parquet",
    ]
    assert runner.invoke(app, ["convert", str(WEKA), "-o", str(one)]).exit_code == 0
    assert _stats(ds) == _stats(one) == _stats(WEKA)
    sims = [
        runner.invoke(app, ["simulate", str(p), "--json", "--capacity-tokens", "64K,1M"])
        for p in (ds, one)
    ]
    assert all(r.exit_code == 0 for r in sims)
    assert json.loads(sims[0].stdout)["points"] == json.loads(sims[1].stdout)["points"]
    again = runner.invoke(app, ["convert", str(WEKA), "-o", str(ds)])
    assert again.exit_code == 1 and "exists" in again.stderr  # never overwrites a part
    scrubbed = tmp_path / "scrubbed"
    result = runner.invoke(app, ["scrub", str(ds), "-o", f"{scrubbed}/", "--json"])
    assert result.exit_code == 0, result.stderr
    assert is_dataset(scrubbed) and len(read_trace(scrubbed)) == len(read_trace(one))


def test_a_directory_of_other_parquet_files_is_not_a_dataset(tmp_path: Path) -> None:
    """A Hugging Face dataset's Parquet rows (no agentx.format) stay the `hf` importer's."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(
        pa.table({"id": ["t1"], "block_size": [64], "requests": ["[]"]}), tmp_path / "a.parquet"
    )
    assert not is_dataset(tmp_path)
    assert detect_format(tmp_path) == "hf"
