"""Format detection and the one loader for every format."""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agentx.core.errors import FormatError, TraceError
from agentx.core.examples import example_path
from agentx.core.models import Exchange, Timing
from agentx.formats import detect_format, load_exchanges
from agentx.store import TraceWriter, spool_path, write_trace

WEKA = example_path("weka") / "trace_0001.json"


def _agentx(path: Path) -> Path:
    write_trace(
        path,
        [
            Exchange(
                request_id="r",
                session_id="s",
                thread_id="t",
                api="openai.chat",
                request={"messages": []},
                timing=Timing(0),
            )
        ],
    )
    return path


def test_detects_each_format_by_content(tmp_path: Path) -> None:
    assert detect_format(_agentx(tmp_path / "t.data")) == "agentx"  # suffix does not matter
    assert detect_format(WEKA) == "weka"
    assert detect_format(WEKA.parent) == "weka"
    pretty = tmp_path / "pretty.txt"
    pretty.write_text('{\n  "block_size": 64,\n  "requests": []\n}\n')
    assert detect_format(pretty) == "weka"
    moon = tmp_path / "m.txt"
    moon.write_bytes(b'{"timestamp": 0, "input_length": 5, "hash_ids": [1]}\n')
    assert detect_format(moon) == "mooncake"


def test_a_spool_without_its_trace_is_an_agentx_trace(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    w = TraceWriter(path)
    w._spool.close()  # the writer died before compacting
    assert spool_path(path).exists() and detect_format(path) == "agentx"
    assert list(load_exchanges(path)) == []


@pytest.mark.parametrize(
    ("content", "error", "message"),
    [
        (None, TraceError, "no such file"),
        (b"", TraceError, "empty file"),
        (b"hello world\n", FormatError, "unrecognised format"),
        (b"[1, 2, 3]\n", FormatError, "unrecognised format"),
    ],
)
def test_unknown_content_is_a_clear_error(
    tmp_path: Path, content: bytes | None, error: type, message: str
) -> None:
    path = tmp_path / "x.bin"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(error, match=message):
        detect_format(path)


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="without Weka"):
        detect_format(tmp_path)


def test_load_exchanges_dispatches(tmp_path: Path) -> None:
    assert [ex.request_id for ex in load_exchanges(_agentx(tmp_path / "t.parquet"))] == ["r"]
    assert len(list(load_exchanges(WEKA))) == 41
    moon = tmp_path / "m.jsonl"
    moon.write_bytes(orjson.dumps({"input_length": 5}) + b"\n")
    assert len(list(load_exchanges(moon))) == 1
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"a": [1]}), other)
    with pytest.raises(TraceError, match="not an agentx trace"):
        load_exchanges(other)  # raised at the call, not at the first next()
