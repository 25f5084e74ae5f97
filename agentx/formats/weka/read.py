"""Weka JSON traces (SemiAnalysis AgentX / kv-cache-tester ``traces/``) as hash-only exchanges.

One file is one session::

    {"id", "models", "block_size", "hash_id_scope", "tool_tokens", "system_tokens", "totals",
     "requests": [{"t", "type": "n"|"s", "model", "in", "out", "hash_ids", "input_types",
                   "output_types", "stop", "api_time", "ttft", "think_time"},
                  {"t", "type": "subagent", "agent_id", "subagent_type", "status",
                   "requests": [...]}, ...]}

Mapping (see docs/trace-format.md): the top-level requests form the thread ``<id>/main``; each
``subagent`` entry is a child thread ``<id>/<agent_id>`` whose requests' ``t`` count from the
entry's own ``t`` (or from the trace's start when they are absolute: see ``_inner_origin``). Every request becomes an :class:`Exchange` with ``api="openai.chat"``,
``request={}``, ``hash_ids`` and ``hash_block_size`` from the file, ``usage.prompt_tokens=in``,
``usage.completion_tokens=out``, ``timing.start_wall_ns`` = absolute ``t`` in ns since the trace
start, ``timing.ttft_ns``/``e2e_ns`` from ``ttft``/``api_time``, ``think_time_s``,
``api_time_s``, ``response.stop_reason=stop``, and flags ``weka.type=<type>``,
``weka.in=<input type>``, ``weka.out=<output type>`` (plus ``subagent``,
``weka.agent_id=...``, ``weka.subagent_type=...``, ``weka.status=...``, ``weka.duration_ms=...``
on child threads). Requests chain by ``parent_request_id`` within their thread; a subagent's first
request names the main request before its entry (the turn that spawned it, as agentx-harness
reads it). Exchanges come out in time order. What an exact export needs beyond that goes into
``import_fields`` (:mod:`agentx.formats.weka.record`).

Flat parallel agents (``flat_chains``, the default): the top-level requests are split into the
main agent and the agents recorded among its requests (:mod:`agentx.formats.weka.flat`, as
agentx-harness splits them). The main chain keeps ``<id>/main``; each other chain is a thread
``<id>/<name>`` (``fa:000``, ``aux:001``, ``wg:000_001``) whose rows carry ``weka.chain=<kind>``
and whose first request names the last main request before it in the file (the main's first
request when none is), the turn that spawns it; a subagent's first request names the last
*main* request before its entry. The first main row of a split trace carries ``weka.seams=<n>``
and ``weka.empty_hash=<n>`` (when not 0). ``flat_chains=False`` keeps every top-level request
on ``<id>/main``, in file order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agentx.apis import Api
from agentx.core.errors import FormatError
from agentx.core.flags import FLAG_SUBAGENT, WEKA_CHAIN, WEKA_EMPTY_HASH, WEKA_SEAMS, weka_flag
from agentx.core.models import JSON, Exchange, Response, Timing, Usage
from agentx.core.progress import Progress
from agentx.formats.weka.chains import ChainRequest, Ids, block_ids
from agentx.formats.weka.checks import (
    LOCAL_SCOPE_STRIDE,
    Invalid,
    hash_ids_at,
    int_at,
    num_at,
    show,
    str_at,
    strs_at,
)
from agentx.formats.weka.flat import FlatSplit, split_flat
from agentx.formats.weka.record import (
    ABSOLUTE,
    EMPTY,
    ENTRY,
    ENTRY_POSITION,
    FILE,
    ID_OFFSET,
    POSITION,
    REQUESTS,
    request_fields,
    to_ns,
)

SUBAGENT = "subagent"  # the Weka record type of a child thread
MAIN = "main"  # the main agent's thread: <id>/main

# The block ids of a record from its hash_ids as the document holds them (an index passes the
# document with each array cut out and replaced by its ordinal: this reads the array back).
BlockIds = Callable[[list[int], str], Ids]


@dataclass(frozen=True, slots=True)
class WekaTrace:
    """One Weka file: its header fields and its requests as exchanges (in time order)."""

    path: Path
    id: str
    block_size: int
    hash_id_scope: str | None
    models: tuple[str, ...]
    tool_tokens: int | None
    system_tokens: int | None
    totals: JSON
    exchanges: tuple[Exchange, ...]


@dataclass(slots=True)
class _Row:
    """An exchange being built: its fields, and what ``import_fields`` will hold."""

    kw: dict[str, Any]
    fields: dict[str, Any]
    position: int  # index of the record in its list
    thread: str  # as in the file (main or a subagent): what the export's order checks read
    ids: tuple[list[int], tuple[int, ...]]  # block ids: as in the file, as stored
    t: float  # the record's own t and api_time, as written (what the chain detection reads)
    api_time: float | None
    where: str  # its JSON path, for errors


class _Builder:
    def __init__(self, session: str, block_size: int, id_offset: int, fields: bool) -> None:
        self.session = session
        self.block_size = block_size
        self.id_offset = id_offset
        self.fields = fields  # build import_fields (what an exact export needs)
        self.rows: list[_Row] = []  # in file order (depth first)
        self.agents: set[str] = set()
        # (position, start ns, thread, entry without its requests) of each subagent entry
        self.entries: list[tuple[int, int, str, dict[str, Any]]] = []
        self.empty: list[list[Any]] = []  # [[pos, entry], ...] of entries without requests
        self.top: list[tuple[str, int]] = []  # ("r", row index) | ("e", entry index), file order
        self.absolute: set[str] = set()  # subagent threads whose inner t count from the trace start

    def thread(
        self,
        requests: object,
        where: str,
        thread: str,
        base_ns: int,
        flags: tuple[str, ...],
        spawned_by: str | None = None,
    ) -> None:
        if not isinstance(requests, list):
            raise Invalid(f"{where}: expected a list of requests, got {show(requests)}")
        parent: str | None = spawned_by
        prev: tuple[list[int], tuple[int, ...]] | None = None  # the last record's block ids
        n = 0
        for i, req in enumerate(requests):
            here = f"{where}[{i}]"
            if not isinstance(req, dict):
                raise Invalid(f"{here}: expected an object, got {show(req)}")
            kind = str_at(req, "type", here)
            if kind == SUBAGENT:
                if flags:
                    raise Invalid(f"{here}: subagents nested in a subagent are not supported")
                self.subagent(req, here, i, parent)
                continue
            row = self.request(req, here, thread, n, base_ns, parent, flags, i, prev)
            prev = row.ids
            if not flags:
                self.top.append(("r", len(self.rows)))
            self.rows.append(row)
            parent = row.kw["request_id"]
            n += 1

    def subagent(
        self, entry: dict[str, Any], where: str, position: int, spawned_by: str | None
    ) -> None:
        start = num_at(entry, "t", where, required=True) or 0.0
        requests = entry.get("requests")
        if isinstance(requests, list) and not requests:
            self.empty.append([position, entry])  # kept whole: its requests are []
            return
        agent = str_at(entry, "agent_id", where) or f"subagent{len(self.agents) + 1}"
        while agent in self.agents or agent == "main":  # thread ids stay unique
            agent += "'"
        self.agents.add(agent)
        flags = [FLAG_SUBAGENT, weka_flag("agent_id", agent)]
        for key in ("subagent_type", "status"):
            value = str_at(entry, key, where)
            if value is not None:
                flags.append(weka_flag(key, value))
        duration = num_at(entry, "duration_ms", where)
        if duration is not None:
            flags.append(
                weka_flag("duration_ms", int(duration) if duration.is_integer() else duration)
            )
        thread = f"{self.session}/{agent}"
        self.top.append(("e", len(self.entries)))
        self.entries.append((position, to_ns(start), thread, {**entry, REQUESTS: None}))
        origin = _inner_origin(requests, start)
        if origin == 0.0 and start:
            self.absolute.add(thread)
        inner = f"{where}.requests"
        self.thread(requests, inner, thread, to_ns(origin), tuple(flags), spawned_by)

    def request(
        self,
        req: dict[str, Any],
        where: str,
        thread: str,
        n: int,
        base_ns: int,
        parent: str | None,
        thread_flags: tuple[str, ...],
        position: int,
        prev: tuple[list[int], tuple[int, ...]] | None,
    ) -> _Row:
        t = num_at(req, "t", where, required=True) or 0.0
        api_time = num_at(req, "api_time", where)
        ttft = num_at(req, "ttft", where)
        kind = str_at(req, "type", where)
        stop = str_at(req, "stop", where)
        flags = [*thread_flags]
        if kind is not None:
            flags.append(weka_flag("type", kind))
        input_types = strs_at(req, "input_types", where)
        output_types = strs_at(req, "output_types", where)
        flags.extend(weka_flag("in", x) for x in input_types)
        flags.extend(weka_flag("out", x) for x in output_types)
        n_in = int_at(req, "in", where)
        out = int_at(req, "out", where)
        ids = hash_ids_at(req, where, self.id_offset, prev)
        kw: dict[str, Any] = {
            "request_id": f"{thread}/{n}",
            "session_id": self.session,
            "thread_id": thread,
            "api": Api.OPENAI_CHAT,
            "request": {},
            "timing": Timing(
                start_wall_ns=base_ns + to_ns(t),
                ttft_ns=to_ns(ttft) if ttft is not None else None,
                e2e_ns=to_ns(api_time) if api_time is not None else None,
            ),
            "parent_request_id": parent,
            "model": str_at(req, "model", where),
            "response": Response(stop_reason=stop or None),
            "usage": Usage(prompt_tokens=n_in, completion_tokens=out),
            "think_time_s": num_at(req, "think_time", where),
            "api_time_s": api_time,
            "flags": tuple(flags),
            "hash_ids": ids[1],
            "hash_block_size": self.block_size,
        }
        fields: dict[str, Any] = {}
        if self.fields:
            types = (input_types, output_types)
            fields = request_fields(req, Exchange(**kw), base_ns, n_in or 0, out or 0, types)
        return _Row(kw, fields, position, thread, ids, t, api_time, where)

    # -- flat parallel agents -------------------------------------------------------------------

    def split_flat(self, ids_of: BlockIds | None) -> None:
        """Split the top-level requests into the main agent and its flat chains (a trace with
        one agent is left as it is)."""
        top = [self.rows[i] for kind, i in self.top if kind == "r"]
        if len(top) < 2:
            return
        reqs = []
        for row in top:
            usage = row.kw["usage"]
            ids = block_ids(row.ids[0]) if ids_of is None else ids_of(row.ids[0], row.where)
            reqs.append(
                ChainRequest(
                    row.position,
                    row.t,
                    row.api_time,
                    row.kw["model"],
                    usage.prompt_tokens or 0,
                    usage.completion_tokens or 0,
                    ids,
                )
            )
        split = split_flat(reqs)
        if split is not None:
            self._apply(split, {row.position: row for row in top})

    def _apply(self, split: FlatSplit, at: dict[int, _Row]) -> None:
        main_ids = self._chain(at, split.main, f"{self.session}/{MAIN}", (), None)
        first = at[split.main[0]].kw
        counts = [(WEKA_SEAMS, split.seams), (WEKA_EMPTY_HASH, split.empty)]
        first["flags"] = (*first["flags"], *(weka_flag(k, n) for k, n in counts if n))

        def spawner(position: int) -> str | None:
            """The last main request before ``position`` in the file."""
            before = [k for k, p in enumerate(split.main) if p < position]
            return main_ids[max(before)] if before else None

        taken = {*self.agents, MAIN}
        for chain in split.chains:
            name = chain.name
            while name in taken:  # thread ids stay unique
                name += "'"
            taken.add(name)
            flags = (weka_flag(WEKA_CHAIN, chain.kind),)
            parent = spawner(chain.positions[0]) or main_ids[0]
            self._chain(at, chain.positions, f"{self.session}/{name}", flags, parent)
        firsts: dict[str, _Row] = {}
        for row in self.rows:
            firsts.setdefault(row.thread, row)
        for position, _, thread, _ in self.entries:
            firsts[thread].kw["parent_request_id"] = spawner(position)

    @staticmethod
    def _chain(
        at: dict[int, _Row],
        positions: Sequence[int],
        thread: str,
        flags: tuple[str, ...],
        parent: str | None,
    ) -> list[str]:
        """Put the top-level records at ``positions`` (of ``at``) on ``thread``, in that order,
        each naming the previous (the first names ``parent``); returns their request ids."""
        ids = []
        for n, position in enumerate(positions):
            kw = at[position].kw
            rid = f"{thread}/{n}"
            kw.update(request_id=rid, thread_id=thread, parent_request_id=parent)
            if flags:
                kw["flags"] = (*kw["flags"], *flags)
            ids.append(rid)
            parent = rid
        return ids

    def exchanges(self, header: dict[str, Any]) -> tuple[Exchange, ...]:
        """The rows in time order (ties: file order), with their ``import_fields``."""
        starts = [row.kw["timing"].start_wall_ns for row in self.rows]
        order = sorted(range(len(self.rows)), key=lambda i: (starts[i], i))
        if not self.fields:
            return tuple(Exchange(**self.rows[i].kw) for i in order)
        rank = {i: k for k, i in enumerate(order)}
        first_of: dict[str, int] = {}
        for i in order:
            first_of.setdefault(self.rows[i].thread, i)
        if order:
            first = self.rows[order[0]].fields
            first[FILE] = {**header, REQUESTS: None}
            if self.id_offset:
                first[ID_OFFSET] = self.id_offset
            if self.empty:
                first[EMPTY] = self.empty
        for _, _, thread, entry in self.entries:
            self.rows[first_of[thread]].fields[ENTRY] = entry
            if thread in self.absolute:
                self.rows[first_of[thread]].fields[ABSOLUTE] = True
        if self.empty or not self._export_keeps_order(rank, first_of):
            for row in self.rows:
                row.fields[POSITION] = row.position
            for pos, _, thread, _ in self.entries:
                self.rows[first_of[thread]].fields[ENTRY_POSITION] = pos
        return tuple(
            Exchange(**self.rows[i].kw, import_fields=self.rows[i].fields or None) for i in order
        )

    def _export_keeps_order(self, rank: dict[int, int], first_of: dict[str, int]) -> bool:
        """Whether ordering by time (what the export does without positions) gives the file's
        order back: top-level records and entries, and each subagent's records."""

        def key(item: tuple[str, int]) -> tuple[int, int]:
            kind, i = item
            if kind == "r":
                return (self.rows[i].kw["timing"].start_wall_ns, rank[i])
            _, start_ns, thread, _ = self.entries[i]
            return (start_ns, rank[first_of[thread]])

        if sorted(self.top, key=key) != self.top:
            return False
        by_thread: dict[str, list[int]] = {}
        for i, row in enumerate(self.rows):
            by_thread.setdefault(row.thread, []).append(i)
        return all(sorted(rows, key=rank.__getitem__) == rows for rows in by_thread.values())


