"""Hash-only traces read lazily: a metadata index first, block ids only for what is sent.

A replay plans from :class:`~agentx.core.models.ExchangeMeta` (ids, thread structure, timings, token
counts) and reads a request's block-hash ids when a lane is about to send it, so its memory
follows the lanes in flight, not the corpus.

- **Weka** (one session per file): the index reads a file with every ``"hash_ids": [...]`` array
  cut out (a regex over the raw bytes, far cheaper than parsing the ids) and replaced by the
  request's ordinal, then validates the rest with :func:`agentx.formats.weka.parse_weka`; each
  request's locator is the byte span of its array, read back with one ``pread`` when sent. The
  split of flat parallel agents needs the top-level requests' ids: those arrays are parsed from
  the bytes already read, for the split alone (nothing of them is kept).
- **Hugging Face datasets of Weka traces** (``.jsonl``, one trace per line): a scan for newlines
  finds the rows (no parsing), and a row is indexed as a Weka file is (the same function over
  the line's bytes and its offset in the file) when it is first needed, so a request's locator
  is the span of its array in the file.
- **Mooncake** (JSONL): the index reads every line once, its ``hash_ids`` cut out the same way,
  and keeps its byte offset; a request re-reads (and fully checks) its line when sent.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import orjson

from agentx.apis.bodies import exchange_meta
from agentx.core.errors import FormatError
from agentx.core.models import JSON, Exchange, ExchangeMeta, Response, Timing, Usage
from agentx.formats.mooncake import MOONCAKE_BLOCK_SIZE, _Bad, parse_record
from agentx.formats.weka import parse_weka
from agentx.formats.weka.chains import Ids, block_ids
from agentx.formats.weka.checks import Invalid, checked_ids, hash_ids_at
from agentx.formats.weka.read import file_id_offset

_HASH_IDS = re.compile(rb'"hash_ids"\s*:\s*(\[[^\]]*\])')
_SPAN_BITS = 32  # a locator packs (offset, length): lengths below 4 GiB


def pack_span(offset: int, length: int) -> int:
    return (offset << _SPAN_BITS) | length


def unpack_span(locator: int) -> tuple[int, int]:
    return locator >> _SPAN_BITS, locator & ((1 << _SPAN_BITS) - 1)


def _pread(path: Path, offset: int, length: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.pread(fd, length, offset)
        finally:
            os.close(fd)
    except OSError as exc:
        raise FormatError(str(path), f"cannot read: {exc.strerror or exc}") from None


def with_ids(meta: ExchangeMeta, hash_ids: tuple[int, ...], block_size: int) -> Exchange:
    """The exchange of a hash-only row, from its metadata and its block ids."""
    return Exchange(
        request_id=meta.request_id,
        session_id=meta.session_id,
        thread_id=meta.thread_id,
        api=meta.api,
        request={},
        timing=Timing(start_wall_ns=meta.start_wall_ns, ttft_ns=meta.ttft_ns, e2e_ns=meta.e2e_ns),
        parent_request_id=meta.parent_request_id,
        status=meta.status,
        model=meta.model,
        response=Response(),
        usage=Usage(prompt_tokens=meta.prompt_tokens, completion_tokens=meta.completion_tokens),
        think_time_s=meta.think_time_s,
        api_time_s=meta.api_time_s,
        flags=meta.flags,
        hash_ids=hash_ids,
        hash_block_size=block_size,
    )


# -- Weka -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WekaSession:
    """One Weka trace as metadata: its exchanges in time order, each locating its id array in
    ``path`` (a Weka file, or the ``.jsonl`` of a dataset the trace is one line of)."""

    path: Path
    where: str  # what errors name: the file, or ``file:line``
    id: str  # the trace's id (its session)
    id_offset: int
    block_size: int
    exchanges: tuple[ExchangeMeta, ...]


def index_weka(
    data: bytes,
    path: Path,
    *,
    where: str | None = None,
    base: int = 0,
    position: int = 0,
    default_id: str | None = None,
    flat_chains: bool = True,
) -> WekaSession:
    """One Weka document without parsing its block ids: ``data`` is the whole of ``path``, or
    one line of it starting at byte ``base``. Every ``"hash_ids": [...]`` array is cut out and
    replaced by its ordinal, the rest validated by :func:`agentx.formats.weka.parse_weka`
    (``default_id`` is the trace's id when it has none); each request's locator is the span of
    its array in ``path``. ``position`` is the trace's place in its directory or dataset: its
    local-scope ids are offset by it (:func:`agentx.formats.weka.read.file_id_offset`). Raises
    :class:`FormatError` naming ``where`` (default: ``path``). ``flat_chains``: as
    :func:`agentx.formats.weka.parse_weka`."""
    here = str(path) if where is None else where
    parts: list[bytes] = []
    spans: list[int] = []
    arrays: list[tuple[int, int]] = []  # each array's bytes in ``data``
    last = 0
    for k, m in enumerate(_HASH_IDS.finditer(data)):
        parts.append(data[last : m.start()])
        parts.append(b'"hash_ids":[%d]' % k)
        spans.append(pack_span(base + m.start(1), m.end(1) - m.start(1)))
        arrays.append((m.start(1), m.end(1)))
        last = m.end()
    parts.append(data[last:])
    try:
        doc = _with_id(orjson.loads(b"".join(parts)), default_id)
    except orjson.JSONDecodeError:
        raise _unindexable(data, here, position, default_id) from None

    def block_ids(ordinal: list[int], at: str) -> Ids:
        start, end = arrays[ordinal[0]]
        return _array(data[start + 1 : end - 1], at)

    # ids: ordinals, checked when read (those of the top-level requests also by the split)
    trace = parse_weka(doc, here, import_fields=False, flat_chains=flat_chains, block_ids=block_ids)
    metas = []
    for ex in trace.exchanges:
        assert ex.hash_ids is not None  # every Weka request has its array (parse_weka checks)
        metas.append(exchange_meta(ex, spans[ex.hash_ids[0]]))
    return WekaSession(
        path=path,
        where=here,
        id=trace.id,
        id_offset=file_id_offset(doc, position),
        block_size=trace.block_size,
        exchanges=tuple(metas),
    )


def _array(inner: bytes, at: str) -> Ids:
    """A JSON array's ids (its text between the brackets) for the split of flat agents: parsed
    straight into an array; anything but integers fails as the importer fails it."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy warns, and stops, at what is not an integer
        try:
            return np.fromstring(inner, dtype=np.int64, sep=",")
        except (ValueError, DeprecationWarning):
            pass
    try:
        ids = orjson.loads(b"[" + inner + b"]")
    except orjson.JSONDecodeError:
        raise Invalid(f"{at}.hash_ids: expected a list of integers") from None
    return block_ids(hash_ids_at({"hash_ids": ids}, at, 0, None)[0])


def _with_id(doc: JSON, default_id: str | None) -> JSON:
    if default_id is not None and isinstance(doc, dict) and doc.get("id") is None:
        doc["id"] = default_id
    return doc


def _unindexable(data: bytes, where: str, position: int, default_id: str | None) -> FormatError:
    """Why a document whose arrays were cut out does not parse: the error the importer gives
    the whole document (not valid JSON; an id array holding a ``]`` in a string)."""
    try:
        doc = _with_id(orjson.loads(data), default_id)
    except orjson.JSONDecodeError as exc:
        return FormatError(where, f"not valid JSON ({exc})")
    try:
        parse_weka(doc, where, id_offset=file_id_offset(doc, position))
    except FormatError as exc:
        return exc
    return FormatError(where, "a hash_ids array holds a ']' inside a string: cannot index it")


def index_weka_file(path: Path, file_index: int = 0, *, flat_chains: bool = True) -> WekaSession:
    """Read one Weka file (the ``file_index``-th of its directory) without parsing its block
    ids. Raises :class:`FormatError`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(str(path), f"cannot read: {exc.strerror or exc}") from None
    return index_weka(data, path, position=file_index, flat_chains=flat_chains)


def read_weka_ids(session: WekaSession, meta: ExchangeMeta) -> tuple[int, ...]:
    """The block ids of one request, read back from its file (validated as the importer does)."""
    offset, length = unpack_span(meta.locator)
    raw = _pread(session.path, offset, length)
    try:
        ids = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise FormatError(
            session.where, f"request {meta.request_id}: changed since it was indexed"
        ) from None
    return checked_ids(ids, f"request {meta.request_id}", session.id_offset, session.where)


# -- Hugging Face datasets of Weka traces (.jsonl) --------------------------------------------------


@dataclass(frozen=True, slots=True)
class HFRow:
    """Where one row of a dataset's ``.jsonl`` is: its file, its line (1-based, what errors
    name), and its bytes' span in the file."""

    path: Path
    line: int
    offset: int
    length: int


