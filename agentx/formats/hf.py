"""Hugging Face datasets of Weka traces (``semianalysisai/cc-traces-weka-*``): one trace per row.

What is read (each row is one Weka trace object, the same JSON as a Weka file):

- a ``.jsonl`` file: one trace per line (the datasets' ``traces.jsonl``);
- a Parquet file of rows (Hugging Face's auto-converted mirror, ``datasets.Dataset.to_parquet``):
  Weka fields as columns, ``requests`` as JSON text (``list<arrow.json>``) or as structs (absent
  fields come back as nulls and are dropped);
- a directory in the ``datasets`` layout: ``traces.jsonl``, else every ``*.jsonl``, else every
  ``*.parquet``, at its top or under ``data/`` (name order);
- ``hf://datasets/<owner>/<name>[@<revision>]``: downloaded with ``huggingface_hub`` (the optional
  dependency ``agentx-replay[hf]``) into the Hugging Face cache, then read as a directory. When
  the hub cannot be reached, the error says so in one line (a cached copy is used if there is one).
  A dataset ``agentx dataset pack`` wrote (it has an ``agentx.dataset/1`` ``manifest.json``) is
  downloaded as its manifest, card and default config, and read as agentx trace files
  (:func:`agentx.formats.resolve_trace`).

Rows become sessions exactly as Weka files do (:func:`agentx.formats.weka.parse_weka`), in row
order; like the files of a Weka directory, rows of ``local`` hash-id scope get their ids offset by
``k x 2**32`` for the k-th row, so different traces never share a block. Two rows with one id are
an error (agentx-harness refuses them too).

:func:`iter_hf` reads rows whole (``agentx stats``, ``convert``, ``load_exchanges``). Replay and
simulate index ``.jsonl`` rows instead, by the same rules, without parsing their block ids
(:func:`agentx.formats.lazy.index_hf_jsonl`); a Parquet file of rows is still read whole there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from agentx.core.errors import FormatError, TraceError, UsageError
from agentx.core.models import Exchange
from agentx.formats.weka import LOCAL_SCOPE_STRIDE, parse_weka

HF_SCHEME = "hf://"
DATASETS_PREFIX = "datasets/"
PREFERRED = "traces.jsonl"


def is_hf_url(path: str | os.PathLike[str]) -> bool:
    """``hf://datasets/...`` (also as a ``Path`` collapsed it to ``hf:/datasets/...``)."""
    text = os.fspath(path)
    return text.startswith((HF_SCHEME, "hf:/"))


def data_files(directory: Path) -> list[Path]:
    """The data files of a dataset directory, in the order they are read."""
    places = [directory, directory / "data"]
    preferred = [p / PREFERRED for p in places if (p / PREFERRED).is_file()]
    if preferred:
        return preferred[:1]
    for suffix in (".jsonl", ".parquet"):
        found = sorted(
            f
            for p in places
            if p.is_dir()
            for f in p.iterdir()
            if f.suffix == suffix and f.is_file()
        )
        if found:
            return found
    raise FormatError(
        str(directory), "a dataset directory without traces.jsonl, *.jsonl or *.parquet"
    )


def looks_like_dataset(directory: Path) -> bool:
    try:
        data_files(directory)
    except FormatError:
        return False
    return True


