"""Writing Weka JSON: one file per session.

An imported Weka session (its rows carry the file's header in ``import_fields``, see
:mod:`agentx.formats.weka.record`) is written back exactly: the header, every subagent entry
and every record as they were read, block ids less the importer's offset. Any other session
(a capture, a Mooncake import) is laid out with 64-token blocks covering only full blocks
(``floor(n/64)`` ids), ``t``/``think_time``/``api_time``/``ttft`` in seconds, every thread but
the session's main one and its flat chains (``weka.chain`` rows: records of the main list) as a
``subagent`` entry with its own relative ``t``.
"""

from __future__ import annotations

import os
import re
from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agentx.apis.bodies import conversation
from agentx.core.errors import TraceError, UsageError
from agentx.core.flags import FLAG_SUBAGENT, WEKA_CHAIN, weka_values
from agentx.core.models import JSON, Exchange
from agentx.core.outputs import atomic_dir, check_output, write_atomic
from agentx.formats.blocks import IdMapper, block_keys, output_tokens
from agentx.formats.weka.record import (
    ABSOLUTE,
    EMPTY,
    ENTRY,
    ENTRY_POSITION,
    FILE,
    ID_OFFSET,
    POSITION,
    REQUEST,
    REQUESTS,
    apply,
    imported,
    record_of,
    to_ns,
)
from agentx.prefixcache.hashing import common_prefix
from agentx.prefixcache.theory import is_model_call

WEKA_BLOCK_SIZE = 64
_ID_STRIDE = 1 << 32  # the Weka importer offsets the k-th local-scope file's ids by k * 2**32


@dataclass(slots=True)
class _Req:
    """What the Weka writer keeps of an exchange (not its body): one request record, less
    ``t`` (set once the thread's origin is known)."""

    thread: str
    start_ns: int
    end_ns: int
    row: dict[str, Any]
    native: bool  # row["hash_ids"] are the source's own Weka ids, else dense ids of this session
    subagent: bool
    flags: tuple[str, ...]
    fields: JSON = None  # the exchange's import_fields
    # Block ids until the session is written (row["hash_ids"] is None until then): the first
    # ``keep`` ids of the thread's previous row, then ``tail``. A session's turns repeat each
    # other's prompts: this holds ~100M ids of a corpus as the ~4M each turn appends.
    keep: int = 0
    tail: array[int] = field(default_factory=lambda: array("q"))


def _input_types(ex: Exchange) -> list[str]:
    found = weka_values(ex.flags, "in")
    if found or ex.hash_ids is not None:
        return found
    conv = conversation(ex.api, ex.request)
    last = conv[-1] if conv else None
    if not isinstance(last, dict):
        return []
    if last.get("role") == "tool" or last.get("type") in (
        "function_call_output",
        "custom_tool_call_output",
    ):
        return ["tool_result"]
    content = last.get("content")
    if isinstance(content, list):
        kinds: list[str] = [
            b["type"] for b in content if isinstance(b, dict) and isinstance(b.get("type"), str)
        ]
        names = ["text" if k in ("input_text", "output_text") else k for k in kinds]
        return list(dict.fromkeys(names))
    return ["text"]


def _output_types(ex: Exchange) -> list[str]:
    found = weka_values(ex.flags, "out")
    if found or ex.hash_ids is not None:
        return found
    r = ex.response
    out = []
    if r.reasoning:
        out.append("thinking")
    if r.text:
        out.append("text")
    if r.tool_calls:
        out.append("tool_use")
    return out


def _block_size(ex: Exchange) -> int:
    header = imported(ex, FILE)
    bs = header.get("block_size") if isinstance(header, dict) else None
    return bs if isinstance(bs, int) and not isinstance(bs, bool) and bs > 0 else WEKA_BLOCK_SIZE


def weka_request(
    ex: Exchange,
    mapper: IdMapper,
    block_size: int = WEKA_BLOCK_SIZE,
    previous: tuple[int, ...] = (),
) -> tuple[_Req, tuple[int, ...]]:
    """The Weka record of one exchange and its block ids; text prompts get ids from ``mapper``
    (one per session), hash-only rows at ``block_size`` keep theirs, all of them. The record
    holds its ids as what it adds to ``previous`` (the ids of its thread's previous row)."""
    native = ex.hash_ids is not None and ex.hash_block_size == block_size
    ids: tuple[int, ...]
    if native:
        ids = tuple(ex.hash_ids or ())
        n = ex.usage.prompt_tokens if ex.usage.prompt_tokens is not None else len(ids) * block_size
    else:
        n, keys = block_keys(ex, block_size, partial=False)
        ids = tuple(mapper(keys))
    keep = common_prefix(previous, ids) if previous else 0
    row = record_of(
        ex,
        0,
        n_in=n,
        out=output_tokens(ex),
        ids=[],
        input_types=_input_types(ex),
        output_types=_output_types(ex),
    )
    row["t"] = row["hash_ids"] = None
    start = ex.timing.start_wall_ns
    req = _Req(
        thread=ex.thread_id,
        start_ns=start,
        end_ns=start + (ex.timing.e2e_ns or 0),
        row=row,
        native=native,
        subagent=FLAG_SUBAGENT in ex.flags,
        flags=ex.flags,
        fields=ex.import_fields,
        keep=keep,
        tail=array("q", ids[keep:]),
    )
    return req, ids


