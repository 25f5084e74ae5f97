"""``trace_fingerprint``: the sha256 that names a trace's content, for any format a replay
reads. An agentx trace is hashed by its rows (:func:`agentx.store.fingerprint.rows_sha256`:
the same rows in other files give the same value); the other formats by their files' bytes, in
the order they are read (a directory's files by name)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

from agentx.core.errors import TraceError

CHUNK_BYTES = 1 << 20


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
