"""Trace formats: detect what a path holds and load it as exchanges.

- ``agentx``: a Parquet trace of format v1, v1.1 or v1.2, or a dataset directory of them (read
  through :mod:`agentx.store`, recovered from its spool if its writer died), or a directory
  ``agentx dataset pack`` wrote (its default config),
- ``weka``: a Weka JSON trace file, or a directory of them (:mod:`agentx.formats.weka`),
- ``mooncake``: a Mooncake JSONL file (:mod:`agentx.formats.mooncake`),
- ``hf``: Weka traces one per row: a ``.jsonl`` file, a Parquet file of rows, a Hugging Face
  dataset directory, or ``hf://datasets/<owner>/<name>`` (:mod:`agentx.formats.hf`).

Weka and Mooncake rows are *hash-only*: ``request`` is ``{}`` (or the ``text_input``) and the
prompt is described by ``hash_ids`` of ``hash_block_size``-token blocks and
``usage.prompt_tokens``.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import orjson

from agentx.core.errors import FormatError, TraceError
from agentx.core.models import Exchange
from agentx.core.outputs import check_not_results
from agentx.core.progress import Progress

if TYPE_CHECKING:
    from agentx.store.blockcols import BlockFile

Format = Literal["agentx", "weka", "mooncake", "hf"]
FORMATS: tuple[Format, ...] = ("agentx", "weka", "mooncake", "hf")
FORMAT_NAMES: dict[Format, str] = {  # in words, for messages
    "agentx": "agentx Parquet",
    "weka": "Weka JSON",
    "mooncake": "Mooncake JSONL",
    "hf": "Weka traces one per row",
}
_HF_COLUMNS = frozenset({"requests", "block_size"})
PARQUET_MAGIC = b"PAR1"
_MOONCAKE_KEYS = ("input_length", "output_length", "hash_ids", "timestamp", "text_input")


def detect_format(path: str | os.PathLike[str]) -> Format:
    """What ``path`` holds, from its content (the suffix only breaks ties).

    Raises :class:`TraceError` for a missing or empty path or for agentx's own results (a
    results or sweep directory, or a file of one), and :class:`FormatError` for content that is
    none of the formats.
    """
    from agentx.formats.hf import PREFERRED, is_hf_url, looks_like_dataset

    if is_hf_url(path):
        return "hf"
    p = Path(path)
    check_not_results(p)
    if p.is_dir():
        from agentx.store.dataset import is_dataset, packed_manifest

        if packed_manifest(p) is not None:
            return "agentx"  # agentx dataset pack: its default config's agentx files
        if (p / PREFERRED).is_file():
            return "hf"
        weka = any(f.suffix == ".json" and not f.name.startswith(".") for f in p.iterdir())
        if is_dataset(p):  # agentx trace files (not a Hugging Face dataset's Parquet rows)
            if weka:
                raise FormatError(str(p), "a directory mixing Weka *.json and *.parquet files")
            return "agentx"
        if weka:
            return "weka"
        if looks_like_dataset(p):
            return "hf"
        raise FormatError(
            str(p),
            "a directory, but without Weka *.json files, agentx *.parquet files or a dataset's "
            "*.jsonl/*.parquet",
        )
    if not p.exists():
        if p.with_name(p.name + ".spool").exists():
            return "agentx"  # a writer died before compacting: opening recovers it
        raise TraceError(f"{p}: no such file")
    try:
        with open(p, "rb") as fh:
            head = fh.read(4)
            if head == PARQUET_MAGIC:
                return _parquet_kind(p)
            fh.seek(0)
            first = fh.readline()
    except OSError as exc:
        raise TraceError(f"{p}: cannot read ({exc.strerror or exc})") from None
    if not head:
        raise TraceError(f"{p}: empty file")
    text = first.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"{"):
        try:
            obj = orjson.loads(first)
        except orjson.JSONDecodeError:
            obj = None  # a pretty-printed document spans lines: a Weka file, or nothing
        if isinstance(obj, dict):
            if "requests" in obj:
                return "hf" if p.suffix == ".jsonl" else "weka"
            if any(k in obj for k in _MOONCAKE_KEYS):
                return "mooncake"
        elif p.suffix != ".jsonl":
            return "weka"
    if p.suffix == ".parquet":
        return "agentx"  # let the store say what is wrong with it
    raise FormatError(
        str(p),
        "unrecognised format (expected an agentx Parquet trace, Weka JSON or Mooncake JSONL)",
    )


def resolve_trace(path: str | os.PathLike[str]) -> tuple[Format, Path]:
    """What every reader of a trace argument opens: its format and the local path that holds
    it. An ``hf://datasets/...`` repository is downloaded first and its snapshot detected as
    any directory is (a packed agentx dataset reads as its default config's agentx files, a
    dataset of Weka rows as ``hf``)."""
    from agentx.formats.hf import download, is_hf_url

    if is_hf_url(path):
        local = download(path)
        return detect_format(local), local
    return detect_format(path), Path(path)


def load_exchanges(
    path: str | os.PathLike[str],
    *,
    shared: bool = False,
    columns: Collection[str] | None = None,
    progress: Progress | None = None,
    flat_chains: bool = True,
) -> Iterator[Exchange]:
    """Every exchange of a trace in any supported format, in trace order, streamed.

    The path is checked when this is called (errors are raised here, not on the first ``next``).
    ``shared=True`` lets agentx traces skip copying conversation items shared between rows
    (faster; treat the bodies as read-only); ``columns`` reads only those trace columns of an
    agentx trace (see :func:`agentx.store.iter_exchanges`); neither changes anything for the
    other formats. ``progress`` is advanced as the source is read (rows, files or bytes).
    ``flat_chains``: split a Weka trace's flat parallel agents into threads (Weka files and
    Hugging Face rows: :func:`agentx.formats.weka.parse_weka`; a converted agentx trace keeps
    the threads it was converted with).
    """
    fmt, path = resolve_trace(path)
    if fmt == "agentx":
        from agentx.store import iter_exchanges

        return iter_exchanges(path, shared=shared, columns=columns, progress=progress)
    if fmt == "weka":
        from agentx.formats.weka import iter_weka, weka_files

        weka_files(path)  # fail now on an empty directory
        return iter_weka(path, progress=progress, flat_chains=flat_chains)
    if fmt == "hf":
        from agentx.formats.hf import iter_hf

        return iter_hf(path, flat_chains=flat_chains)
    from agentx.formats.mooncake import iter_mooncake

    return iter_mooncake(path, progress=progress)


def load_block_files(
    path: str | os.PathLike[str], *, progress: Progress | None = None
) -> Iterator[BlockFile] | None:
    """The block-id columns of an agentx trace, file by file (:mod:`agentx.store.blockcols`);
    ``None`` for the other formats (read them with :func:`load_exchanges`)."""
    fmt, local = resolve_trace(path)
    if fmt != "agentx":
        return None
    from agentx.store.blockcols import iter_block_files

    return iter_block_files(local, progress=progress)


def _parquet_kind(path: Path) -> Format:
    """An agentx trace, or a dataset's Parquet rows of Weka traces."""
    from agentx.store.tables import parquet_columns

    try:
        columns, is_agentx = parquet_columns(path)
    except FormatError:
        return "agentx"  # let the store say what is wrong with it
    return "hf" if not is_agentx and columns >= _HF_COLUMNS else "agentx"


__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "Format",
    "FormatError",
    "TraceError",
    "detect_format",
    "load_block_files",
    "load_exchanges",
    "resolve_trace",
]
