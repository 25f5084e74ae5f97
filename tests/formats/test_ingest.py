"""Importing a generated 50-trace Weka corpus (scripts/weka_corpus, the fixtures' statistics):
bounded memory, a compact hash-only trace whose stats are the corpus's own totals, and an export
that gives every file back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from weka_corpus import DEFAULT_SEED, CorpusSummary, generate_corpus

from agentx.workload.stats import compute_stats

ROOT = Path(__file__).resolve().parents[2]

# Imports the corpus in a fresh interpreter and prints its RSS before and at its peak (VmHWM:
# ru_maxrss would remember the forking parent's RSS across exec).
_IMPORT = """
import json, sys
from agentx.formats.convert import convert
from agentx.store import open_trace
def status_mb(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
base = status_mb("VmRSS")
report = convert(sys.argv[1], sys.argv[2], jobs=int(sys.argv[3]))
peak = status_mb("VmHWM")
print(json.dumps({"base_mb": base, "peak_mb": peak, "exchanges": report.exchanges}))
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CorpusSummary]:
    out = tmp_path_factory.mktemp("weka50")
    return out, generate_corpus(out, 50, DEFAULT_SEED)


def _import(src: Path, dst: Path, jobs: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT, str(src), str(dst), str(jobs)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_50_trace_corpus_imports_compactly_in_bounded_memory(
    corpus: tuple[Path, CorpusSummary], tmp_path: Path
) -> None:
    src, summary = corpus
    trace = tmp_path / "corpus.parquet"
    measured = _import(src, trace, jobs=1)
    # one session at a time: the growth is a session's worth, not the corpus (19 MB of JSON,
    # 4M block ids; the synthetic-text import of the past peaked at 3.7 GB on it)
    assert measured["peak_mb"] - measured["base_mb"] < 200, measured
    assert measured["exchanges"] == summary.requests
    assert trace.stat().st_size < summary.json_bytes / 10  # target: 1.5x; it is ~2 %
    assert not list(tmp_path.glob(".*"))  # no staged parts or spools left behind

    stats = compute_stats(trace).to_json()
    assert (stats["sessions"], stats["requests"]) == (50, summary.requests)
    # a thread per session, per subagent and per flat chain (split as the generator made them)
    assert stats["threads"] == 50 + summary.subagents + summary.flat_chains
    assert stats["totals"]["input_tokens"] == summary.input_tokens
    assert stats["totals"]["output_tokens"] == summary.output_tokens
    # the generator's own count of hits (its chained ids), not agentx's
    assert stats["theoretical_hit_rate"] == pytest.approx(summary.hit_rate, abs=1e-12)
    assert stats["block_size"] == 64


def test_the_imported_corpus_exports_back_file_for_file(
    corpus: tuple[Path, CorpusSummary], tmp_path: Path
) -> None:
    from agentx.formats.convert import convert

    src, _ = corpus
    convert(src, tmp_path / "ds", dataset=True)
    convert(tmp_path / "ds", tmp_path / "back", to="weka")
    files = sorted(src.glob("*.json"))
    assert len(files) == 50
    for f in files:
        assert orjson.loads((tmp_path / "back" / f.name).read_bytes()) == orjson.loads(
            f.read_bytes()
        ), f.name