def expand_ids(reqs: list[_Req]) -> None:
    """Give every record of a session (in trace order) its full list of block ids."""
    last: dict[str, list[int]] = {}
    for r in reqs:
        if r.row["hash_ids"] is None:
            full = last.get(r.thread, [])[: r.keep] + r.tail.tolist()
            r.row["hash_ids"] = full
            r.tail = array("q")
        last[r.thread] = r.row["hash_ids"]


def _timed(req: _Req, base_ns: int) -> dict[str, Any]:
    rec = {**req.row, "t": round((req.start_ns - base_ns) / 1e9, 6)}
    stored = req.fields.get(REQUEST) if isinstance(req.fields, dict) else None
    return apply(rec, stored) if stored is not None else rec


def weka_document(session: str, reqs: list[_Req], origin_ns: int | None = None) -> dict[str, Any]:
    """One session as a Weka document. ``t`` counts from ``origin_ns``, by default the session's
    first request; the session's first thread is the main one and its flat chains records of
    the main list too, the others are subagents."""
    threads: dict[str, list[_Req]] = {}
    position = {id(r): i for i, r in enumerate(reqs)}  # ties in time keep the trace's order
    for r in reqs:
        threads.setdefault(r.thread, []).append(r)
    order = sorted(threads.values(), key=lambda rs: (any(r.subagent for r in rs), rs[0].start_ns))
    flat = [r for rs in order[1:] if weka_values(rs[0].flags, WEKA_CHAIN) for r in rs]
    subs = [rs for rs in order[1:] if not weka_values(rs[0].flags, WEKA_CHAIN)]
    root = sorted([*order[0], *flat], key=lambda r: (r.start_ns, position[id(r)]))
    base = min(r.start_ns for r in reqs) if origin_ns is None else origin_ns
    entries = [(r.start_ns, position[id(r)], _timed(r, base)) for r in root]
    for rs in subs:
        start, flags = rs[0].start_ns, rs[0].flags
        entry: dict[str, Any] = {
            "t": round((start - base) / 1e9, 6),
            "type": "subagent",
            "agent_id": (weka_values(flags, "agent_id") or [rs[0].thread.rsplit("/", 1)[-1]])[0],
        }
        for key in ("subagent_type", "status"):
            found = weka_values(flags, key)
            if found:
                entry[key] = found[0]
        recorded = weka_values(flags, "duration_ms")  # an imported Weka subagent's own figure
        entry["duration_ms"] = (
            orjson.loads(recorded[0])
            if recorded
            else round((max(r.end_ns for r in rs) - start) / 1e6)
        )
        entry["requests"] = [_timed(r, start) for r in rs]
        entry["models"] = list(dict.fromkeys(r.row["model"] for r in rs if r.row["model"]))
        entries.append((start, position[id(rs[0])], entry))
    entries.sort(key=lambda e: (e[0], e[1]))

    def tokens_of(rs: list[_Req]) -> dict[str, int]:
        return {"input": sum(r.row["in"] for r in rs), "output": sum(r.row["out"] for r in rs)}

    parent = tokens_of(root)
    sub = tokens_of([r for rs in subs for r in rs])
    return {
        "id": session,
        "models": list(dict.fromkeys(r.row["model"] for r in root if r.row["model"])),
        "block_size": WEKA_BLOCK_SIZE,
        "hash_id_scope": "local",
        "requests": [e for _, _, e in entries],
        "totals": {
            "parent_tokens": parent,
            "subagent_tokens": sub,
            "combined_tokens": {k: parent[k] + sub[k] for k in parent},
            "subagent_count": len(subs),
        },
    }


def _stored(reqs: list[_Req], key: str) -> JSON:
    for r in reqs:
        if isinstance(r.fields, dict) and key in r.fields:
            return r.fields[key]
    return None