def _inner_origin(requests: object, start: float) -> float:
    """What a subagent's inner ``t`` counts from: its own start (published traces: the first
    inner ``t`` is 0) or, when its first request is not before the subagent's start, the trace's
    start (newer captures store absolute times). agentx-harness decides the same per request
    (``t + 1e-6 < entry.t`` is relative); deciding per subagent keeps one stream on one clock."""
    first = requests[0] if isinstance(requests, list) and requests else None
    t = first.get("t") if isinstance(first, dict) else None
    if isinstance(t, int | float) and not isinstance(t, bool) and t + 1e-6 >= start > 0:
        return 0.0
    return start


def parse_weka(
    doc: JSON,
    path: str | os.PathLike[str],
    *,
    id_offset: int = 0,
    import_fields: bool = True,
    flat_chains: bool = True,
    block_ids: BlockIds | None = None,
) -> WekaTrace:
    """Validate a parsed Weka document and turn it into exchanges.

    ``id_offset`` is added to every hash id (used to keep local-scope files apart);
    ``import_fields=False`` leaves out what only an exact export needs (an index's business:
    the checks are the same); ``flat_chains``: split the flat parallel agents (the module's
    docstring); ``block_ids``: what a record's ``hash_ids`` in ``doc`` stand for (an index that
    cut the arrays out reads them back for the split)."""
    p = Path(path)
    try:
        if not isinstance(doc, dict):
            raise Invalid(
                f"expected a JSON object with 'block_size' and 'requests', got {show(doc)}"
            )
        if "requests" not in doc:
            raise Invalid("no 'requests' list: not a Weka trace")
        block_size = int_at(doc, "block_size", "$")
        if not block_size:
            raise Invalid("$.block_size: must be a positive integer")
        sid = doc.get("id")
        session = (
            str(sid)
            if isinstance(sid, str | int) and not isinstance(sid, bool) and str(sid)
            else p.stem
        )
        models = tuple(strs_at(doc, "models", "$"))
        scope = str_at(doc, "hash_id_scope", "$")
        builder = _Builder(session, block_size, id_offset, import_fields)
        builder.thread(doc["requests"], "requests", f"{session}/{MAIN}", 0, ())
        if flat_chains:
            builder.split_flat(block_ids)
        tool_tokens = int_at(doc, "tool_tokens", "$", required=False)
        system_tokens = int_at(doc, "system_tokens", "$", required=False)
        exchanges = builder.exchanges(doc)
    except Invalid as exc:
        raise FormatError(str(p), str(exc)) from None
    return WekaTrace(
        path=p,
        id=session,
        block_size=block_size,
        hash_id_scope=scope,
        models=models,
        tool_tokens=tool_tokens,
        system_tokens=system_tokens,
        totals=doc.get("totals"),
        exchanges=exchanges,
    )


