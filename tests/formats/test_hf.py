"""Hugging Face datasets of Weka traces: jsonl rows, Parquet rows, dataset directories, hf://."""

from __future__ import annotations

import socket
from pathlib import Path

import orjson
import pytest

from agentx.core.errors import FormatError, TraceError, UsageError
from agentx.core.examples import example_path
from agentx.formats import detect_format, load_exchanges
from agentx.formats.hf import data_files, parse_hf_url

from .hf_dataset import make_hf_dataset, make_parquet_rows, weka_docs


def test_a_dataset_directory_reads_as_the_weka_directory_it_came_from(tmp_path: Path) -> None:
    ds = make_hf_dataset(tmp_path / "ds")
    assert detect_format(ds) == "hf" and detect_format(ds / "traces.jsonl") == "hf"
    assert list(load_exchanges(ds)) == list(load_exchanges(example_path("weka")))


@pytest.mark.parametrize("requests_as", ["json", "struct"])
def test_parquet_rows_read_as_the_same_traces(tmp_path: Path, requests_as: str) -> None:
    rows = make_parquet_rows(tmp_path / "ds" / "data" / "train-0.parquet", requests_as=requests_as)
    assert detect_format(rows) == "hf" and detect_format(tmp_path / "ds") == "hf"
    assert data_files(tmp_path / "ds") == [rows]
    assert list(load_exchanges(tmp_path / "ds")) == list(load_exchanges(example_path("weka")))


def test_an_agentx_trace_is_still_an_agentx_trace() -> None:
    assert detect_format(example_path("example")) == "agentx"


def test_duplicate_ids_and_bad_lines_name_the_row(tmp_path: Path) -> None:
    doc = weka_docs()[0]
    dup = tmp_path / "dup.jsonl"
    dup.write_bytes(orjson.dumps(doc) + b"\n" + orjson.dumps(doc) + b"\n")
    with pytest.raises(FormatError, match=r"dup.jsonl:2.*duplicate trace id"):
        list(load_exchanges(dup))
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(orjson.dumps(doc) + b"\n{not json\n")
    with pytest.raises(FormatError, match=r"bad.jsonl:2.*not valid JSON"):
        list(load_exchanges(bad))


def test_hf_urls_parse_and_an_unreachable_hub_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert parse_hf_url("hf://datasets/semianalysisai/cc-traces-weka-062126") == (
        "semianalysisai/cc-traces-weka-062126",
        None,
    )
    assert parse_hf_url("hf:/datasets/o/n@v1") == ("o/n", "v1")  # as a Path collapses it
    with pytest.raises(UsageError, match="hf://datasets/<owner>/<name>"):
        parse_hf_url("hf://models/o/n")
    hub = pytest.importorskip("huggingface_hub")
    with socket.socket() as s:  # a port nobody listens on: the hub is unreachable
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    real = hub.snapshot_download
    blocked = {"endpoint": f"http://127.0.0.1:{port}", "cache_dir": tmp_path, "etag_timeout": 2}
    monkeypatch.setattr(hub, "snapshot_download", lambda *a, **kw: real(*a, **{**kw, **blocked}))
    with pytest.raises(TraceError, match=r"cannot download from the Hugging Face hub") as err:
        load_exchanges("hf://datasets/semianalysisai/cc-traces-weka-062126")
    assert "\n" not in str(err.value)
