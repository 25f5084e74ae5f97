"""A bad row of a dataset read lazily: a Hugging Face ``.jsonl`` is indexed row by row when its
lanes reach each row (the first request does not wait for the whole file), so a row that is not
valid JSON is found mid-run. The run stops there with one line naming ``file:line``, exit 1, the
rows of the requests that finished kept for ``agentx recover``; no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from agentx.core.examples import example_path
from agentx.serve_sim import SimConfig, SimServer


def test_a_bad_row_reached_mid_run_stops_it_in_one_line(tmp_path: Path) -> None:
    docs = [orjson.loads(f.read_bytes()) for f in sorted(example_path("weka").glob("*.json"))]
    good = [orjson.dumps({**d, "id": f"t{i}"}) for i, d in enumerate(docs)]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join([*good[:1], b"{not json", *good[1:]]) + b"\n")
    with SimServer(SimConfig.of(port=0, fast=True)) as srv:
        done = subprocess.run(
            [sys.executable, "-m", "agentx", "replay", str(path), "--endpoint", srv.url,
             "--concurrency", "1", "--time-scale", "0", "-o", str(tmp_path / "r")],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "never retrieved" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"agentx: error: {path}:2: not valid JSON"), done.stderr
    assert "agentx recover" in done.stderr
