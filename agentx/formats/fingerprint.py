"""``trace_fingerprint``: the sha256 that names a trace's content, for any format a replay
reads. An agentx trace is hashed by its rows (:func:`agentx.store.fingerprint.rows_sha256`:
the same rows in other files give the same value); the other formats by their files' bytes, in
the order they are read (a directory's files by name). :func:`fingerprint_child` computes it in
a child process, for a replay that does not wait for it."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection

from agentx.core.errors import AgentxError, TraceError
from agentx.core.procs import SharedCount, die_with_parent, name_process

CHUNK_BYTES = 1 << 20
FINGERPRINT_PROCESS_NAME = "agentx-print"  # the child's name in /proc/PID/comm
UNKNOWN = "the trace's fingerprint is unknown"  # how every warning about it starts


def trace_fingerprint(
    path: str | os.PathLike[str], progress: Callable[[int], None] | None = None
) -> str:
    """The hex sha256 of a trace argument's content (see the module); ``progress`` is told each
    step's work (rows of an agentx trace, else bytes) as it is hashed."""
    from agentx.formats import resolve_trace

    kind, local = resolve_trace(path)
    if kind == "agentx":
        from agentx.store.fingerprint import rows_sha256

        return rows_sha256(local, progress)
    files = sorted(f for f in local.rglob("*") if f.is_file()) if local.is_dir() else [local]
    digest = hashlib.sha256()
    for f in files:
        if f.is_dir() or f.name.startswith("."):
            continue
        digest.update(f.relative_to(local).as_posix().encode() if local.is_dir() else b"")
        digest.update(b"\0")
        try:
            with open(f, "rb") as fh:
                while chunk := fh.read(CHUNK_BYTES):
                    digest.update(chunk)
                    if progress is not None:
                        progress(len(chunk))
        except OSError as exc:
            raise TraceError(f"{f}: cannot read ({exc.strerror or exc})") from None
    return digest.hexdigest()


def short(fingerprint: str | None) -> str:
    """A fingerprint as messages show it: its first 12 hex digits (``unknown`` when absent)."""
    return "unknown" if fingerprint is None else fingerprint[:12]


def fingerprint_child(trace: str, send: Connection, done: SharedCount, parent_pid: int) -> None:
    """A child process's entry (started by the run that needs the value off its own path): hash ``trace``, counting the work done in ``done`` (the parent's wait is
    bounded by it), and send ``(fingerprint, warnings)``. It lives in this light module so the
    child imports little more than the hash needs."""
    die_with_parent(parent_pid)  # a SIGKILLed run runs no clean-up
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C: the parent ends it
    name_process(FINGERPRINT_PROCESS_NAME)
    with contextlib.suppress(OSError, AttributeError):  # Linux: a CPU-bound batch job
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))

    def advance(n: int) -> None:
        done.value += n

    value: str | None = None
    unknown: tuple[str, ...] = ()
    try:
        value = trace_fingerprint(trace, advance)
    except AgentxError as exc:
        unknown = (f"{UNKNOWN} ({exc})",)
    except Exception as exc:  # a warning in the results, not a traceback on the user's terminal
        unknown = (f"{UNKNOWN} ({type(exc).__name__}: {exc})",)
    send.send((value, unknown))
    send.close()
