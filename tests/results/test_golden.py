"""Every JSON file agentx writes, byte for byte as its golden file holds it (``golden.py`` says
how each is made; a change to one is a change of the contract), and each real file read back and
written again unchanged: same keys, same order, same numbers, same nulls."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from agentx.results.compare import Comparison
from agentx.results.scrub import ScrubReport
from agentx.results.simulate import simulation_from_json
from agentx.results.stats import Stats
from agentx.results.summary import Summary
from agentx.results.sweep import Sweep

from .golden import CASES, DATA, GOLDEN, produce


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_command_writes_its_golden_file(name: str, tmp_path: Path) -> None:
    assert produce(name, tmp_path) == (GOLDEN / name).read_bytes()


READERS: dict[str, Callable[[object], object]] = {
    "agentx.summary/1": Summary.from_json,
    "agentx.stats/1": Stats.from_json,
    "agentx.simulate/1": simulation_from_json,
    "agentx.compare/1": Comparison.from_json,
    "agentx.sweep/1": Sweep.from_json,
    "agentx.scrub/1": ScrubReport.from_json,
}


def written_again(raw: bytes) -> bytes:
    """``raw`` read into its schema's values and written back (both compact)."""
    value = READERS[orjson.loads(raw)["schema"]](orjson.loads(raw))
    return orjson.dumps(value.to_json())  # type: ignore[attr-defined]


REAL = sorted(
    [p for p in GOLDEN.glob("*.json") if p.name != "live_summary.json"]
    + [*DATA.rglob("summary.json"), *DATA.rglob("sweep.json")]
)


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_real_file_reads_back_and_writes_the_same_bytes(path: Path) -> None:
    raw = path.read_bytes()
    assert written_again(raw) == orjson.dumps(orjson.loads(raw))


def test_a_live_runs_summary_reads_back_and_writes_the_same_bytes(tmp_path: Path) -> None:
    produce("live_summary.json", tmp_path)
    raw = (tmp_path / "work" / "live" / "summary.json").read_bytes()
    pretty = orjson.dumps(orjson.loads(raw), option=orjson.OPT_INDENT_2) + b"\n"
    assert raw == pretty  # what agentx writes: indented, one newline at the end
    assert written_again(raw) == orjson.dumps(orjson.loads(raw))


def test_every_schema_has_real_files() -> None:
    assert {orjson.loads(p.read_bytes())["schema"] for p in REAL} == set(READERS)
