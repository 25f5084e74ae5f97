"""Processes the launched agent left running when it exited (cline's hub daemon): found, told,
and with ``--end-leftovers`` ended.

On Linux agentx makes itself a *child subreaper* before it launches the agent, so a process the
agent started and then orphaned (a daemon that forked away, ``setsid`` or not) is re-parented to
agentx instead of to init: once the agent has exited, its leftovers are agentx's descendants
that were not there before the launch. Elsewhere, or where ``prctl`` fails, nothing is found.
Orphans that exit while the capture runs are reaped (they are agentx's children now).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import time
from dataclasses import dataclass

PR_SET_CHILD_SUBREAPER = 36
_CMDLINE_CHARS = 160


@dataclass(frozen=True, slots=True)
class Leftover:
    pid: int
    cmdline: str  # shortened, for the message only


def become_subreaper() -> bool:
    """Make orphaned descendants agentx's children (Linux); whether it worked."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def stop_subreaping() -> None:
    """Orphans go to init again (agentx may live on: the tests, a library caller)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _parents() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state letter) of every visible process."""
    out: dict[int, tuple[int, str]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
            fields = stat[stat.rindex(b")") + 2 :].split()
            out[int(name)] = (int(fields[1]), fields[0].decode())
        except (OSError, ValueError, IndexError):
            continue
    return out


def descendants(root: int | None = None) -> set[int]:
    """The living (not zombie) descendants of ``root`` (default: this process)."""
    root = os.getpid() if root is None else root
    table = _parents()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _state) in table.items():
        children.setdefault(ppid, []).append(pid)
    out: set[int] = set()
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        if pid in out:
            continue
        if table[pid][1] != "Z":
            out.add(pid)
        stack.extend(children.get(pid, []))
    return out


def reap(keep: set[int]) -> None:
    """Collect this process's exited children other than ``keep`` (the agent: its
    ``subprocess.Popen`` collects it)."""
    me = os.getpid()
    for pid, (ppid, state) in _parents().items():
        if ppid == me and state == "Z" and pid not in keep:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read(4096)
    except OSError:
        return "?"
    text = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip() or "?"
    return text if len(text) <= _CMDLINE_CHARS else text[: _CMDLINE_CHARS - 1] + "…"


def leftovers(before: set[int]) -> list[Leftover]:
    """agentx's living descendants that were not there before the agent's launch."""
    return [Leftover(pid, _cmdline(pid)) for pid in sorted(descendants() - before)]


def end(procs: list[Leftover], grace_s: float = 3.0) -> list[Leftover]:
    """SIGTERM each, SIGKILL what is still there after ``grace_s``; those that would not die."""
    for p in procs:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    alive = procs
    while alive and time.monotonic() < deadline:
        reap(set())
        alive = [p for p in alive if p.pid in descendants()]
        if alive:
            time.sleep(0.05)
    for p in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p.pid, signal.SIGKILL)
    time.sleep(0.05)
    reap(set())
    return [p for p in alive if p.pid in descendants()]


def message(procs: list[Leftover], ended: bool, stuck: list[Leftover]) -> str:
    """What the user is told of the processes the agent left running."""
    n = len(procs)
    listed = "; ".join(f"{p.pid} {p.cmdline}" for p in procs)
    what = f"{n} process{'es' if n != 1 else ''}"
    if not ended:
        return (
            f"agentx capture: the agent left {what} running: {listed} "
            "(--end-leftovers ends them with the capture)"
        )
    text = f"agentx capture: ended {what} the agent left running: {listed}"
    if stuck:
        text += f"; still running: {', '.join(str(p.pid) for p in stuck)}"
    return text
