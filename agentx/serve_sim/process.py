"""serve-sim in a child process: the target for a client that must not share its GIL.

The demo and sweeps measure the client; an in-process ``SimServer`` would compete with it for
the interpreter and show up as dispatch lag. ``SimProcess`` runs ``agentx serve-sim --port 0``
and reads the URL it prints on its first stdout line.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
import threading
from typing import IO, Self

from agentx.core.errors import AgentxError
from agentx.core.lifecycle import Running
from agentx.core.options import command_args
from agentx.serve_sim.config import SimConfig


def command_line(config: SimConfig) -> list[str]:
    """``agentx serve-sim`` arguments that reproduce ``config`` (only non-default values)."""
    return [sys.executable, "-m", "agentx", "serve-sim", *command_args(config, SimConfig())]


class SimProcess(Running):
    """``with SimProcess(SimConfig(port=0)) as sim: sim.url`` — a serve-sim child process."""

    def __init__(self, config: SimConfig | None = None, *, start_timeout_s: float = 60.0) -> None:
        self.config = (config or SimConfig(port=0)).validate()
        self.start_timeout_s = start_timeout_s
        self.url = ""
        self._proc: subprocess.Popen[str] | None = None
        self._log: IO[str] | None = None

    def start(self) -> Self:
        # stderr goes to a file, not a pipe: a pipe nobody drains would block the server
        self._log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - lives with the child
        self._proc = proc = subprocess.Popen(
            command_line(self.config), stdout=subprocess.PIPE, stderr=self._log, text=True
        )
        first: list[str] = []
        assert proc.stdout is not None
        stdout = proc.stdout
        reader = threading.Thread(target=lambda: first.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(self.start_timeout_s)
        url = first[0].strip() if first else ""
        if not url.startswith("http"):
            self.stop()
            self._log.seek(0)
            lines = self._log.read().strip().splitlines()
            detail = f": {lines[-1]}" if lines else ""
            raise AgentxError(f"serve-sim did not start{detail}")
        self.url = url
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            with contextlib.suppress(OSError):
                proc.stdout.close()
