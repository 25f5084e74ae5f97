"""Datasets: a trace may be a directory of Parquet trace files, read in name order as one.

A dataset can be appended to (add a file), shared file by file, and read in parallel. Every
file is a complete trace of its own (its delta-encoded rows extend rows of the same file only),
so any subset of the files is a valid trace too. ``agentx convert DIR -o OUT/`` writes one
file per source file; other writers name theirs ``part-00000.parquet``, ``part-00001.parquet``.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentx.errors import TraceError

SUFFIX = ".parquet"
SPOOL_SUFFIX = ".parquet.spool"


def is_dataset(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a directory holding agentx Parquet files (or a dead writer's spool)."""
    p = Path(path)
    if not p.is_dir():
        return False
    return any(_is_part(f) for f in p.iterdir())


def _is_part(f: Path) -> bool:
    if f.name.startswith("."):
        return False  # temporary files of writers
    return f.name.endswith((SUFFIX, SPOOL_SUFFIX)) and f.is_file()


def trace_files(path: str | os.PathLike[str]) -> list[Path]:
    """The one function that resolves a trace argument: a file is itself; a directory is its
    ``*.parquet`` files in name order (a file whose writer died, known by its spool, included:
    opening it recovers it). Raises :class:`TraceError` for a directory without any."""
    p = Path(path)
    if not p.is_dir():
        return [p]
    names: set[str] = set()
    for f in p.iterdir():
        if _is_part(f):
            names.add(f.name[: -len(".spool")] if f.name.endswith(SPOOL_SUFFIX) else f.name)
    if not names:
        raise TraceError(f"{p}: a directory without agentx *.parquet trace files")
    return [p / n for n in sorted(names)]


def part_name(index: int) -> str:
    return f"part-{index:05d}{SUFFIX}"