_SCAN_BYTES = 1 << 24  # read at a time by the scan for rows


def hf_rows(files: Sequence[Path], *, chunk_bytes: int = _SCAN_BYTES) -> list[HFRow]:
    """The rows of a dataset's ``.jsonl`` files, in order, found by a scan for newlines through
    one reused buffer (no line is copied or parsed: ~0.2 CPU-s a GB); a line of nothing but
    blanks is not a row, as in :func:`agentx.formats.hf.iter_hf`. Raises :class:`FormatError`
    for a file it cannot read."""
    rows: list[HFRow] = []
    buf = bytearray(chunk_bytes)
    for path in files:
        try:
            with open(path, "rb", buffering=0) as fh:
                base = 0  # the file offset of buf[0]
                start, line, blank = 0, 1, True  # the current line: its offset, number, so far
                while n := fh.readinto(buf):
                    pos = 0
                    while pos < n:
                        nl = buf.find(b"\n", pos, n)
                        end = n if nl < 0 else nl + 1
                        if blank:  # a row's first byte tells it (a line longer than the
                            probe = buf[pos : min(end, pos + 64)]  # probe: read whole)
                            blank = probe.isspace() and (
                                end - pos == len(probe) or buf[pos:end].isspace()
                            )
                        if nl < 0:
                            break
                        if not blank:
                            rows.append(HFRow(path, line, start, base + end - start))
                        start, line, blank = base + end, line + 1, True
                        pos = end
                    base += n
                if base > start and not blank:  # a last line without its newline
                    rows.append(HFRow(path, line, start, base - start))
        except OSError as exc:
            raise FormatError(str(path), f"cannot read: {exc.strerror or exc}") from None
    return rows


