"""`agentx capture` as a user runs it: a subprocess launching a stand-in agent; `mitmdump -s`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pyarrow.parquet as pq
from typer.testing import CliRunner
from upstream import Upstream

from agentx.apis import Api
from agentx.capture import ADDON_PATH
from agentx.cli import app
from agentx.store import read_trace

HERE = Path(__file__).parent
AGENTX = [sys.executable, "-m", "agentx"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_done_when_capture_launches_agent_and_stats_count_it(
    upstream: Upstream, tmp_path: Path, confdir: Path
) -> None:
    out = tmp_path / "t.parquet"
    port = free_port()
    proc = subprocess.run(
        [
            *AGENTX,
            "capture",
            "--upstream",
            upstream.url,
            "--port",
            str(port),
            "--out",
            str(out),
            "--confdir",
            str(confdir),
            "--",
            sys.executable,
            str(HERE / "agent_client.py"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "calls=9" in proc.stdout
    assert f"listening on http://127.0.0.1:{port}" in proc.stderr.replace("\n", "")
    stats = subprocess.run(
        [*AGENTX, "stats", str(out), "--json"], capture_output=True, text=True, timeout=120
    )
    assert stats.returncode == 0, stats.stderr
    s = orjson.loads(stats.stdout)
    assert s["requests"] == 9 and s["threads"] == 3
    assert s["apis"] == {Api.ANTHROPIC_MESSAGES: 3, Api.OPENAI_CHAT: 3, Api.OPENAI_RESPONSES: 3}
    rows = read_trace(out)
    assert all(r.agent is None and r.client for r in rows)
    # one process, no agent session ids for OpenAI: one fallback session by process
    assert len({r.session_id for r in rows if r.api != Api.ANTHROPIC_MESSAGES}) == 1
    dumped = orjson.dumps(pq.read_table(out).to_pylist(), default=str)
    assert b"DONEWHENsecret" not in dumped
    ordered = sorted(rows, key=lambda r: r.timing.start_wall_ns)
    for sent, row in zip(upstream.seen, ordered, strict=True):
        if "previous_response_id" in sent.body:  # stored with the chain resolved
            assert row.request["input"][-1] == sent.body["input"][-1]
        else:
            assert row.request == sent.body


def test_agent_exit_code_passes_through(tmp_path: Path, confdir: Path) -> None:
    out = tmp_path / "t.parquet"
    proc = subprocess.run(
        [
            *AGENTX,
            "capture",
            "--upstream",
            "openai",
            "--out",
            str(out),
            "--confdir",
            str(confdir),
            "--",
            sys.executable,
            "-c",
            "import os,sys; print(os.environ['OPENAI_BASE_URL']); sys.exit(3)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3
    assert proc.stdout.startswith("http://127.0.0.1:") and proc.stdout.strip().endswith("/v1")
    assert read_trace(out) == []


def test_usage_errors_are_one_line(tmp_path: Path, confdir: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(
        app, ["capture", "--upstream", "ftp://x", "--out", str(tmp_path / "t.parquet")]
    )
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1 and "--upstream" in bad.stderr
    none = runner.invoke(app, ["capture"])
    assert none.exit_code == 2 and "--out" in none.stderr
    fwd = runner.invoke(
        app,
        ["capture", "--mode", "forward", "--upstream", "openai", "-o", str(tmp_path / "f.parquet")],
    )
    assert fwd.exit_code == 2
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        used = runner.invoke(
            app,
            [
                "capture",
                "--port",
                str(port),
                "--out",
                str(tmp_path / "u.parquet"),
                "--confdir",
                str(confdir),
                "--no-status",
                "--",
                "true",
            ],
        )
    assert (
        used.exit_code == 1 and "could not start" in used.stderr and used.exception is None
    ) or isinstance(used.exception, SystemExit)
    path = runner.invoke(app, ["capture", "--print-addon-path"])
    assert path.exit_code == 0 and Path(path.stdout.strip()) == ADDON_PATH


def test_mitmdump_with_the_printed_addon(upstream: Upstream, tmp_path: Path, confdir: Path) -> None:
    mitmdump = Path(sys.executable).with_name("mitmdump")
    out = tmp_path / "m.parquet"
    port = free_port()
    proc = subprocess.Popen(
        [
            str(mitmdump),
            "-q",
            "-s",
            str(ADDON_PATH),
            "--mode",
            f"reverse:{upstream.url}",
            "--listen-host",
            "127.0.0.1",
            "--listen-port",
            str(port),
            "--set",
            f"confdir={confdir}",
            "--set",
            f"agentx_out={out}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                r = httpx.post(
                    f"http://127.0.0.1:{port}/v1/chat/completions",
                    timeout=5,
                    json={
                        "model": "m",
                        "stream": True,
                        "stream_options": {"include_usage": True},
                        "messages": [{"role": "user", "content": "hi"}],
                    },
                )
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
        assert r.status_code == 200 and b"[DONE]" in r.content
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    (row,) = read_trace(out)
    assert row.api == Api.OPENAI_CHAT and row.response.text == "All done after 0 tool calls."
    assert row.usage.prompt_tokens == 7 and "partial" not in row.flags
