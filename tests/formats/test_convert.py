"""`agentx convert` / `scrub` / `anonymize` from the command line: imports, exports, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.errors import AgentxError
from agentx.core.examples import example_path
from agentx.formats.convert import convert
from agentx.prefixcache.cache import UnboundedPrefixCache
from agentx.prefixcache.hashing import block_hashes, chain_ids
from agentx.prefixcache.tokens import encode
from agentx.store import read_trace, write_trace

DATA = example_path("weka")
runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture imported as it is: hash-only rows, no text."""
    out = tmp_path_factory.mktemp("conv") / "w.parquet"
    code, stdout, stderr = run("convert", str(DATA / "trace_0010_head.json"), "-o", str(out))
    assert code == 0, stderr
    assert "synthetic text" not in stdout
    return out


@pytest.fixture(scope="module")
def converted_text(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture imported with synthetic text (``--with-text``)."""
    out = tmp_path_factory.mktemp("conv") / "t.parquet"
    src = str(DATA / "trace_0010_head.json")
    code, stdout, stderr = run("convert", src, "-o", str(out), "--with-text")
    assert code == 0, stderr
    assert "synthetic text for 35 hash-only exchanges" in stdout
    return out


def test_an_import_stays_hash_only(converted: Path) -> None:
    exs = read_trace(converted)
    fixture = orjson.loads((DATA / "trace_0010_head.json").read_bytes())
    assert exs and all(ex.request == {} and ex.hash_ids for ex in exs)
    assert converted.stat().st_size < (DATA / "trace_0010_head.json").stat().st_size / 4
    assert (
        sum(ex.usage.prompt_tokens or 0 for ex in exs)
        == (fixture["totals"]["combined_tokens"]["input"])
    )


def test_stats_of_an_imported_weka_fixture_match_its_totals(converted: Path) -> None:
    fixture = orjson.loads((DATA / "trace_0010_head.json").read_bytes())
    code, stdout, _ = run("stats", str(converted), "--json")
    assert code == 0
    stats = json.loads(stdout)
    n = sum(len(r["requests"]) if r["type"] == "subagent" else 1 for r in fixture["requests"])
    assert stats["requests"] == n
    assert stats["sessions"] == 1
    assert stats["threads"] == 1 + fixture["totals"]["subagent_count"]
    assert stats["totals"]["input_tokens"] == fixture["totals"]["combined_tokens"]["input"]
    assert stats["totals"]["output_tokens"] == fixture["totals"]["combined_tokens"]["output"]
    assert stats["input_tokens"]["mean"] * n == pytest.approx(
        fixture["totals"]["combined_tokens"]["input"]
    )
    code, direct, _ = run("stats", str(DATA / "trace_0010_head.json"), "--json")
    assert json.loads(direct)["theoretical_hit_rate"] == stats["theoretical_hit_rate"]


def test_a_trace_with_text_exports_back_exactly(converted_text: Path, tmp_path: Path) -> None:
    code, _, stderr = run(
        "convert", str(converted_text), "-o", str(tmp_path / "b.json"), "--to", "weka"
    )
    assert code == 0, stderr
    original = orjson.loads((DATA / "trace_0010_head.json").read_bytes())
    assert orjson.loads((tmp_path / "b.json").read_bytes()) == original


def test_converted_text_is_token_exact_and_shares_prefixes_as_the_hash_ids_say(
    converted_text: Path,
) -> None:
    by_text, by_ids = UnboundedPrefixCache(64), UnboundedPrefixCache(64)
    for ex in read_trace(converted_text):
        toks = encode(ex.request["messages"][0]["content"])
        assert toks.size == ex.usage.prompt_tokens
        assert ex.request["max_tokens"] == ex.usage.completion_tokens
        by_text.observe(block_hashes(toks, 64), int(toks.size))
        assert ex.hash_ids is not None
        by_ids.observe(chain_ids(ex.hash_ids), int(toks.size))
    assert by_text.hit_tokens == by_ids.hit_tokens and by_text.hit_rate > 0.5


@pytest.mark.parametrize("via", ["file", "dataset", "dataset-jobs"])
def test_weka_directory_round_trips_exactly(tmp_path: Path, via: str) -> None:
    """Weka -> agentx (one file, a dataset directory, two processes) -> Weka gives every file
    back JSON-equal: header, subagent entries, every record."""
    out = tmp_path / "weka"
    trace = str(tmp_path / ("both/" if via.startswith("dataset") else "both.parquet"))
    extra = {"dataset-jobs": ["--jobs", "2"]}.get(via, [])
    code, _, stderr = run("convert", str(DATA), "-o", trace, *extra)
    assert code == 0, stderr
    code, stdout, stderr = run("convert", trace, "-o", str(out), "--to", "weka")
    assert code == 0, stderr
    assert "2 sessions" in " ".join(stdout.split())
    for name in ("trace_0001", "trace_0010_head"):
        a = orjson.loads((DATA / f"{name}.json").read_bytes())
        b = orjson.loads((out / f"{name}.json").read_bytes())
        assert b == a


def _mooncake(tmp_path: Path, lines: list[bytes]) -> Path:
    p = tmp_path / "m.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    return p


def test_mooncake_round_trip(tmp_path: Path) -> None:
    rows = [
        {"timestamp": 0, "input_length": 1200, "output_length": 52, "hash_ids": [0, 1, 2]},
        {"timestamp": 105, "input_length": 1800, "output_length": 26, "hash_ids": [0, 1, 3, 4]},
        {"timestamp": 274, "input_length": 600, "output_length": 52, "hash_ids": [5, 6]},
    ]
    src = _mooncake(tmp_path, [orjson.dumps(r) for r in rows])
    assert run("convert", str(src), "-o", str(tmp_path / "m.parquet"))[0] == 0
    exs = read_trace(tmp_path / "m.parquet")
    assert [list(ex.hash_ids or ()) for ex in exs] == [r["hash_ids"] for r in rows]
    assert all(ex.request == {} for ex in exs)
    assert run("convert", str(src), "-o", str(tmp_path / "t.parquet"), "--with-text")[0] == 0
    for ex in read_trace(tmp_path / "t.parquet"):
        assert encode(ex.request["messages"][0]["content"]).size == ex.usage.prompt_tokens
    code, _, stderr = run(
        "convert",
        str(tmp_path / "m.parquet"),
        "-o",
        str(tmp_path / "back.jsonl"),
        "--to",
        "mooncake",
    )
    assert code == 0, stderr
    back = [orjson.loads(x) for x in (tmp_path / "back.jsonl").read_bytes().splitlines()]
    assert back == rows  # ids are first-seen dense here, so they come back verbatim


def test_bad_mooncake_line_names_file_and_record(tmp_path: Path) -> None:
    good = orjson.dumps({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]})
    src = _mooncake(
        tmp_path, [good, good, b'{"timestamp": 5, "input_length": "ten"}', b"{oops", good]
    )
    code, _, stderr = run("convert", str(src), "-o", str(tmp_path / "x.parquet"))
    assert code == 1
    assert str(src) in stderr and "record 3" in stderr and "Traceback" not in stderr
    code, stdout, stderr = run(
        "convert", str(src), "-o", str(tmp_path / "x.parquet"), "--skip-bad", "--json"
    )
    assert code == 0, stderr
    report = json.loads(stdout)
    assert (
        report["skipped_bad"] == 2 and report["written"] == 3 and "record 3" in report["first_bad"]
    )


def test_bad_weka_file_in_a_directory(tmp_path: Path) -> None:
    d = tmp_path / "weka"
    d.mkdir()
    (d / "a.json").write_bytes((DATA / "trace_0001.json").read_bytes())
    bad = orjson.loads((DATA / "trace_0001.json").read_bytes())
    bad["requests"][4]["in"] = -3
    (d / "b.json").write_bytes(orjson.dumps(bad))
    code, _, stderr = run("convert", str(d), "-o", str(tmp_path / "x.parquet"))
    assert code == 1 and "b.json" in stderr and "requests[4].in" in stderr
    report = convert(d, tmp_path / "x.parquet", skip_bad=True)
    assert report.skipped_bad == 1 and report.exchanges == 41


@pytest.mark.parametrize("content", [b"", b"\n\n", b"[1, 2", b"PAR1garbage"])
def test_unreadable_inputs_fail_with_one_line(tmp_path: Path, content: bytes) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(content)
    code, _, stderr = run("convert", str(src), "-o", str(tmp_path / "x.parquet"))
    assert code == 1
    assert stderr.count("\n") == 1 and str(src) in stderr


def test_unknown_target_is_a_usage_error(tmp_path: Path) -> None:
    code, _, stderr = run(
        "convert", str(DATA / "trace_0001.json"), "-o", str(tmp_path / "x"), "--to", "csv"
    )
    assert code == 2 and "--to" in stderr


_record = st.fixed_dictionaries(
    {
        "timestamp": st.integers(0, 10**7),
        "input_length": st.integers(0, 3000),
        "output_length": st.integers(0, 500),
    },
    optional={"hash_ids": st.lists(st.integers(0, 20), max_size=7)},
)
_line = st.one_of(
    _record.map(orjson.dumps),
    st.binary(max_size=20),
    st.dictionaries(
        st.text(max_size=5), st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5), max_size=3
    ).map(orjson.dumps),
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(_line, min_size=1, max_size=8))
def test_fuzzed_mooncake_input_converts_or_fails_cleanly(
    tmp_path: Path, lines: list[bytes]
) -> None:
    src = tmp_path / "fuzz.jsonl"
    src.write_bytes(b"\n".join(lines))
    for skip in (False, True):
        try:
            report = convert(src, tmp_path / "fuzz.parquet", skip_bad=skip, synthesize=skip)
        except AgentxError:
            continue  # one clear error (bad record, empty file, unknown format)
        out = read_trace(tmp_path / "fuzz.parquet")
        assert len(out) == report.written
        for ex in out:
            if not skip:
                assert ex.request == {}  # hash-only stays hash-only
            elif ex.hash_ids is not None and ex.usage.prompt_tokens is not None:
                content = ex.request["messages"][0]["content"]
                assert np.asarray(encode(content)).size == ex.usage.prompt_tokens


def test_scrub_and_anonymize_commands(tmp_path: Path) -> None:
    from scrub.factory import capture

    src = tmp_path / "raw.parquet"
    write_trace(src, capture())
    code, stdout, stderr = run(
        "scrub",
        str(src),
        "-o",
        str(tmp_path / "clean.parquet"),
        "--report",
        str(tmp_path / "r.json"),
    )
    assert code == 0, stderr
    assert "theoretical hit rate" in stdout and "provider_fields" in stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["schema"] == "agentx.scrub/1" and report["exchanges"]["in"] == 18
    code, stdout, stderr = run(
        "anonymize",
        str(tmp_path / "clean.parquet"),
        "-o",
        str(tmp_path / "anon.parquet"),
        "--key",
        "k",
        "--json",
    )
    assert code == 0, stderr
    assert json.loads(stdout)["inexact_segments"] == 0
    code, _, stderr = run(
        "scrub", str(tmp_path / "nope.parquet"), "-o", str(tmp_path / "x.parquet")
    )
    assert code == 1 and "nope.parquet" in stderr
