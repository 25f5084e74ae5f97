"""The write-ahead spool: its line format and how it is read back.

A spool is ``<trace>.spool``: a header line (:data:`SPOOL_MAGIC`, trace id, metadata, writer),
then one JSON line per exchange (:func:`row_line`: null columns dropped, block ids as runs when
shorter, repeated tools/system/params text as a reference to the row that first carried it:
:class:`SpoolTexts`), and amendment lines (``{"amend": request_id, "flags": [...]}``) that add
flags to a row already spooled. :func:`read_spool` reads it back, dropping a torn last line and
counting what is damaged. :mod:`agentx.store.writer` writes spools and compacts them to Parquet;
the writer holds an exclusive ``flock`` on its spool (:func:`try_lock`) for its whole life.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from agentx.core.errors import TraceError
from agentx.core.progress import Progress
from agentx.store.codec import Row
from agentx.store.hashdelta import from_runs, to_runs
from agentx.store.schema import COLUMNS, ID_LIST_COLUMNS

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: fall back to the writer's pid
    fcntl = None  # type: ignore[assignment]

SPOOL_MAGIC = "agentx.spool/1"
AMEND = "amend"  # key of an amendment line: {"amend": request_id, "flags": [...]}
_AMEND_PREFIX = b'{"' + AMEND.encode() + b'"'


def spool_path(path: Path) -> Path:
    return path.with_name(path.name + ".spool")


def try_lock(fh: IO[bytes]) -> bool:
    """Take the spool's exclusive lock without waiting; False when another writer holds it."""
    if fcntl is None:  # pragma: no cover
        return True
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # no lock support here (some network filesystems): assume no other writer
        return True
    return True


# Columns whose value repeats verbatim across a session's rows (tools, system prompt, params).
# Parquet's dictionary encoding stores each distinct value once; the spool does the same by
# writing a repeated value as a reference to the row that first carried it.
REPEATED_COLUMNS = ("request_tools", "request_system", "request_params", "request_key_order")
_REF = "@"  # suffix of the reference key
_MIN_REF_CHARS = 256  # shorter values are cheaper written again


class SpoolTexts:
    """Replaces a repeated value by ``{column@: digest}`` (writer) and restores it (reader).
    Memory: one digest per distinct value written (writer), one text per distinct value (reader)."""

    def __init__(self) -> None:
        self._seen: set[bytes] = set()
        self._texts: dict[str, str] = {}

    def pack(self, row: Row) -> Row:
        for col in REPEATED_COLUMNS:
            text = row.get(col)
            if isinstance(text, str) and len(text) >= _MIN_REF_CHARS:
                digest = hashlib.blake2b(
                    text.encode("utf-8", "surrogatepass"), digest_size=16
                ).digest()
                if digest in self._seen:
                    row[col] = None
                    row[col + _REF] = digest.hex()
                else:
                    self._seen.add(digest)
        return row

    def unpack(self, row: Row) -> Row:
        for col in REPEATED_COLUMNS:
            ref = row.pop(col + _REF, None)
            text = row.get(col)
            if ref is not None:
                row[col] = self._texts[ref]
            elif isinstance(text, str) and len(text) >= _MIN_REF_CHARS:
                digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16)
                self._texts[digest.hexdigest()] = text
        return row


_RUNS = "~"  # suffix of an id list spelled as runs of consecutive ids


def row_line(row: Row) -> bytes:
    """One spool line: the row without its null columns, block ids as runs when shorter."""
    packed: Row = {}
    for k, v in row.items():
        if v is None:
            continue
        if k in ID_LIST_COLUMNS:
            runs = to_runs(v)
            if runs is not None:
                packed[k + _RUNS] = runs
                continue
        packed[k] = v
    try:
        return orjson.dumps(packed) + b"\n"
    except TypeError:  # a free-text field with a lone surrogate: not valid UTF-8 for Parquet
        clean = {k: _valid_utf8(v) if isinstance(v, str) else v for k, v in packed.items()}
        return orjson.dumps(clean) + b"\n"


def line_row(packed: Row) -> Row:
    """The row of a decoded spool line (every column; the inverse of :func:`row_line`)."""
    for col in ID_LIST_COLUMNS:
        runs = packed.pop(col + _RUNS, None)
        if runs is not None:
            packed[col] = from_runs(runs)
    return {c: packed.get(c) for c in COLUMNS} | {
        k: v for k, v in packed.items() if k.endswith(_REF)
    }


def _valid_utf8(text: str) -> str:
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def spool_header(spool: Path) -> dict[str, Any]:
    """The spool's first line, or ``{}`` when it cannot be read."""
    try:
        with open(spool, "rb") as fh:
            header = orjson.loads(fh.readline())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return header if isinstance(header, dict) else {}


@dataclass(slots=True)
class SpoolRows:
    """The rows of a spool, read once; what could not be read is counted as it goes."""

    rows: Iterator[Row]
    damaged: int = 0  # lines that are not a row (garbled on disk)
    orphaned: int = 0  # rows that extend a damaged one (their conversation prefix is gone)


def read_spool(
    fh: IO[bytes], spool: Path, progress: Progress | None = None
) -> tuple[dict[str, Any], SpoolRows]:
    """The spool's header and its rows. A torn last line (killed writer) is dropped; a damaged
    line is skipped and counted, and so is every row that needs it to be decoded. ``progress``
    advances in bytes."""
    prog = progress or Progress()
    fh.seek(0)
    try:
        header = orjson.loads(fh.readline())
    except orjson.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("spool") != SPOOL_MAGIC:
        raise TraceError(f"{spool}: not an agentx spool (bad header)")
    start = fh.tell()
    amends = _amendments(fh)
    fh.seek(start)
    out = SpoolRows(iter(()))

    def rows() -> Iterator[Row]:
        texts = SpoolTexts()
        seen: set[str] = set()
        for line in fh:
            prog.advance(len(line))
            if not line.endswith(b"\n"):
                return  # torn write of the exchange in flight
            if line.startswith(_AMEND_PREFIX):
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                row = None
            if not isinstance(row, dict) or not isinstance(row.get("request_id"), str):
                out.damaged += 1
                continue
            try:
                unpacked = line_row(row)
            except (TypeError, ValueError, IndexError):  # garbled block-id runs
                out.damaged += 1
                continue
            try:
                for key in ("conversation_base_id", "hash_ids_base_id"):
                    base = unpacked.get(key)
                    if base is not None and base not in seen:
                        raise KeyError(base)
                row = texts.unpack(unpacked)
            except KeyError:  # its base row, or the row that carried its tools, was damaged
                out.orphaned += 1
                continue
            extra = amends.get(row["request_id"])
            if extra:
                row["flags"] = list(dict.fromkeys([*row["flags"], *extra]))
            seen.add(row["request_id"])
            yield row

    out.rows = rows()
    return header, out


def _amendments(fh: IO[bytes]) -> dict[str, list[str]]:
    """Every amendment line of the spool: request id -> flags to add (few; read first)."""
    out: dict[str, list[str]] = {}
    for line in fh:
        if line.startswith(_AMEND_PREFIX) and line.endswith(b"\n"):
            try:
                amend = orjson.loads(line)
                out.setdefault(str(amend[AMEND]), []).extend(str(f) for f in amend["flags"])
            except (orjson.JSONDecodeError, KeyError, TypeError):
                continue
    return out
