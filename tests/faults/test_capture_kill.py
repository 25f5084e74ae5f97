"""A capture killed with SIGKILL keeps every completed exchange; a
capture that could not write its trace says so and exits 1, keeping the spool.

Real ``agentx capture`` subprocesses (embedded mitmproxy) in front of the scripted upstream.
"""

from __future__ import annotations

import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from capture.clients import run_anthropic
from typer.testing import CliRunner
from upstream import Upstream

from agentx.apis import Api
from agentx.capture.recorder import SPOOL_LATENCY_S
from agentx.cli import app
from agentx.core.flags import FLAG_SIDE_CALL
from agentx.store import read_trace, recover, spool_path

AGENTX = [sys.executable, "-m", "agentx"]


@pytest.fixture(scope="module")
def confdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mitmconf")


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream().start()
    yield up
    up.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_capture(
    out: Path, upstream: Upstream, confdir: Path
) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            *AGENTX,
            "capture",
            "--upstream",
            upstream.url,
            "--port",
            str(port),
            "-o",
            str(out),
            "--confdir",
            str(confdir),
            "--no-status",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:  # ready when the proxy answers
        assert proc.poll() is None, proc.communicate()
        try:
            httpx.get(url + "/v1/models", timeout=2)
            return proc, url
        except httpx.TransportError:
            assert time.monotonic() < deadline, "capture did not start"
            time.sleep(0.05)


def one_shot(url: str, session: str) -> None:
    """A tool-less first call, alone in its session (a title or topic call, or `claude -p`)."""
    r = httpx.post(
        url + "/v1/messages",
        headers={"x-claude-code-session-id": session, "x-api-key": "sk-ant-test-0000000000"},
        json={
            "model": "claude-scripted",
            "max_tokens": 64,
            "stream": True,
            "messages": [{"role": "user", "content": f"one shot {session}"}],
        },
        timeout=30,
    )
    assert r.status_code == 200 and b"message_stop" in r.content


def spooled_ids(out: Path) -> set[str]:
    """Request ids of the complete rows in the capture's spool."""
    try:
        lines = spool_path(out).read_bytes().split(b"\n")[1:-1]  # header; torn tail
    except FileNotFoundError:
        return set()
    return {orjson.loads(line)["request_id"] for line in lines if b'"request_id"' in line}


def wait_spooled(out: Path, n: int) -> float:
    """Seconds until the spool holds ``n`` rows (polled; fails past twice the bound)."""
    t0 = time.monotonic()
    while len(spooled_ids(out)) < n:
        assert time.monotonic() - t0 < 2 * SPOOL_LATENCY_S, f"{len(spooled_ids(out))}/{n} spooled"
        time.sleep(0.02)
    return time.monotonic() - t0


def kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def test_sigkill_keeps_one_shot_sessions_and_every_exchange_under_mixed_load(
    upstream: Upstream, tmp_path: Path, confdir: Path
) -> None:
    """20 one-shot sessions (20 of 20 used to be lost), then tool loops and one-shot calls
    interleaved; the kill comes as soon as the spool has them all.

    The title call of the tool-using session is flagged ``side_call`` once its session shows
    tools (an amendment line in the spool): it reached the spool before anyone knew what it was.
    """
    out = tmp_path / "t.parquet"
    proc, url = start_capture(out, upstream, confdir)
    session = "user_abc_account_def_session_0f0e0d0c-1111-2222-3333-444455556666"
    try:
        for i in range(20):
            one_shot(url, f"oneshot-{i}")
        wait_spooled(out, len(upstream.seen))  # with the readiness probe (a non-model row)
        httpx.post(  # Claude Code's title call: tool-less, first in its session
            url + "/v1/messages",
            headers={"x-api-key": "sk-ant-test-0000000000"},
            json={
                "model": "claude-haiku",
                "max_tokens": 32,
                "stream": True,
                "metadata": {"user_id": session},
                "messages": [{"role": "user", "content": "title for: list the files"}],
            },
            timeout=30,
        ).raise_for_status()
        loops = [
            threading.Thread(target=run_anthropic, args=(url, "sk-ant-test-0000000000"))
            for _ in range(2)
        ]
        for t in loops:
            t.start()
        for i in range(6):
            one_shot(url, f"mixed-{i}")
        for t in loops:
            t.join(60)
        sent = len(upstream.seen)
        wait_spooled(out, sent)
    finally:
        kill(proc)
    assert recover(out) == sent
    rows = read_trace(out)
    assert len(rows) == sent
    model_rows = [r for r in rows if r.api != Api.OTHER]
    assert len({r.session_id for r in model_rows if r.session_id.startswith("oneshot")}) == 20
    (title,) = [r for r in rows if r.model == "claude-haiku"]
    assert FLAG_SIDE_CALL in title.flags
    assert sum(FLAG_SIDE_CALL in r.flags for r in rows) == 1  # one-shot calls are not side calls