def _plain(value: Any) -> Any:
    """A Parquet row's value as the Weka JSON it came from: JSON text parsed, nulls dropped."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return _plain(orjson.loads(value))
        except orjson.JSONDecodeError:
            return value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _jsonl_rows(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        with open(path, "rb") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    yield f"{path}:{n}", orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise FormatError(f"{path}:{n}", f"not valid JSON ({exc})") from None
    except OSError as exc:
        raise FormatError(str(path), f"cannot read: {exc.strerror or exc}") from None


def _parquet_rows(path: Path) -> Iterator[tuple[str, Any]]:
    from agentx.store.tables import iter_parquet_rows

    for n, row in enumerate(iter_parquet_rows(path), 1):
        yield f"{path}:row {n}", _plain(row)


def resolve(path: str | os.PathLike[str]) -> list[Path]:
    """The files to read: a file itself, a directory's data files, an ``hf://`` dataset's
    (downloaded now). Raises here, before any row is read."""
    p = download(path) if is_hf_url(path) else Path(path)
    if not p.exists():
        raise TraceError(f"{p}: no such file or directory")
    return data_files(p) if p.is_dir() else [p]


def iter_rows(files: list[Path]) -> Iterator[tuple[str, Any]]:
    """``(where, trace object)`` for every row of ``files``."""
    for f in files:
        yield from (_parquet_rows(f) if f.suffix == ".parquet" else _jsonl_rows(f))


def iter_hf(
    path: str | os.PathLike[str],
    *,
    on_bad: Callable[[FormatError], None] | None = None,
    flat_chains: bool = True,
) -> Iterator[Exchange]:
    """Exchanges of every trace row, in row order (a bad row raises, or goes to ``on_bad``).
    The path is checked (and an ``hf://`` dataset downloaded) when this is called.
    ``flat_chains``: as :func:`agentx.formats.weka.parse_weka`."""
    return exchanges_of(resolve(path), on_bad, flat_chains=flat_chains)


def exchanges_of(
    files: list[Path],
    on_bad: Callable[[FormatError], None] | None = None,
    *,
    flat_chains: bool = True,
) -> Iterator[Exchange]:
    """Exchanges of every row of ``files`` (:func:`resolve`'s), read whole. Replay and simulate
    index ``.jsonl`` rows instead (:func:`agentx.formats.lazy.index_hf_jsonl`, the same rules)."""
    seen: set[str] = set()
    for k, (where, doc) in enumerate(iter_rows(files)):
        try:
            if isinstance(doc, dict) and doc.get("id") is None:
                doc = {**doc, "id": f"row{k}"}
            scope = doc.get("hash_id_scope") if isinstance(doc, dict) else None
            offset = k * LOCAL_SCOPE_STRIDE if scope != "global" else 0
            trace = parse_weka(doc, where, id_offset=offset, flat_chains=flat_chains)
            if trace.id in seen:
                raise FormatError(where, f"duplicate trace id {trace.id!r}")
        except FormatError as bad:
            if on_bad is None:
                raise
            on_bad(bad)
            continue
        seen.add(trace.id)
        yield from trace.exchanges


def parse_hf_url(url: str) -> tuple[str, str | None]:
    """``hf://datasets/owner/name@rev`` -> ``("owner/name", "rev")``."""
    text = os.fspath(url)
    rest = text[len(HF_SCHEME) :] if text.startswith(HF_SCHEME) else text[len("hf:/") :]
    if not rest.startswith(DATASETS_PREFIX):
        raise UsageError(f"{text}: expected hf://datasets/<owner>/<name> (a dataset repository)")
    repo, _, revision = rest[len(DATASETS_PREFIX) :].strip("/").partition("@")
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise UsageError(f"{text}: expected hf://datasets/<owner>/<name>")
    return repo, revision or None


DATA_PATTERNS = ["*.jsonl", "*.parquet", "*.md"]


def _packed_patterns(hub: Any, repo: str, revision: str | None) -> list[str] | None:
    """What to download of a dataset ``agentx dataset pack`` wrote (known by its
    ``manifest.json``): the manifest, the card and the default config's files, not every
    config and export. ``None`` for any other dataset (or a manifest that cannot be had: the
    snapshot's own error then says why)."""
    from agentx.results.dataset import MANIFEST, SCHEMA, Manifest

    try:
        path = hub.hf_hub_download(repo, MANIFEST, repo_type="dataset", revision=revision)
        doc = orjson.loads(Path(path).read_bytes())
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            return None
        manifest = Manifest.from_json(doc)
    except Exception:  # no such file, the hub unreachable, not our manifest: the plain download
        return None
    config = manifest.config(manifest.default_config)
    return [MANIFEST, "README.md", *(config.files if config is not None else ())]


def download(url: str | os.PathLike[str], *, whole: bool = False) -> Path:
    """The local snapshot of an ``hf://datasets/...`` repository (the Hugging Face cache): its
    data files, or with ``whole`` every file (what ``agentx dataset verify`` checks)."""
    repo, revision = parse_hf_url(os.fspath(url))
    try:
        import huggingface_hub
    except ImportError:
        raise UsageError(
            f"reading hf://datasets/{repo} needs huggingface_hub: pip install 'agentx-replay[hf]'"
        ) from None
    try:
        patterns = None if whole else _packed_patterns(huggingface_hub, repo, revision)
        if patterns is None and not whole:
            patterns = DATA_PATTERNS
        local = huggingface_hub.snapshot_download(
            repo, repo_type="dataset", revision=revision, allow_patterns=patterns
        )
    except Exception as exc:  # the hub's errors vary by version: every failure is one line
        kind = type(exc).__name__
        raise TraceError(
            f"hf://datasets/{repo}: cannot download from the Hugging Face hub ({kind}); "
            "offline? put the dataset in a local directory and pass that instead"
        ) from None
    return Path(local)
