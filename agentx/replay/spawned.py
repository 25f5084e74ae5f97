"""A function run in a fresh interpreter beside the run, without ``multiprocessing``.

``multiprocessing``'s ``spawn`` starts a third process for the first child of a run, its
resource tracker (~13 MiB of RSS for the run's whole life), to unlink the named semaphores of
its ``Event`` and ``Value``. The run's helpers (the theoretical pass, the trace's fingerprint)
need neither: :class:`Spawned` starts ``python -c`` itself, as ``spawn`` does (this
interpreter, its flags and ``sys.path``), and hands the child what they need as plain file
descriptors:

- the arguments, pickled, on a pipe whose write end the parent then keeps open: its end
  (:meth:`Spawned.set_done`, or the parent's death) is what the child's :attr:`Link.DONE`
  says;
- a counter in 8 bytes of shared memory (an unlinked file mapped by both), which the child
  advances (:attr:`Link.COUNTER`) and the parent reads (:attr:`Spawned.count`);
- optionally a pipe for the child's one answer (``answer=True``: a
  :class:`multiprocessing.connection.Connection` at each end, which starts no tracker:
  :attr:`Link.ANSWER`, :attr:`Spawned.answer`).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import mmap
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from enum import StrEnum
from multiprocessing.connection import Connection
from typing import Any, BinaryIO, ClassVar

from agentx.core.procs import end_process

# The child's bootstrap: stdlib only until ``sys.path`` is the parent's.
_BOOT = (
    "import os, pickle, sys; f = os.fdopen({fd}, 'rb', closefd=False); "
    "sys.path[:] = pickle.load(f); "
    "from agentx.replay.spawned import child_main; child_main(f)"
)


class Counter:
    """8 bytes of memory shared by both processes, as a signed 64-bit integer (an aligned
    store: a reader never sees half of one)."""

    def __init__(self, fd: int) -> None:
        self._map = mmap.mmap(fd, 8)
        self._value = ctypes.c_int64.from_buffer(self._map)

    @property
    def value(self) -> int:
        return int(self._value.value)

    @value.setter
    def value(self, n: int) -> None:
        self._value.value = n

    def close(self) -> None:
        del self._value  # the map cannot close while a ctypes view of it lives
        with contextlib.suppress(BufferError):
            self._map.close()


class Link(StrEnum):
    """What stands, among a :class:`Spawned` target's arguments, for what the child is handed:
    a callable saying whether the parent is done (or died), the shared counter (its ``value``:
    :class:`agentx.core.procs.SharedCount`), the answer's connection."""

    DONE = "done"
    COUNTER = "counter"
    ANSWER = "answer"


def _done(fd: int) -> bool:
    """Whether the pipe's write end is closed: the arguments were read off it and nothing
    else is written to it, so it is readable only at its end."""
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


def child_main(args_file: BinaryIO) -> None:
    """The child's entry (:data:`_BOOT`): the rest of the arguments, then the target."""
    module, name, done_fd, count_fd, answer_fd, args = pickle.load(args_file)
    handed = {
        Link.DONE: functools.partial(_done, done_fd),
        Link.COUNTER: Counter(count_fd),
        Link.ANSWER: Connection(answer_fd, readable=False) if answer_fd is not None else None,
    }
    target = getattr(importlib.import_module(module), name)
    target(*(handed[a] if isinstance(a, Link) else a for a in args))


BRIEF_WAIT_S = 15.0  # a deferred child starts at the latest this long after it was asked for
_POLL_S = 0.05


