"""``run_capture``: the ``agentx capture`` command, minus argument parsing.

With a command, agentx lives exactly as long as the agent (Ctrl-C goes to the agent, as in
``uv run``; SIGTERM is forwarded); without one, it runs until SIGINT or SIGTERM. The trace is
finalised either way. Processes the agent left running are reported (and, with
``--end-leftovers``, ended: :mod:`.leftovers`). A live status line shows requests, tokens, sessions and threads.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agentx.capture.recorder import CaptureStats, summary_line
from agentx.capture.runner.agent import AgentProcess, agent_env
from agentx.capture.runner.agent_config import AgentConfig, runs_gemini_cli
from agentx.capture.runner.capture import Capture
from agentx.capture.runner.config import (
    CaptureConfig,
    exposure_warning,
    resolve_upstream,
    upstream_credentials_warning,
)
from agentx.capture.runner.leftovers import (
    become_subreaper,
    descendants,
    end,
    leftovers,
    message,
    reap,
    stop_subreaping,
)


@dataclass(frozen=True, slots=True)
class CaptureResult:
    stats: CaptureStats
    out: Path
    exit_code: int  # the agent's, or 0 without a command

    @property
    def write_failure(self) -> str | None:
        """Why the trace is not everything that was captured (``None``: it is)."""
        s = self.stats
        if s.write_error is None and not s.lost:
            return None
        why = (s.write_error or "").removeprefix("agentx capture: ")
        lost = f"{s.lost} exchanges not recorded" if s.lost else "the trace was not written"
        return f"{lost}: {why}" if why else lost


def _status_text(cap: Capture, started: float) -> str:
    assert cap.recorder is not None
    s = cap.recorder.stats()
    up = resolve_upstream(cap.config.upstream) if cap.config.mode == "reverse" else "forward proxy"
    elapsed = int(time.monotonic() - started)
    line = (
        f"agentx capture {cap.url} → {up} · {s.requests} requests"
        f"{f' ({s.partial} partial)' if s.partial else ''}"
        f" · {s.prompt_tokens:,} in / {s.completion_tokens:,} out tokens"
        f" · {s.sessions} sessions · {s.threads} threads · {elapsed // 60}:{elapsed % 60:02d}"
    )
    if s.write_error:
        line += " · NOT RECORDING"
    return line


@contextlib.contextmanager
def _signals(handlers: dict[int, Callable[[int, Any], None]]) -> Iterator[None]:
    old = {sig: signal.signal(sig, h) for sig, h in handlers.items()}
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


def run_capture(
    config: CaptureConfig,
    *,
    console: Any = None,
    on_ready: Callable[[Capture], None] | None = None,
) -> CaptureResult:
    """Run ``agentx capture`` until the agent exits (or SIGINT/SIGTERM without one)."""
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    con = console or Console(stderr=True, highlight=False)

    def report(msg: str) -> None:
        con.print(Text(msg, style="bold red" if "NOT RECORDING" in msg else "yellow"))

    agent = AgentProcess(config.command) if config.command else None
    if agent is not None:
        agent.check()
    cap = Capture(config, report=report)
    cap.start()
    started = time.monotonic()
    stop = threading.Event()

    def on_term(signum: int, _frame: Any) -> None:
        if agent is not None and agent.running:
            agent.send_signal(signum)
        else:
            stop.set()

    def on_int(signum: int, _frame: Any) -> None:
        if agent is not None and agent.running:
            if not sys.stdin.isatty():  # no terminal delivered it to the agent: forward it
                agent.send_signal(signum)
        else:
            stop.set()

    upstream = (
        resolve_upstream(config.upstream) if config.mode == "reverse" else "(agent's own hosts)"
    )
    bound = (
        ""
        if config.listen_host == urlsplit(cap.url).hostname
        else f" (bound to {config.listen_host})"
    )
    con.print(
        Text(
            f"agentx capture: listening on {cap.url}{bound} ({config.mode}) → {upstream}; "
            f"writing {config.out}"
        )
    )
    exposed = exposure_warning(config, cap.proxy.port if cap.proxy else None)
    if exposed is not None:
        report(exposed)
    if config.mode == "forward":
        con.print(Text(f"agentx capture: CA certificate {cap.confdir / 'mitmproxy-ca-cert.pem'}"))
    warning = upstream_credentials_warning(config.upstream)
    if warning is not None:
        report(warning)
    exit_code = 0
    show_status = config.status if config.status is not None else con.is_terminal
    agent_config = AgentConfig(report)
    # the agent's orphans become agentx's children: what it left running is found at its exit
    reaping = agent is not None and become_subreaper()
    before: set[int] = set()
    pid: int | None = None
    try:
        with _signals({signal.SIGINT: on_int, signal.SIGTERM: on_term}):
            if on_ready is not None:
                on_ready(cap)
            if agent is not None:
                env = agent_env(config, cap.url, cap.confdir)
                if "GOOGLE_GEMINI_BASE_URL" in env and runs_gemini_cli(config.command):
                    env.update(agent_config.gemini_env(env))
                before = descendants() if reaping else set()
                pid = agent.start(env)
                assert cap.recorder is not None
                cap.recorder.agent_pid = pid
            live = (
                Live(Text(""), console=con, transient=True, auto_refresh=False)
                if show_status
                else None
            )
            with live if live is not None else contextlib.nullcontext():
                while not stop.is_set():
                    if agent is not None and agent.exited:
                        break
                    if reaping and pid is not None:
                        reap(before | {pid})
                    if live is not None:
                        live.update(Text(_status_text(cap, started), style="dim"), refresh=True)
                    stop.wait(0.5)
            if agent is not None:
                exit_code = agent.stop()
                left = leftovers(before) if reaping else []
                if left:
                    stuck = end(left) if config.end_leftovers else []
                    report(message(left, config.end_leftovers, stuck))
    finally:
        stats = cap.close()
        agent_config.cleanup()
        if reaping:
            stop_subreaping()
    con.print(Text(f"agentx capture: {summary_line(stats)} → {config.out}"))
    return CaptureResult(stats=stats, out=Path(config.out), exit_code=exit_code)
