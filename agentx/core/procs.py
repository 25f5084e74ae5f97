"""Child processes that do not outlive the process that started them.

A SIGKILLed parent (the OOM killer, a preempted pod, ``kill -9``) runs no clean-up code, so its
children must notice by themselves: on Linux the kernel sends them a signal of their choosing
when their parent dies (``PR_SET_PDEATHSIG``). A child that asks after its parent already died
would wait forever, so it checks its parent's pid right after asking. Elsewhere this is a no-op
(the parent's own stop paths still end its children). :func:`end_process` is those stop paths'
one bounded wait.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn: Callable[..., int] = libc.prctl
    except (OSError, AttributeError):
        return None
    return fn


def die_with_parent(parent_pid: int, signum: int = signal.SIGKILL) -> bool:
    """In a child: receive ``signum`` when the parent (``parent_pid``) dies, and at once when
    it is already gone. Whether the kernel took the request (Linux only)."""
    prctl = _prctl()
    if prctl is None or prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        return False
    if os.getppid() != parent_pid:  # the parent died before the request: no signal will come
        os.kill(os.getpid(), signum)
    return True


def name_process(name: str) -> None:
    """Name this process in ``ps`` and ``/proc/PID/comm`` (Linux; at most 15 characters): a
    run's children tell apart (a worker from a helper such as the theoretical pass)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/comm").write_text(name[:15])


def dies_with_this_process(signum: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` for ``subprocess.Popen``: the command receives ``signum`` when this
    process dies. ``None`` off Linux. libc is looked up here, before the fork: the child only
    calls it (little may run between a fork and an exec of a threaded process)."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:  # not yet the command: this process's handlers still stand
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


class Process(Protocol):
    """What :func:`end_process` needs of a child: a ``multiprocessing`` process has it, and so
    does :class:`agentx.replay.spawned.Spawned`."""

    def is_alive(self) -> bool: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...
    def join(self, timeout: float | None = None) -> None: ...


class SharedCount(Protocol):
    """A count one child advances and its parent reads (one writer: no lock)."""

    value: int


def end_process(p: Process, wait_s: float, *, terminate: bool = False) -> None:
    """Wait at most ``wait_s`` for ``p`` to end (after SIGTERM with ``terminate``), then SIGKILL
    it and wait again: every wait bounded, since a stopped process answers nothing else."""
    if terminate and p.is_alive():
        p.terminate()
    p.join(wait_s)
    if p.is_alive():
        with contextlib.suppress(OSError):
            p.kill()
        p.join(wait_s)
