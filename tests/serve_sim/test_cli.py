"""``agentx serve-sim`` as a user runs it: prints its URL, serves, stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import httpx
import pytest

from agentx.core.errors import AgentxError
from agentx.serve_sim import SimConfig, SimServer, running_server

CLI = [sys.executable, "-m", "agentx", "serve-sim"]


def test_serve_sim_prints_its_url_and_stops_on_sigterm() -> None:
    proc = subprocess.Popen(
        [*CLI, "--port", "0", "--model", "cli-sim", "--fast"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(url + "/v1/models").json()["data"][0]["id"] == "cli-sim"
        resp = httpx.post(
            url + "/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3},
        )
        assert resp.json()["usage"]["completion_tokens"] == 3
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_sim_refuses_nonsense_with_exit_2() -> None:
    done = subprocess.run([*CLI, "--kv-tokens", "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--kv-tokens" in lines[0] and "Traceback" not in done.stderr


def test_a_taken_port_is_one_clear_error() -> None:
    with SimServer() as first:
        with pytest.raises(AgentxError, match="cannot listen"):
            SimServer(SimConfig.of(port=first.port)).start()
        assert httpx.get(first.url + "/health").status_code == 200


async def test_running_server_on_the_callers_loop() -> None:
    async with running_server(SimConfig.of(port=0, fast=True)) as srv:
        async with httpx.AsyncClient(base_url=srv.url) as client:
            body = {"messages": [{"role": "user", "content": "x"}], "max_tokens": 2}
            results = await asyncio.gather(
                *(client.post("/v1/chat/completions", json=body) for _ in range(5))
            )
        assert all(r.status_code == 200 for r in results)
        assert srv.replica.running == 0
        assert srv.replica.metrics.finished["length"] == 5


def test_kv_blocks_and_a_hugging_face_tokenizer(hf_tokenizer_dir: str) -> None:
    proc = subprocess.Popen(
        [
            *CLI,
            "--port",
            "0",
            "--fast",
            "--block-size",
            "8",
            "--kv-blocks",
            "37",
            "--tokenizer",
            hf_tokenizer_dir,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        metrics = httpx.get(url + "/metrics").text
        assert 'num_gpu_blocks="37"' in metrics and 'block_size="8"' in metrics
        body = {"messages": [{"role": "user", "content": "the lazy dog"}], "max_tokens": 2}
        usage = httpx.post(url + "/v1/chat/completions", json=body).json()["usage"]
        from agentx.prefixcache.tokenizer import resolve_tokenizer

        want = resolve_tokenizer(hf_tokenizer_dir).request_tokens("openai.chat", body).size
        assert usage["prompt_tokens"] == want
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_tokenizer_server_is_refused_by_serve_sim() -> None:
    done = subprocess.run(
        [*CLI, "--tokenizer", "server"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "serve-sim is the server" in done.stderr