def imported_document(reqs: list[_Req]) -> dict[str, Any] | None:
    """The session as the Weka file it was imported from (its header, entries and records as
    they were), or ``None`` when its rows do not carry an imported Weka header."""
    header = _stored(reqs, FILE)
    if not isinstance(header, dict) or not all(r.native for r in reqs):
        return None
    offset = _stored(reqs, ID_OFFSET) or 0
    threads: dict[str, list[_Req]] = {}
    position = {id(r): i for i, r in enumerate(reqs)}
    for r in reqs:
        r.row["hash_ids"] = [i - offset for i in r.row["hash_ids"]]
        threads.setdefault(r.thread, []).append(r)
    items: list[tuple[tuple[int, int], dict[str, Any]]] = []  # (sort key, record or entry)

    def key(stored: JSON, start_ns: int, first: _Req) -> tuple[int, int]:
        """The file position when the importer kept it, else time (ties: trace order)."""
        return (stored, 0) if isinstance(stored, int) else (start_ns, position[id(first)])

    for rs in threads.values():
        entry = _stored(rs, ENTRY)
        if not rs[0].subagent or not isinstance(entry, dict):
            items.extend((key(_stored([r], POSITION), r.start_ns, r), _timed(r, 0)) for r in rs)
            continue
        t = entry.get("t")
        start = to_ns(t) if isinstance(t, int | float) and not isinstance(t, bool) else None
        if start is None:
            start = rs[0].start_ns
        base = 0 if _stored(rs, ABSOLUTE) else start  # absolute: t from the trace's start
        if _stored(rs, POSITION) is not None:
            rs = sorted(rs, key=lambda r: _stored([r], POSITION) or 0)
        records = [_timed(r, base) for r in rs]
        items.append((key(_stored(rs, ENTRY_POSITION), start, rs[0]), {**entry, REQUESTS: records}))
    for pos, entry in _stored(reqs, EMPTY) or ():
        items.append(((pos, 0), entry))
    items.sort(key=lambda item: item[0])
    return {**header, REQUESTS: [item for _, item in items]}


