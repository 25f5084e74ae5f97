"""Results directories an earlier agentx wrote (``golden.older``: no key added since its first
release, no theory.parquet): every reader still works, a key the file lacks reads as unknown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from typer.testing import CliRunner

from agentx.cli import app
from agentx.report.results_dir import load_summary

from .golden import ADDED_SINCE, workdir


def flat(d: Any, path: str = "") -> dict[str, Any]:
    if isinstance(d, dict) and d:
        return {k: v for key, x in d.items() for k, v in flat(x, f"{path}.{key}").items()}
    return {path: d}


def report(*args: str) -> Any:
    r = CliRunner().invoke(app, ["report", *args])
    assert r.exit_code == 0, r.output
    return orjson.loads(r.stdout)


def test_what_an_older_summary_has_is_printed_as_it_was_and_what_it_lacks_is_null(
    tmp_path: Path,
) -> None:
    with workdir(tmp_path) as work:
        old = orjson.loads((work / "old_a" / "summary.json").read_bytes())
        new = orjson.loads((work / "a" / "summary.json").read_bytes())
        out = report("old_a", "--json")
        typed = load_summary(work / "old_a")
    have, printed = flat(old), flat(out)
    assert {k: printed[k] for k in have} == have
    added = {k for k in printed if k not in have}
    curves = {k for k in added if k.startswith(".rollups.latency_quantiles_ms")}
    # the CDFs are computed from requests.parquet: those of the run as it wrote them
    assert {k: printed[k] for k in curves} == {k: flat(new)[k] for k in curves}
    assert all(printed[k] in (None, []) for k in added - curves)  # unknown, or an empty list
    # and nothing is added but what the file lacked
    lacked = {f".{'.'.join((*where, k))}" for where, keys in ADDED_SINCE.items() for k in keys}
    assert all(any(k.startswith(p) for p in lacked) for k in added)
    assert typed.requests.bad_usage is None and typed.clock is None and typed.cost is None
    assert typed.server is not None and typed.server.counters is None


def test_older_shards_merge_with_what_they_lack_said(tmp_path: Path) -> None:
    with workdir(tmp_path):
        merged = report("old_shard0", "old_shard1", "--json")
    warnings = "\n".join(merged["warnings"])
    assert "no clock anchor" in warnings  # rows aligned by their wall-clock start
    assert "no theory.parquet" in warnings  # the shards' own theoretical hits add up
    assert "keep no raw counters" in warnings  # the server figures left out
    assert merged["requests"]["total"] == 48 and merged["cache"]["block_size"] == 16


def test_an_older_run_compares_with_a_newer_one(tmp_path: Path) -> None:
    with workdir(tmp_path):
        cmp = report("old_a", "--compare", "b", "--json")
        same = report("a", "--compare", "b", "--json")
    # the same rows, but the cost ones: the older run has no cost block (nor has b)
    cost = [m for m in same["metrics"] if m["key"].startswith("cost.")]
    assert cost and cmp["metrics"] == [m for m in same["metrics"] if m not in cost]
