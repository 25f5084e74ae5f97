"""The trace's fingerprint (:func:`agentx.formats.fingerprint.trace_fingerprint`), computed
beside the lanes: hashing a 700-session corpus takes seconds of CPU, which the first request
does not wait for.

A child process (:func:`agentx.formats.fingerprint.fingerprint_child`, in a fresh interpreter:
:class:`agentx.replay.spawned.Spawned`) hashes the trace while
the lanes run; a thread of the run writes the value into its ``run.json`` as soon as it is known
(atomically: a recovery reads the set-up with it or without it, never half of it); the finish
waits for it to put it in ``summary.json``, for as long as the hash progresses. A process, not a
thread: the hash holds the GIL, which the lanes' timestamps must not wait for. It is a batch
job to the scheduler (a lane woken by its socket preempts it) and dies with the run. A run killed before the value was known leaves
``trace_fingerprint`` null in ``run.json`` with no warning about it; ``agentx recover`` then
hashes the trace if it is still there (:func:`fingerprint_of`), else says it is unknown.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

import orjson

from agentx.core.errors import AgentxError
from agentx.core.outputs import write_atomic
from agentx.formats.fingerprint import (
    UNKNOWN,
    fingerprint_child,
    trace_fingerprint,
)
from agentx.replay.spawned import Link, Spawned
from agentx.results.runstart import RunStart

STALL_S = 60.0  # the hash made no progress for this long: stopped or stuck, given up
CLOSE_S = 5.0  # the child ends within this once terminated (or is killed)
WATCH_S = 0.25  # how often the waits look at the child's progress, or the run's end

Fingerprint = tuple[str | None, tuple[str, ...]]  # the value, or the warning why it is unknown


def fingerprint_of(trace: Path) -> Fingerprint:
    """The trace's fingerprint, or a warning why it is unknown (a comparison then cannot
    tell whether two runs replayed the same trace)."""
    try:
        return trace_fingerprint(trace), ()
    except AgentxError as exc:
        return None, (f"{UNKNOWN} ({exc})",)


def with_fingerprint(start: RunStart, fingerprint: Fingerprint) -> RunStart:
    """``start`` with the fingerprint known (or the warning why it is not)."""
    value, unknown = fingerprint
    return dataclasses.replace(start, trace_fingerprint=value, warnings=(*start.warnings, *unknown))


def fingerprint_known(start: RunStart) -> bool:
    """Whether the run learnt its fingerprint, or why it is unknown, before it ended."""
    return start.trace_fingerprint is not None or any(w.startswith(UNKNOWN) for w in start.warnings)


def recovered_fingerprint(start: RunStart) -> Fingerprint:
    """The fingerprint of a killed run that did not learn it: the trace hashed now, if it is
    still there and no file of it changed since the run started; else the warning why not."""
    trace = Path(start.trace)
    changed = [
        f for f in ([trace] if trace.is_file() else trace.rglob("*")) if _changed_since(f, start)
    ]
    if changed:
        return None, (
            f"{UNKNOWN}: the run was killed before it was known, and the trace changed since "
            f"the run started ({changed[0]})",
        )
    value, unknown = fingerprint_of(trace)
    if value is None:
        why = unknown[0].removeprefix(UNKNOWN).strip()
        return None, (
            f"{UNKNOWN}: the run was killed before it was known, and the trace cannot be read "
            f"now {why}",
        )
    return value, ()


def _changed_since(f: Path, start: RunStart) -> bool:
    try:
        return f.is_file() and f.stat().st_mtime_ns > start.anchor_wall_ns
    except OSError:
        return False


class FingerprintJob:
    """The child hashing the trace of a run whose set-up is ``run_json``, and the thread of
    this process that writes the value there when it comes (it waits on a pipe: it holds no
    GIL meanwhile)."""

    def __init__(self, trace: Path, run_json: Path) -> None:
        # a fresh interpreter, no multiprocessing: no resource tracker beside the run
        args = (str(trace), Link.ANSWER, Link.COUNTER, os.getpid())
        module = fingerprint_child.__module__
        self._proc = Spawned(module, "fingerprint_child", args, answer=True, brief=True)
        recv = self._proc.answer
        if recv is None:  # cannot happen: asked for
            raise RuntimeError("the fingerprint's child has no answer pipe")
        self._value: Fingerprint | None = None
        self._closing = threading.Event()
        self._known = threading.Event()
        self._watcher = threading.Thread(
            target=self._watch, args=(recv, run_json), name="agentx-fingerprint", daemon=True
        )
        self._watcher.start()

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    def _watch(self, recv: Connection, run_json: Path) -> None:
        try:
            while not self._closing.is_set():
                if not recv.poll(WATCH_S):
                    continue
                try:
                    value, unknown = recv.recv()
                    found: Fingerprint = (value, tuple(unknown))
                except (EOFError, OSError):  # the child died without answering
                    if self._closing.is_set():
                        return
                    found = (None, (f"{UNKNOWN} (its computation failed)",))
                # the spool goes only once this thread is joined: run.json is there
                with contextlib.suppress(OSError, AgentxError, orjson.JSONDecodeError):
                    record_fingerprint(run_json, found)
                self._value = found
                return
        finally:
            recv.close()
            self._known.set()

    def result(self, stall_s: float = STALL_S) -> Fingerprint:
        """The fingerprint, once the child has it; a warning instead when the child failed,
        or made no progress for ``stall_s`` (stopped, stuck: the wait is bounded) and was
        ended."""
        seen, since = self._proc.count, time.monotonic()
        while not self._known.wait(WATCH_S):
            done = self._proc.count
            if done != seen:
                seen, since = done, time.monotonic()
            elif time.monotonic() - since > stall_s:
                break
        self.close()
        if self._value is None:
            self._value = (None, (f"{UNKNOWN} (its hash made no progress for {stall_s:g} s)",))
        return self._value

    def close(self) -> None:
        """Stop the child if it still runs (the run failed, was stopped, gave up on it) and
        the thread. Every wait bounded: a stopped child does not answer SIGTERM."""
        self._closing.set()
        self._proc.end(CLOSE_S, terminate=True)
        self._watcher.join(CLOSE_S)


def record_fingerprint(run_json: Path, fingerprint: Fingerprint) -> None:
    """Rewrite the set-up ``run_json`` with the fingerprint (or the warning), atomically."""
    start = RunStart.from_json(orjson.loads(run_json.read_bytes()))
    data = orjson.dumps(with_fingerprint(start, fingerprint).to_json(), option=orjson.OPT_INDENT_2)
    write_atomic(run_json, data + b"\n", force=True)
