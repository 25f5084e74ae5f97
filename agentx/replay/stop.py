"""Stopping a run on SIGINT (Ctrl-C) or SIGTERM (Kubernetes, SLURM, ``timeout``) alike.

While the lanes run, the first signal stops them: requests in flight become ``cancelled`` rows,
the partial results are written, and the command exits 128 + the signal (130, 143). A signal
before the lanes start aborts at once (:class:`Interrupted`, the temporary files removed on the
way out); one while the results are being written is noted and the writing goes on; a second
signal aborts whatever is going on. ``--workers`` processes are told too, so a signal sent to the
parent alone (``kill``, ``timeout``, a pod's PID 1) stops them as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from types import FrameType
from typing import Any, TypeVar

from agentx.core.errors import Interrupted

T = TypeVar("T")
SIGNALS = (signal.SIGINT, signal.SIGTERM)
__all__ = ["SIGNALS", "Interrupted", "StopSignals", "stop_signals"]


class StopSignals:
    """The run's handler of SIGINT and SIGTERM (see the module docstring)."""

    def __init__(self) -> None:
        self.signum: int | None = None  # the first signal received
        self._abort: Callable[[], object] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._finishing = False
        self._preparing = False  # an event loop of the set-up (probe, cache reset) is running

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        first = self.signum is None
        if first:
            self.signum = signum
        if first and self._preparing and self._abort is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._abort)  # Interrupted once the loop is out
        elif first and self._abort is not None and self._loop is not None:
            name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
            print(f"agentx: {name}: stopping; writing partial results", file=sys.stderr)
            self._loop.call_soon_threadsafe(self._abort)
        elif first and self._finishing:
            print("agentx: interrupted; writing the results first", file=sys.stderr)
        else:
            raise Interrupted(signum)

    @contextlib.contextmanager
    def running(self, abort: Callable[[], None]) -> Iterator[None]:
        """While the lanes run: a signal calls ``abort`` on this event loop."""
        self._loop, self._abort = asyncio.get_running_loop(), abort
        try:
            if self.signum is not None:  # arrived while the lanes were being set up
                abort()
            yield
        finally:
            self._abort = self._loop = None
            self._finishing = True

    def run(self, main: Coroutine[Any, Any, T]) -> T:
        """``asyncio.run(main)`` for the set-up before the lanes (probing, resetting the cache):
        a signal cancels ``main`` and raises :class:`Interrupted` once the loop is closed, rather
        than raising inside whatever callback the loop happens to be running (where asyncio would
        log it as a traceback and the command would end on the wrong error)."""
        if self.signum is not None:
            main.close()
            raise Interrupted(self.signum)

        async def guarded() -> T:
            task = asyncio.current_task()
            assert task is not None
            self._loop, self._abort, self._preparing = asyncio.get_running_loop(), task.cancel, True
            try:
                return await main
            finally:
                self._abort = self._loop = None
                self._preparing = False

        try:
            result = asyncio.run(guarded())
        except asyncio.CancelledError:
            if self.signum is None:
                raise
            raise Interrupted(self.signum) from None
        if self.signum is not None:  # the signal came as ``main`` was returning
            raise Interrupted(self.signum)
        return result

    @property
    def exit_code(self) -> int | None:
        return None if self.signum is None else 128 + self.signum


@contextlib.contextmanager
def stop_signals() -> Iterator[StopSignals]:
    """Install a :class:`StopSignals` for SIGINT and SIGTERM (main thread only; elsewhere the
    process's own handling stays)."""
    stop = StopSignals()
    if threading.current_thread() is not threading.main_thread() or sys.platform == "win32":
        yield stop
        return
    old = {sig: signal.signal(sig, stop.handle) for sig in SIGNALS}
    try:
        yield stop
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