class Spawned:
    """``module.name(*args)`` in a fresh interpreter, each :class:`Link` among ``args`` the
    child's end of it. ``stderr`` is the parent's; stdin and stdout are not the child's.

    A ``brief`` child (a job of seconds at the run's start: the trace's fingerprint) is one a
    ``deferred`` child waits for before it starts, at most ``BRIEF_WAIT_S``: the two are not
    at their imports' and first data's peak together. Meanwhile the deferred one counts as
    alive, and what is sent to it waits in its pipe."""

    _brief: ClassVar[weakref.WeakSet[Spawned]] = weakref.WeakSet()

    def __init__(
        self,
        module: str,
        name: str,
        args: tuple[Any, ...],
        *,
        answer: bool = False,
        brief: bool = False,
        deferred: bool = False,
    ) -> None:
        done_r, done_w = os.pipe()
        with tempfile.TemporaryFile() as counter_file:
            counter_file.truncate(8)
            count_fd = os.dup(counter_file.fileno())
        answer_r, answer_w = os.pipe() if answer else (None, None)
        self._child_fds: list[int] = [
            done_r,
            count_fd,
            *([answer_w] if answer_w is not None else []),
        ]
        self._done: int | None = done_w
        self._proc: subprocess.Popen[bytes] | None = None
        self._failed = False  # it could not start
        self._closed = False  # ended before it started: it never will
        self._lock = threading.Lock()
        self._started = threading.Event()
        try:
            self._counter = Counter(count_fd)
            with os.fdopen(os.dup(done_w), "wb") as f:  # small: fits the pipe's buffer
                pickle.dump(list(sys.path), f)
                pickle.dump((module, name, done_r, count_fd, answer_w, args), f)
            self._cmd = [
                sys.executable,
                *subprocess._args_from_interpreter_flags(),  # type: ignore[attr-defined]
                "-c",
                _BOOT.format(fd=done_r),
            ]
            waits = [c for c in list(Spawned._brief) if c.is_alive()] if deferred else []
            if not waits:
                self._start()
        except BaseException:
            self._close_fds()
            for fd in (done_w, *([answer_r] if answer_r is not None else [])):
                os.close(fd)
            raise
        self.answer = Connection(answer_r, writable=False) if answer_r is not None else None
        if waits:
            threading.Thread(
                target=self._start_after, args=(waits,), name="agentx-spawn", daemon=True
            ).start()
        if brief:
            Spawned._brief.add(self)

    def _start(self) -> None:
        try:
            self._proc = subprocess.Popen(
                self._cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                pass_fds=self._child_fds,
            )
        finally:
            self._close_fds()
            self._started.set()

    def _start_after(self, waits: list[Spawned]) -> None:
        deadline = time.monotonic() + BRIEF_WAIT_S
        while any(c.is_alive() for c in waits) and time.monotonic() < deadline:
            time.sleep(_POLL_S)
        with self._lock:
            if self._closed:
                return
            try:
                self._start()
            except OSError:
                self._failed = True

    def _close_fds(self) -> None:
        for fd in self._child_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._child_fds = []

    @property
    def pid(self) -> int | None:
        """``None`` until it started."""
        return None if self._proc is None else self._proc.pid

    @property
    def count(self) -> int:
        """What the child counted so far (:attr:`Link.COUNTER`)."""
        return self._counter.value

    @property
    def exitcode(self) -> int | None:
        if self._proc is None:
            return 1 if self._failed or self._closed else None
        return self._proc.poll()

    def is_alive(self) -> bool:
        return self.exitcode is None

    def set_done(self) -> None:
        """Tell the child the parent is done (:attr:`Link.DONE`)."""
        if self._done is not None:
            os.close(self._done)
            self._done = None

    def join(self, timeout: float | None = None) -> None:
        t0 = time.monotonic()
        self._started.wait(timeout)
        if self._proc is not None:
            left = None if timeout is None else max(0.0, timeout - (time.monotonic() - t0))
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(left)

    def terminate(self) -> None:
        if self._proc is not None:
            with contextlib.suppress(OSError):
                self._proc.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self._proc is not None:
            with contextlib.suppress(OSError):
                self._proc.kill()

    def end(self, wait_s: float, *, terminate: bool = False) -> None:
        """:func:`agentx.core.procs.end_process` (every wait bounded), after which one not
        started yet never starts. The answer's connection stays the caller's to close."""
        with self._lock:
            if self._proc is None:
                self._closed = True
                self._close_fds()
        if self._proc is not None:
            end_process(self, wait_s, terminate=terminate)
        self.set_done()