def index_hf_row(row: HFRow, k: int, *, flat_chains: bool = True) -> WekaSession:
    """The ``k``-th row of a dataset (:func:`hf_rows`) indexed as :func:`index_weka` indexes a
    file (its arrays' spans relative to the file): called ``row{k}`` when it has no id, its
    local-scope ids offset by ``k x 2**32``; errors name ``file:line``. The block ids are
    checked when read back (:func:`read_weka_ids`), not here (those of the top-level requests
    of a trace of several also when the flat agents are split: ``flat_chains``)."""
    return index_weka(
        _pread(row.path, row.offset, row.length),
        row.path,
        where=f"{row.path}:{row.line}",
        base=row.offset,
        position=k,
        default_id=f"row{k}",
        flat_chains=flat_chains,
    )


def index_hf_jsonl(files: Sequence[Path], *, flat_chains: bool = True) -> Iterator[WekaSession]:
    """Every row of a dataset's ``.jsonl`` files as a :class:`WekaSession`, in row order
    (:func:`index_hf_row` of each of :func:`hf_rows`), a duplicate trace id refused as
    :func:`agentx.formats.hf.iter_hf` refuses it."""
    seen: set[str] = set()
    for k, row in enumerate(hf_rows(files)):
        ws = index_hf_row(row, k, flat_chains=flat_chains)
        if ws.id in seen:
            raise FormatError(ws.where, f"duplicate trace id {ws.id!r}")
        seen.add(ws.id)
        yield ws


# -- Mooncake -------------------------------------------------------------------------------------


def index_mooncake(
    path: str | os.PathLike[str], block_size: int = MOONCAKE_BLOCK_SIZE
) -> Iterator[ExchangeMeta]:
    """Every line of a Mooncake file as metadata (locator: the line's byte offset), in file order,
    chained by session as :func:`agentx.formats.mooncake.iter_mooncake` chains them."""
    p = Path(path)
    last_in_session: dict[str, str] = {}
    try:
        fh = open(p, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise FormatError(str(p), f"cannot read: {exc.strerror or exc}") from None
    stem = p.stem
    with fh:
        offset = 0
        line_no = 0
        for raw in fh:
            line_no += 1
            start = offset
            offset += len(raw)
            if not raw.strip():
                continue
            m = _HASH_IDS.search(raw)  # the ids are checked when the line is read back
            stripped = raw if m is None else raw[: m.start(1)] + b"[]" + raw[m.end(1) :]
            ex = _mooncake_line(p, stripped, line_no, block_size, stem)
            parent = None
            if ex.session_id != ex.request_id:  # a line of a named session: chained
                parent = last_in_session.get(ex.session_id)
                last_in_session[ex.session_id] = ex.request_id
            yield exchange_meta(ex, start, parent)


def _mooncake_line(
    p: Path, raw: bytes, line_no: int, block_size: int, stem: str | None = None
) -> Exchange:
    try:
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise _Bad(f"not valid JSON ({exc})") from None
        _, ex = parse_record(rec, line_no, stem or p.stem, block_size)
    except _Bad as exc:
        raise FormatError(str(p), str(exc), record=line_no) from None
    return ex


def read_mooncake(
    path: str | os.PathLike[str], meta: ExchangeMeta, block_size: int = MOONCAKE_BLOCK_SIZE
) -> Exchange:
    """One request of a Mooncake file, read back from its line."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            fh.seek(meta.locator)
            raw = fh.readline()
    except OSError as exc:
        raise FormatError(str(p), f"cannot read: {exc.strerror or exc}") from None
    line_no = int(meta.request_id.rsplit("/", 1)[-1])
    ex = _mooncake_line(p, raw, line_no, block_size)
    if ex.request_id != meta.request_id:
        raise FormatError(str(p), "changed since it was indexed", record=line_no)
    return replace(ex, parent_request_id=meta.parent_request_id)