def _load(path: Path) -> JSON:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(str(path), f"cannot read: {exc.strerror or exc}") from None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise FormatError(str(path), f"not valid JSON ({exc})") from None


def read_weka_file(
    path: str | os.PathLike[str], *, id_offset: int = 0, flat_chains: bool = True
) -> WekaTrace:
    """Read and validate one Weka JSON file."""
    return parse_weka(_load(Path(path)), path, id_offset=id_offset, flat_chains=flat_chains)


def weka_files(path: str | os.PathLike[str]) -> list[Path]:
    """The file itself, or a directory's ``*.json`` files in name order."""
    p = Path(path)
    if not p.is_dir():
        return [p]
    files = sorted(f for f in p.iterdir() if f.suffix == ".json" and f.is_file())
    if not files:
        raise FormatError(str(p), "a directory without Weka *.json files")
    return files


def file_id_offset(doc: JSON, k: int) -> int:
    """The id offset of the k-th file of a directory (in name order): ``local``-scope ids are
    offset by ``k * 2**32`` (the first file keeps its ids), so blocks of different sessions
    never look shared; ``global``-scope ids are kept as they are."""
    scope = doc.get("hash_id_scope") if isinstance(doc, dict) else None
    return k * LOCAL_SCOPE_STRIDE if scope != "global" else 0


def read_nth_file(path: Path, k: int, *, flat_chains: bool = True) -> WekaTrace:
    """The k-th file of a directory, ids offset as :func:`file_id_offset` says."""
    doc = _load(path)
    return parse_weka(doc, path, id_offset=file_id_offset(doc, k), flat_chains=flat_chains)


def iter_weka(
    path: str | os.PathLike[str],
    *,
    on_bad: Callable[[FormatError], None] | None = None,
    progress: Progress | None = None,
    flat_chains: bool = True,
) -> Iterator[Exchange]:
    """Exchanges of a Weka file, or of every ``*.json`` in a directory (one session per file,
    read one at a time; ids offset as :func:`read_nth_file` says). A bad file raises
    :class:`FormatError`, or, with ``on_bad``, is passed to it and skipped. ``progress``
    advances in files; ``flat_chains``: as :func:`parse_weka`."""
    files = weka_files(path)
    prog = progress or Progress()
    prog.phase(None, total=len(files), unit="files")
    for k, f in enumerate(files):
        try:
            trace = read_nth_file(f, k, flat_chains=flat_chains)
        except FormatError as bad:
            if on_bad is None:
                raise
            on_bad(bad)
            prog.advance()
            continue
        yield from trace.exchanges
        prog.advance()