def _finish_session(session: str, reqs: list[_Req], mapper: IdMapper) -> dict[str, Any]:
    """Imported Weka sessions are written back as they were read (:func:`imported_document`);
    other sessions of imported ids keep their ids, less the per-file offset the importer added
    (guessed), and count ``t`` from their own origin (0). A session mixing imported and text
    rows gets dense ids throughout."""
    expand_ids(reqs)
    doc = imported_document(reqs)
    if doc is not None:
        return doc
    if all(r.native for r in reqs):
        ids = [i for r in reqs for i in r.row["hash_ids"]]
        low = min(ids, default=0)
        base = (low // _ID_STRIDE) * _ID_STRIDE if low >= 0 else 0
        if ids and max(ids) - base >= _ID_STRIDE:
            base = 0  # not one file's offset: keep the ids as they are
        for r in reqs:
            r.row["hash_ids"] = [i - base for i in r.row["hash_ids"]]
        start = min(r.start_ns for r in reqs)
        return weka_document(session, reqs, 0 if start >= 0 else None)
    for r in reqs:
        if r.native:  # negative keys: apart from the chained hashes of text rows
            r.row["hash_ids"] = mapper([-1 - i for i in r.row["hash_ids"]])
            r.native = False
    return weka_document(session, reqs)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(slots=True)
class _Session:
    reqs: list[_Req]
    mapper: IdMapper
    block_size: int
    threads: set[str]


class _Files:
    """Where the documents go: one ``.json`` file, or one file per session in a directory."""

    def __init__(self, path: Path, single: bool) -> None:
        self.path, self.single = path, single
        self.used: set[str] = set()
        self.count = 0
        if not single:
            path.mkdir(parents=True, exist_ok=True)

    def write(self, session: str, doc: JSON) -> None:
        if self.single:
            write_atomic(self.path, orjson.dumps(doc), force=True)
        else:  # a directory being built aside (atomic_dir): written as is
            name = _UNSAFE.sub("_", session).strip("._") or "session"
            while name in self.used:
                name += "_"
            self.used.add(name)
            (self.path / f"{name}.json").write_bytes(orjson.dumps(doc))
        self.count += 1


class _Lines:
    """Where the documents go as the rows of a Hugging Face dataset: one per line of a
    ``.jsonl`` file (``traces.jsonl``, what agentx-harness, AIPerf and GuideLLM read), written
    under a temporary name and renamed by :meth:`close`."""

    def __init__(self, path: Path, force: bool) -> None:
        check_output(path, force=force)
        self.path = path
        self.tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(self.tmp, "wb")  # noqa: SIM115 - closed by close() or abort()
        self.count = 0

    def write(self, session: str, doc: JSON) -> None:
        self.fh.write(orjson.dumps(doc) + b"\n")
        self.count += 1

    def close(self) -> None:
        self.fh.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        self.fh.close()
        self.tmp.unlink(missing_ok=True)


def write_weka_jsonl(
    exchanges: Iterable[Exchange],
    path: str | os.PathLike[str],
    *,
    force: bool = True,
    session_rows: Mapping[str, int] | None = None,
) -> int:
    """:func:`write_weka`'s documents as the lines of one ``.jsonl`` file, in the order their
    sessions end (each written as soon as its last row is read when ``session_rows`` says how
    many rows each session has, else all at the end). Returns the number of sessions."""
    lines = _Lines(Path(path), force)
    try:
        _write_sessions(exchanges, lines, session_rows, single=False)
    except OSError as exc:
        lines.abort()
        raise TraceError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        lines.abort()
        raise
    lines.close()
    return lines.count


def write_weka(
    exchanges: Iterable[Exchange],
    path: str | os.PathLike[str],
    *,
    force: bool = True,
    session_rows: Mapping[str, int] | None = None,
) -> int:
    """Write one Weka file per session: ``path`` is a directory, or a ``.json`` file when the
    trace holds a single session. Returns the number of sessions written. Rows are reduced to
    their Weka fields as they are read (block ids as what each turn adds to its thread's
    previous one). A session is written and forgotten as soon as its last row is read when
    ``session_rows`` says how many rows each session has (memory then holds the sessions in
    flight), else at the end. The directory is built beside ``path`` and replaces it whole once
    every session is written (:func:`agentx.core.outputs.atomic_dir`: no half export, no file
    of an older one left in it). An existing file, or a directory already holding ``.json``
    files, is refused unless ``force``."""
    p = Path(path)
    if p.suffix == ".json" or (p.exists() and not p.is_dir()):
        check_output(p, force=force)
    elif not force and p.is_dir() and any(p.glob("*.json")):
        raise UsageError(
            f"{p} already holds Weka files: pass --force to replace them, or choose another path"
        )
    single = p.suffix == ".json"
    if single and session_rows is not None and len(session_rows) != 1:
        raise UsageError(
            f"{len(session_rows)} sessions: a Weka file holds one; give a directory as -o"
        )
    try:
        if single:
            return _write_files(exchanges, p, session_rows, single)
        with atomic_dir(p, owned=lambda name: name.endswith(".json")) as tmp:
            return _write_files(exchanges, tmp, session_rows, single)
    except OSError as exc:
        raise TraceError(f"cannot write {p}: {exc.strerror or exc}") from None


def _write_files(
    exchanges: Iterable[Exchange], p: Path, session_rows: Mapping[str, int] | None, single: bool
) -> int:
    files = _Files(p, single) if session_rows is not None else None
    files = _write_sessions(exchanges, files, session_rows, single, lambda: _Files(p, single))
    return files.count


def _write_sessions[S: (_Files, _Lines)](
    exchanges: Iterable[Exchange],
    files: S | None,
    session_rows: Mapping[str, int] | None,
    single: bool,
    late: Callable[[], S] | None = None,
) -> S:
    """Each session's document to ``files`` (made by ``late`` once every row is read, when
    ``files`` is ``None``), as soon as its last row is read when ``session_rows`` is given."""
    sessions: dict[str, _Session] = {}
    last_ids: dict[str, tuple[int, ...]] = {}  # of each thread's last row
    seen: dict[str, int] = {}  # rows read per session (model calls or not)
    for ex in exchanges:
        if is_model_call(ex):
            s = sessions.get(ex.session_id)
            if s is None:  # the first row carries an imported header
                s = _Session([], IdMapper(1), _block_size(ex), set())
                sessions[ex.session_id] = s
            prev = last_ids.get(ex.thread_id, ())
            req, ids = weka_request(ex, s.mapper, s.block_size, prev)
            s.reqs.append(req)
            s.threads.add(ex.thread_id)
            last_ids[ex.thread_id] = ids
        if files is not None and session_rows is not None:
            n = seen[ex.session_id] = seen.get(ex.session_id, 0) + 1
            if n == session_rows.get(ex.session_id) and ex.session_id in sessions:
                _flush(ex.session_id, sessions, last_ids, files)
    if single and (files is None and len(sessions) != 1):
        raise UsageError(f"{len(sessions)} sessions: a Weka file holds one; give a directory as -o")
    if files is None:
        assert late is not None
        files = late()
    for session in list(sessions):
        _flush(session, sessions, last_ids, files)
    return files


def _flush(
    session: str,
    sessions: dict[str, _Session],
    last_ids: dict[str, tuple[int, ...]],
    files: _Files | _Lines,
) -> None:
    """Write one session and forget it."""
    s = sessions.pop(session)
    for thread in s.threads:
        last_ids.pop(thread, None)
    files.write(session, _finish_session(session, s.reqs, s.mapper))
