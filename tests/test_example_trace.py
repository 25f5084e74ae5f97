"""The bundled example trace (traces/example.parquet): the shape replay and the demo rely on, and
what its recipe (scripts/make_example_trace.py on traces/source/) builds."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
from collections import Counter
from itertools import pairwise
from pathlib import Path

from agentx.core.examples import example_path
from agentx.store import open_trace, read_trace

ROOT = Path(__file__).parents[1]
EXAMPLE = example_path("example")


def test_example_has_a_realistic_agent_shape() -> None:
    info = open_trace(EXAMPLE)
    assert EXAMPLE.stat().st_size < 1_000_000 and info.trace_id == "example"
    exs = read_trace(EXAMPLE)
    sessions = {ex.session_id for ex in exs}
    assert 4 <= len(sessions) <= 6
    apis = Counter(ex.api for ex in exs)
    assert (
        apis["openai.responses"] >= 1
        and apis["anthropic.messages"] + apis["openai.chat"] > len(exs) / 2
    )
    assert any("subagent" in ex.flags for ex in exs)
    prompts = [ex.usage.prompt_tokens or 0 for ex in exs]
    assert max(prompts) < 30_000
    first = next(
        ex
        for ex in exs
        if ex.api == "anthropic.messages"
        and "subagent" not in ex.flags
        and "side_call" not in ex.flags
    )
    assert (
        len(json.dumps(first.request["tools"])) + len(json.dumps(first.request["system"])) > 8_000
    )  # thousands of tokens
    for ex in exs:
        assert (
            ex.status == 200
            and ex.timing.ttft_ns
            and ex.timing.e2e_ns
            and ex.timing.chunk_offsets_ns
        )
        assert ex.usage.prompt_tokens and ex.usage.completion_tokens is not None
    main = [ex for ex in exs if ex.thread_id == "S5/main"]
    assert 6 <= len(main) <= 15
    assert all(b.parent_request_id == a.request_id for a, b in pairwise(main))
    assert [ex.usage.prompt_tokens for ex in main] == sorted(
        ex.usage.prompt_tokens for ex in main
    )  # growing
    assert all(ex.think_time_s is not None for ex in main[1:])


def test_example_is_what_the_generator_builds() -> None:
    spec = importlib.util.spec_from_file_location(
        "make_example_trace", ROOT / "scripts" / "make_example_trace.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    built = module.build()
    stored = read_trace(EXAMPLE)
    assert [json.dumps(ex.request) for ex in stored] == [json.dumps(ex.request) for ex in built]
    assert [(ex.request_id, ex.usage, ex.timing) for ex in stored] == [
        (ex.request_id, ex.usage, ex.timing) for ex in built
    ]


def test_the_generator_rebuilds_the_bundled_file(tmp_path: Path) -> None:
    """Rows (above) and file metadata; not the bytes, which name the pyarrow that wrote them."""
    out = tmp_path / "example.parquet"
    subprocess.run(
        [sys.executable, ROOT / "scripts" / "make_example_trace.py", "-o", out],
        check=True,
        capture_output=True,
    )
    # fails after a version bump too (the file names the agentx that wrote it): rebuild it with
    # `python scripts/make_example_trace.py`
    rebuilt = dataclasses.replace(open_trace(out), path=EXAMPLE, files=(EXAMPLE,))
    assert rebuilt == open_trace(EXAMPLE)