# -- item 5: a trace that could not be written is a failure, and the spool is kept -----------


def agent_script(tmp_path: Path, calls: int, prompt_bytes: int) -> Path:
    script = tmp_path / "agent.py"
    script.write_text(
        "import os, httpx\n"
        f"for i in range({calls}):\n"
        "    r = httpx.post(os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', timeout=30,\n"
        "        json={'model': 'm', 'max_tokens': 8, 'stream': True, 'messages': [\n"
        f"            {{'role': 'user', 'content': str(i) + ' ' + 'x' * {prompt_bytes}}}]}})\n"
        "    assert r.status_code == 200\n"
    )
    return script


def capture_agent(
    out: Path, upstream: Upstream, confdir: Path, script: Path, fsize: int | None = None
) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run(
        [
            *AGENTX,
            "capture",
            "--upstream",
            upstream.url,
            "-o",
            str(out),
            "--confdir",
            str(confdir),
            "--no-status",
            "--",
            sys.executable,
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )


def test_file_size_limit_is_exit_1_with_the_reason(
    upstream: Upstream, tmp_path: Path, confdir: Path
) -> None:
    """``ulimit -f``: the spool stops growing mid-capture; agentx says what was lost, exits 1."""
    out = tmp_path / "t.parquet"
    proc = capture_agent(out, upstream, confdir, agent_script(tmp_path, 12, 20_000), 64 * 1024)
    assert proc.returncode == 1, proc.stderr
    assert "NOT RECORDED" in proc.stderr and "File too large" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(read_trace(out)) < 12  # what reached the spool before the limit is the trace


def test_output_directory_is_refused_before_the_agent_runs(tmp_path: Path, confdir: Path) -> None:
    out = tmp_path / "adir"
    out.mkdir()
    marker = tmp_path / "ran"
    res = CliRunner().invoke(
        app,
        [
            "capture",
            "-o",
            str(out),
            "--confdir",
            str(confdir),
            "--no-status",
            "--",
            sys.executable,
            "-c",
            f"open({str(marker)!r}, 'w').close()",
        ],
    )
    assert res.exit_code == 1, res.output
    assert "is a directory" in res.stderr and res.stderr.count("\n") == 1
    assert not marker.exists()  # refused up front: the agent never ran
    assert list(tmp_path.glob("adir*")) == [out]


def test_compaction_failure_is_exit_1_and_keeps_the_spool(
    upstream: Upstream, tmp_path: Path, confdir: Path
) -> None:
    """The spool fits, the Parquet file does not (its temporary file hits the limit)."""
    out = tmp_path / "t.parquet"
    script = agent_script(tmp_path, 3, 200)
    proc = capture_agent(out, upstream, confdir, script, fsize=12 * 1024)
    assert proc.returncode == 1, proc.stderr
    assert "cannot write trace" in proc.stderr and "agentx recover" in proc.stderr
    assert spool_path(out).exists() and not out.exists()
    assert recover(out) == 3  # without the limit, the kept spool becomes the trace
