"""README's "Use" commands run as written against README's own serve-sim, in an empty directory.

The block is read from README.md itself, so a command edited there is the command tested. What
cannot run here is left out and named: a real agent (``-- claude``), a remote server
(``http://vllm...``), a corpus directory the README only describes. The server is the README's
``agentx serve-sim`` line with ``--fast`` (instant answers: the commands, flags and names are
what is checked, not the model's latency), a ``--duration`` is cut to a few seconds and a replay
without ``--time-scale`` sends back to back (the example's recorded think time is minutes).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from agentx.core.examples import example_path

ROOT = Path(__file__).parents[1]
NEEDS_ELSEWHERE = ("-- claude", "http://vllm", "corpus/", "corpus-json/")
DURATION_S = "6"


def readme_use_block() -> list[str]:
    """The commands of README's first shell block under "## Use", continuations joined and
    comments dropped."""
    text = (ROOT / "README.md").read_text()
    use = text[text.index("## Use") :]
    block = use[use.index("```sh") + len("```sh") : use.index("```", use.index("```sh") + 5)]
    commands, current = [], ""
    for line in block.splitlines():
        line = re.sub(r"\s+#\s.*$", "", line).rstrip()
        if not line:
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        commands.append((current + line).strip())
        current = ""
    return commands


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _agentx(args: list[str], cwd: Path, timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, "-m", "agentx", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def test_the_readme_use_commands_succeed_against_its_serve_sim(tmp_path: Path) -> None:
    commands = readme_use_block()
    server = next(c for c in commands if c.startswith("agentx serve-sim"))
    port = _free_port()
    argv = shlex.split(server.rstrip("&").strip())[1:]
    argv = [a if a != "8000" else str(port) for a in argv]
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentx", *argv, "--fast"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "serve-sim did not start"
            time.sleep(0.3)
        ran, left_out = [], []
        for command in commands:
            if command == server or not command.startswith("agentx "):
                continue
            if any(mark in command for mark in NEEDS_ELSEWHERE):
                left_out.append(command)
                if "capture" in command:  # what the capture would have written
                    out = re.search(r"(?:-o|--out|--output) (\S+)", command)
                    assert out is not None
                    shutil.copy(example_path("example"), tmp_path / out.group(1))
                continue
            args = shlex.split(command.replace("http://127.0.0.1:8000", url))[1:]
            if "--duration" in args:
                args[args.index("--duration") + 1] = DURATION_S
            if args[0] in ("replay", "sweep") and "--time-scale" not in args:
                args += ["--time-scale", "0"]  # the recorded think time is minutes
            result = _agentx(args, tmp_path)
            assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
            ran.append(command)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert len(ran) >= 12, ran  # most of the block runs here
    assert all("capture" in c or "vllm" in c for c in left_out), left_out
