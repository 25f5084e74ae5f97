"""``agentx dataset pack TRACES... -o DIR``: the gate, then the layout of :mod:`agentx.dataset.layout`.

Steps: every row through the gate (:mod:`agentx.dataset.gate`: nothing is written when it
refuses); the configs written from the inputs in one pass; the ``all`` config measured
(:mod:`agentx.dataset.figures`) and exported as Weka rows and Mooncake lines; the charts; the
secret scan of the packed files (a finding refuses the pack too); the card and the manifest.
Everything is written into a hidden directory beside ``DIR`` and renamed into place once
complete, so ``DIR`` is never half-written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from agentx import __version__
from agentx.core.errors import UsageError
from agentx.core.models import Exchange
from agentx.core.progress import Progress
from agentx.dataset.card import TAGS, TASK_CATEGORIES, plot_paths, render_card
from agentx.dataset.figures import Measured, measure
from agentx.dataset.gate import GateRefused, GateResult, checks, run_gate
from agentx.dataset.layout import (
    DATA,
    DEFAULT_CONFIG,
    FOREIGN,
    MOONCAKE_CONFIG,
    MOONCAKE_FILE,
    PLOTS,
    README,
    SPLIT,
    WEKA_CONFIG,
    WEKA_FILE,
    ConfigSpec,
    config_specs,
    shard_name,
)
from agentx.dataset.options import PackOptions
from agentx.dataset.plots import write_plots
from agentx.dataset.scan import scan_files, scanned
from agentx.formats import load_exchanges
from agentx.prefixcache.theory import is_model_call
from agentx.results.dataset import (
    MANIFEST,
    CardFields,
    ConfigEntry,
    FileEntry,
    Manifest,
    Privacy,
)
from agentx.store import TraceWriter, iter_exchanges
from agentx.store.dataset import packed_manifest
from agentx.store.schema import FORMAT

PACKED_BY = "agentx.dataset/1"  # the trace metadata of a packed file says who packed it
CHUNK = 1 << 20


class _ConfigWriter:
    """One config's files: a new trace file every ``rows_per_file`` rows, named
    ``<split>-NNNNN-of-MMMMM.parquet`` once the count is known (:meth:`close`)."""

    def __init__(
        self,
        root: Path,
        spec: ConfigSpec,
        rows_per_file: int,
        metadata: dict[str, str],
        created_at: str,
    ) -> None:
        self.spec = spec
        self.directory = root / DATA / spec.name
        self._rows_per_file = rows_per_file
        self._metadata = metadata
        self._created_at = created_at
        self._writer: TraceWriter | None = None
        self._parts: list[Path] = []
        self.rows = 0
        self.requests = 0
        self.sessions: set[str] = set()

    def append(self, ex: Exchange) -> None:
        if self._writer is None or self._writer.count >= self._rows_per_file:
            self._roll()
        assert self._writer is not None
        self._writer.append(ex)
        self.rows += 1
        self.sessions.add(ex.session_id)
        if is_model_call(ex):
            self.requests += 1

    def _roll(self) -> None:
        if self._writer is not None:
            self._writer.close()
        part = self.directory / f".part-{len(self._parts):05d}.parquet"
        self._writer = TraceWriter(part, metadata=self._metadata, created_at=self._created_at)
        self._parts.append(part)

    def close(self, root: Path) -> ConfigEntry:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        names = []
        for i, part in enumerate(self._parts):
            target = self.directory / shard_name(SPLIT, i, len(self._parts))
            os.replace(part, target)
            names.append(target.relative_to(root).as_posix())
        return ConfigEntry(
            name=self.spec.name,
            description=self.spec.description,
            files=tuple(names),
            rows=self.rows,
            sessions=len(self.sessions),
            requests=self.requests,
            format="agentx",
        )

    def abort(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.abort()
            self._writer = None


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def packed_paths(root: Path) -> list[str]:
    """Every file of a packed directory but the manifest (and what the hub adds), sorted,
    ``/``-separated; hidden files and folders (a download's cache) are not the dataset's."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            rel = Path(dirpath, name).relative_to(root).as_posix()
            if name.startswith(".") or rel == MANIFEST or name in FOREIGN:
                continue
            found.append(rel)
    return sorted(found)


def file_entries(root: Path) -> tuple[FileEntry, ...]:
    out = []
    for rel in packed_paths(root):
        path = root.joinpath(*rel.split("/"))
        out.append(FileEntry(rel, path.stat().st_size, sha256_of(path)))
    return tuple(out)


def _check_output(out: Path, force: bool) -> None:
    if not out.exists():
        return
    if not out.is_dir():
        raise UsageError(f"{out} exists and is not a directory")
    empty = not any(out.iterdir())
    if empty:
        return
    if packed_manifest(out) is None:
        raise UsageError(f"{out} exists and is no packed dataset: choose another directory")
    if not force:
        raise UsageError(f"{out} already holds a packed dataset: pass --force to replace it")


def _metadata(gate: GateResult) -> dict[str, str]:
    meta = {"packed_by": PACKED_BY}
    if gate.scrubbed_by is not None:
        meta["scrubbed_by"] = gate.scrubbed_by
    if gate.anonymized_by is not None:
        meta["anonymized_by"] = gate.anonymized_by
    return meta


def _write_configs(
    inputs: Sequence[str | os.PathLike[str]],
    root: Path,
    specs: Sequence[ConfigSpec],
    gate: GateResult,
    options: PackOptions,
    created_at: str,
    progress: Progress,
) -> list[ConfigEntry]:
    meta = _metadata(gate)
    writers = [_ConfigWriter(root, s, options.rows_per_file, meta, created_at) for s in specs]
    progress.phase("packing", total=gate.rows, unit="rows")
    try:
        for path in inputs:
            for ex in load_exchanges(path, shared=True):
                facts = gate.sessions[ex.session_id]
                for w in writers:
                    if w.spec.keeps(ex, facts):
                        w.append(ex)
                progress.advance(1)
        entries = [w.close(root) for w in writers]
    except BaseException:
        for w in writers:
            w.abort()
        raise
    return [e for e in entries if e.rows or e.name == DEFAULT_CONFIG]


def _export_config(
    root: Path,
    name: str,
    export: str,
    description: str,
    sessions: int | None,
    requests: int,
    json_lists: tuple[str, ...] = (),
) -> ConfigEntry:
    """An export (``traces.jsonl``, ``mooncake.jsonl``) as a config of Parquet rows too:
    ``datasets`` reads one format per repository, so a config is Parquet whatever its rows."""
    from agentx.store.tables import jsonl_to_parquet

    target = root / DATA / name / shard_name(SPLIT, 0, 1)
    target.parent.mkdir(parents=True, exist_ok=True)
    rows = jsonl_to_parquet(root / export, target, json_lists=json_lists)
    return ConfigEntry(
        name,
        description,
        (target.relative_to(root).as_posix(),),
        rows=rows,
        sessions=sessions,
        requests=requests,
        format=name,
        export=export,
    )


def _exports(
    root: Path, gate: GateResult, options: PackOptions, measured: Measured
) -> list[ConfigEntry]:
    from agentx.formats.export import write_mooncake
    from agentx.formats.weka import write_weka_jsonl

    source = root / DATA / DEFAULT_CONFIG
    out = []
    if options.weka:
        rows = {sid: f.rows for sid, f in gate.sessions.items()}
        n = write_weka_jsonl(
            iter_exchanges(source, shared=True), root / WEKA_FILE, session_rows=rows
        )
        what = f"the sessions of {DEFAULT_CONFIG} as Weka rows, {WEKA_FILE} (agentx-harness)"
        requests = measured.stats.requests
        out.append(  # a session's requests mix records and subagent entries: JSON each
            _export_config(root, WEKA_CONFIG, WEKA_FILE, what, n, requests, ("requests",))
        )
    if options.mooncake:
        n = write_mooncake(iter_exchanges(source, shared=True), root / MOONCAKE_FILE)
        what = f"the model calls of {DEFAULT_CONFIG} as Mooncake lines, {MOONCAKE_FILE}"
        out.append(_export_config(root, MOONCAKE_CONFIG, MOONCAKE_FILE, what, None, n))
    return out


def manifest_for(
    configs: Sequence[ConfigEntry],
    measured: Measured,
    privacy: Privacy,
    card: CardFields,
    plots: Sequence[str],
    created_at: str,
) -> Manifest:
    """The manifest of what was packed, before its files are listed."""
    return Manifest(
        agentx_version=__version__,
        trace_format=FORMAT,
        created_at=created_at,
        card=card,
        default_config=DEFAULT_CONFIG,
        split=SPLIT,
        configs=tuple(configs),
        stats=measured.stats,
        figures=measured.figures,
        captured=measured.captured,
        privacy=privacy,
        plots=tuple(plots),
        files=(),
    )


def pack(
    inputs: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    options: PackOptions | None = None,
    *,
    force: bool = False,
    progress: Progress | None = None,
) -> Manifest:
    """Pack ``inputs`` (traces in any format agentx reads, in order) into the directory
    ``output``; returns its manifest. Raises :class:`GateRefused` (nothing written) when a row
    is refused, :class:`UsageError` for an output that is not free (``force`` replaces a packed
    dataset)."""
    if not inputs:
        raise UsageError("give at least one trace to pack")
    options = options or PackOptions()
    out = Path(output)
    _check_output(out, force)
    prog = progress or Progress()
    gate = run_gate(inputs, options.with_text, prog)
    if not gate.sessions:
        raise UsageError("nothing to pack: the inputs hold no row")
    specs = config_specs(
        gate.sessions,
        context_limits=options.context_configs,
        main=options.main_config,
        per_agent=options.agent_configs,
    )
    created_at = datetime.now(UTC).isoformat(timespec="seconds")
    stage = out.parent / f".{out.name}.packing.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    stage.mkdir(parents=True)
    try:
        configs = _write_configs(inputs, stage, specs, gate, options, created_at, prog)
        prog.phase("measuring", total=None, unit="")
        measured = measure(stage / DATA / DEFAULT_CONFIG)
        prog.phase("exporting", total=None, unit="")
        configs += _exports(stage, gate, options, measured)
        names = write_plots(measured, stage / PLOTS) if options.plots else []
        prog.phase("scanning", total=None, unit="")
        scan = scan_files(stage, scanned(configs))
        if scan.found:
            raise GateRefused(
                [f"secret scan of the packed files: {f}" for f in scan.findings], scan.found
            )
        privacy = Privacy(gate.text, gate.scrubbed_by, gate.anonymized_by, checks(), scan)
        card = CardFields(
            pretty_name=options.name or out.resolve().name,
            license=options.license,
            description=options.description,
            repo=options.repo,
            tags=TAGS,
            task_categories=TASK_CATEGORIES,
        )
        plots = plot_paths([p.stem for p in names])
        manifest = manifest_for(configs, measured, privacy, card, plots, created_at)
        (stage / README).write_text(render_card(manifest), encoding="utf-8")
        manifest = replace(manifest, files=file_entries(stage))
        (stage / MANIFEST).write_bytes(manifest_bytes(manifest))
        _into_place(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return manifest


def manifest_bytes(manifest: Manifest) -> bytes:
    import orjson

    return orjson.dumps(manifest.to_json(), option=orjson.OPT_INDENT_2) + b"\n"


def _into_place(stage: Path, out: Path) -> None:
    """``stage`` renamed to ``out``; an existing ``out`` (empty, or a packed dataset being
    replaced) is moved aside first and removed once the new one is in place."""
    if not out.exists():
        os.replace(stage, out)
        return
    aside = out.parent / f".{out.name}.replaced.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    os.replace(out, aside)
    os.replace(stage, out)
    shutil.rmtree(aside, ignore_errors=True)
