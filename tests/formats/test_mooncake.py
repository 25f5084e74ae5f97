"""Mooncake JSONL import: fields, sessions, clear errors naming the line, fuzzing."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.core.errors import FormatError, UsageError
from agentx.formats import load_exchanges
from agentx.formats.mooncake import MOONCAKE_BLOCK_SIZE, iter_mooncake, parse_record
from agentx.workload.stats import summarize

LINES = [
    {"timestamp": 0, "input_length": 655, "output_length": 52, "hash_ids": [46, 47]},
    {"timestamp": 10535, "input_length": 672, "output_length": 26, "hash_ids": [46, 47]},
    {"timestamp": 27482, "input_length": 1100, "output_length": 52, "hash_ids": [46, 47, 48]},
]


def _write(path: Path, records: list[object], blank: bool = True) -> Path:
    text = b"\n".join(orjson.dumps(r) for r in records) + b"\n"
    path.write_bytes(text + (b"\n" if blank else b""))
    return path


def test_fields_map_to_hash_only_exchanges(tmp_path: Path) -> None:
    exs = list(iter_mooncake(_write(tmp_path / "m.jsonl", LINES)))
    assert len(exs) == 3  # the trailing blank line is skipped
    first = exs[0]
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (655, 52)
    assert first.hash_ids == (46, 47) and first.hash_block_size == MOONCAKE_BLOCK_SIZE == 512
    assert [ex.timing.start_wall_ns for ex in exs] == [0, 10_535_000_000, 27_482_000_000]
    assert first.api == "openai.chat" and first.request == {}
    assert first.think_time_s is None and first.usage.cached_tokens is None
    # without session information every request is its own session
    assert len({ex.session_id for ex in exs}) == 3
    assert all(ex.parent_request_id is None for ex in exs)


def test_session_ids_make_chained_threads(tmp_path: Path) -> None:
    recs = [
        {
            "session_id": "a",
            "timestamp": 0,
            "input_length": 10,
            "output_length": 1,
            "hash_ids": [1],
        },
        {"session_id": "b", "timestamp": 5, "input_length": 10, "output_length": 1},
        {
            "session_id": "a",
            "delay": 1500,
            "input_length": 20,
            "output_length": 1,
            "hash_ids": [1, 2],
        },
        {"chat_id": 7, "text_input": "hello there", "output_length": 3},
    ]
    exs = list(iter_mooncake(_write(tmp_path / "m.jsonl", recs)))
    assert [ex.session_id for ex in exs] == ["a", "b", "a", "7"]
    assert exs[2].parent_request_id == exs[0].request_id and exs[1].parent_request_id is None
    assert exs[2].think_time_s == 1.5
    assert exs[1].hash_ids is None and exs[1].hash_block_size is None
    assert exs[3].request == {"messages": [{"role": "user", "content": "hello there"}]}
    assert exs[3].usage.prompt_tokens is None  # stats counts the text instead


def test_theoretical_hit_rate_uses_full_blocks_of_the_ids(tmp_path: Path) -> None:
    result = summarize(load_exchanges(_write(tmp_path / "m.jsonl", LINES))).to_json()
    # 1: nothing cached yet. 2 (672 tokens = 1 full block): hits block 46. 3 (1100 tokens = 2
    # full blocks, 46 47): hits 46 only, since 47 was a partial last block before, never cached.
    assert result["block_size"] == 512
    assert result["theoretical_hit_rate"] == pytest.approx((0 + 512 + 512) / (655 + 672 + 1100))
    assert result["totals"]["input_tokens"] == 655 + 672 + 1100
    assert result["sessions"] == result["requests"] == 3


def test_block_size_multiples_coarsen_the_ids(tmp_path: Path) -> None:
    recs = [
        {"input_length": 3000, "hash_ids": [1, 2, 3, 4, 5]},
        {"input_length": 3000, "hash_ids": [1, 2, 3, 4, 5]},
    ]
    path = _write(tmp_path / "m.jsonl", recs)
    native = summarize(load_exchanges(path)).to_json()
    coarse = summarize(load_exchanges(path), block_size=1024).to_json()
    with pytest.raises(UsageError, match="multiple of 512"):  # not a multiple: refused
        summarize(load_exchanges(path), block_size=100)
    assert (native["block_size"], coarse["block_size"]) == (512, 1024)
    assert native["theoretical_hit_rate"] == pytest.approx(5 * 512 / 6000)
    assert coarse["theoretical_hit_rate"] == pytest.approx(2 * 1024 / 6000)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (b'{"timestamp": 5}', "needs 'input_length'"),
        (b'{"input_length": -3}', "'input_length' must be a non-negative integer"),
        (b'{"input_length": true}', "'input_length' must be a non-negative integer"),
        (b'{"input_length": 3, "hash_ids": [1, "2"]}', "'hash_ids' must be a list of integers"),
        (b'{"input_length": 3, "timestamp": "noon"}', "'timestamp' must be a non-negative number"),
        (b'{"input_length": 3, "session_id": [1]}', "'session_id' must be a string or an integer"),
        (b'{"foo": 1}', "not a Mooncake record"),
    ],
)
def test_errors_name_the_file_and_line(tmp_path: Path, line: bytes, message: str) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(
        orjson.dumps(LINES[0]) + b"\n\n" + line + b"\n" + orjson.dumps(LINES[1]) + b"\n"
    )
    with pytest.raises(FormatError, match=message) as info:
        list(iter_mooncake(path))
    assert str(info.value).startswith(f"{path}: record 3: ")
    assert info.value.record == 3


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="cannot read"):
        list(iter_mooncake(tmp_path / "missing.jsonl"))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
    max_leaves=12,
)
records = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "timestamp": json_values | st.floats(0, 1e13),
            "input_length": st.integers(-3, 2**70) | json_values,
            "output_length": st.integers(-3, 10**6) | json_values,
            "hash_ids": st.lists(st.integers(-(2**64), 2**64), max_size=4) | json_values,
            "session_id": json_values,
            "delay": json_values,
            "text_input": json_values,
        },
    ),
)


@settings(max_examples=200, deadline=None)
@given(records)
def test_fuzz_records_raise_only_format_errors(rec: object) -> None:
    from agentx.formats.mooncake import _Bad

    try:
        _, ex = parse_record(rec, 1, "fuzz", 512)
    except _Bad:
        return
    assert ex.usage.prompt_tokens is not None or isinstance(ex.request, dict)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=40) | records.map(lambda r: json.dumps(r).encode()), max_size=5))
def test_fuzz_files_raise_only_format_errors(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes]
) -> None:
    path = tmp_path_factory.mktemp("m") / "f.jsonl"
    path.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in lines))
    with contextlib.suppress(FormatError):
        list(iter_mooncake(path))
