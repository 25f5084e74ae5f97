"""``agentx dataset verify DIR|hf://datasets/ORG/NAME@REV``: is the dataset what its manifest and
card say?

- **checksums**: every file the manifest lists has its size and sha256; no file is missing and
  none is there that it does not list (what the hub adds, ``.gitattributes``, aside);
- **schema**: every config's files read as its format says (agentx trace files of a known
  version, Weka rows, Mooncake lines) and hold the rows, sessions and model calls it counts;
- **statistics**: the default config measured again (:func:`agentx.dataset.figures.measure`)
  gives the manifest's figures, the packed files scanned again give its secret scan, and the
  card's front matter and statistics block rendered from what was recomputed are the
  ``README.md``'s (the rest of its text is held by its checksum).

Every difference is listed (none: the dataset verifies); nothing stops at the first.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentx.core.errors import AgentxError
from agentx.core.progress import Progress
from agentx.dataset.card import STATS_BEGIN, STATS_END, front_matter, stats_block
from agentx.dataset.figures import measure
from agentx.dataset.layout import README
from agentx.dataset.pack import packed_paths, sha256_of
from agentx.dataset.scan import scan_files, scanned
from agentx.prefixcache.theory import is_model_call
from agentx.results.dataset import MANIFEST, ConfigEntry, Manifest, VerifyReport
from agentx.store.dataset import packed_manifest

COUNT_COLUMNS = ("session_id", "api", "flags")


def _diff(label: str, got: Any, want: Any, out: list[str], path: str = "") -> None:
    """The keys where two JSON values differ, as ``label.key: manifest X, recomputed Y``."""
    if isinstance(got, Mapping) and isinstance(want, Mapping):
        for k in dict.fromkeys([*want, *got]):
            _diff(label, got.get(k), want.get(k), out, f"{path}.{k}" if path else str(k))
        return
    if got != want:
        out.append(f"{label}{'.' + path if path else ''}: manifest {want!r}, recomputed {got!r}")


def _files(root: Path, m: Manifest, out: list[str]) -> int:
    listed = {f.path: f for f in m.files}
    present = set(packed_paths(root))
    for name, entry in sorted(listed.items()):
        path = root.joinpath(*name.split("/"))
        if name not in present:
            out.append(f"{name}: missing")
            continue
        size = path.stat().st_size
        if size != entry.size_bytes:
            out.append(f"{name}: {size} bytes, the manifest says {entry.size_bytes}")
        elif sha256_of(path) != entry.sha256:
            out.append(f"{name}: sha256 differs from the manifest's")
    out.extend(f"{name}: not in the manifest" for name in sorted(present - set(listed)))
    return len(present)


def _agentx_counts(root: Path, cfg: ConfigEntry) -> tuple[int, int, int]:
    from agentx.store import iter_exchanges, open_trace

    rows = requests = 0
    sessions: set[str] = set()
    for name in cfg.files:
        path = root.joinpath(*name.split("/"))
        open_trace(path)  # a known format version, or its error
        for ex in iter_exchanges(path, columns=COUNT_COLUMNS):
            rows += 1
            sessions.add(ex.session_id)
            requests += is_model_call(ex)
    return rows, len(sessions), requests


def _weka_counts(root: Path, cfg: ConfigEntry) -> tuple[int, int, int]:
    """The Weka rows counted in the config's Parquet files, and again in its export."""
    from agentx.formats.hf import exchanges_of

    found = []
    sources = [[root.joinpath(*f.split("/")) for f in cfg.files]]
    if cfg.export is not None:
        sources.append([root / cfg.export])
    for files in sources:
        sessions: set[str] = set()
        requests = 0
        for ex in exchanges_of(files):
            sessions.add(ex.session_id)
            requests += is_model_call(ex)
        found.append((len(sessions), len(sessions), requests))
    if len(set(found)) > 1:
        raise AgentxError(f"{cfg.export} and {', '.join(cfg.files)} hold different rows")
    return found[0]


def _mooncake_counts(root: Path, cfg: ConfigEntry) -> tuple[int, int | None, int]:
    """The Mooncake lines counted in the config's Parquet files, and again in its export."""
    from agentx.formats.mooncake import iter_mooncake
    from agentx.store.tables import parquet_rows

    n = sum(parquet_rows(root.joinpath(*f.split("/"))) for f in cfg.files)
    if cfg.export is not None:
        lines = sum(1 for _ in iter_mooncake(root / cfg.export))
        if lines != n:
            raise AgentxError(f"{cfg.export} holds {lines} lines, {', '.join(cfg.files)} {n}")
    return n, None, n


COUNTERS: dict[str, Callable[[Path, ConfigEntry], tuple[int, int | None, int]]] = {
    "agentx": _agentx_counts,
    "weka": _weka_counts,
    "mooncake": _mooncake_counts,
}


def _configs(root: Path, m: Manifest, out: list[str]) -> tuple[tuple[ConfigEntry, ...], int]:
    """Each config recounted from its files (the manifest's entry when it cannot be read)."""
    recounted = []
    rows_read = 0
    for cfg in m.configs:
        counter = COUNTERS.get(cfg.format)
        if counter is None:
            out.append(f"config {cfg.name}: unknown format {cfg.format!r}")
            recounted.append(cfg)
            continue
        try:
            rows, sessions, requests = counter(root, cfg)
        except AgentxError as exc:
            out.append(f"config {cfg.name}: {exc}")
            recounted.append(cfg)
            continue
        rows_read += rows
        got = replace(cfg, rows=rows, sessions=sessions, requests=requests)
        for key in ("rows", "sessions", "requests"):
            if getattr(got, key) != getattr(cfg, key):
                out.append(
                    f"config {cfg.name}: {key} {getattr(got, key)}, the manifest says "
                    f"{getattr(cfg, key)}"
                )
        recounted.append(got)
    return tuple(recounted), rows_read


def _card(root: Path, expected: Manifest, out: list[str]) -> None:
    """The card's parts the data decides, rendered again: the front matter (configs, size) and
    the statistics block. The rest of its text is the renderer's of the agentx that packed it,
    held by the checksum."""
    path = root / README
    if not path.is_file():
        return  # reported as missing by the checksums
    text = path.read_text(encoding="utf-8", errors="replace")
    if not text.startswith(front_matter(expected)):
        out.append(f"{README}: the front matter differs from the one the manifest gives")
    want = stats_block(expected)
    start, end = text.find(STATS_BEGIN), text.find(STATS_END)
    if start < 0 or end < start:
        out.append(f"{README}: no statistics block ({STATS_BEGIN} ... {STATS_END})")
        return
    have = text[start : end + len(STATS_END)] + "\n"
    if have == want:
        return
    for a, b in zip(have.splitlines(), want.splitlines(), strict=False):
        if a != b:
            out.append(f"{README} statistics: {a[:120]!r}, the data gives {b[:120]!r}")
            return
    out.append(f"{README} statistics: the block differs from the one the data gives")


def verify_dir(
    root: Path, *, label: str | None = None, revision: str | None = None
) -> VerifyReport:
    """Verify a packed directory (see the module)."""
    out: list[str] = []
    name = label or os.fspath(root)
    try:
        m = packed_manifest(root)
    except AgentxError as exc:
        return VerifyReport(name, revision, 0, 0, (str(exc),))
    if m is None:
        return VerifyReport(name, revision, 0, 0, (f"{MANIFEST}: none of schema agentx.dataset/1",))
    files = _files(root, m, out)
    configs, rows = _configs(root, m, out)
    default = m.config(m.default_config)
    if default is None or default.format != "agentx":
        out.append(f"default config {m.default_config!r}: not an agentx config of the manifest")
        return VerifyReport(name, revision, files, rows, tuple(out))
    expected = replace(m, configs=configs)
    try:
        measured = measure(root.joinpath(*default.files[0].split("/")).parent)
        _diff("stats", measured.stats.to_json(), m.stats.to_json(), out)
        _diff("figures", measured.figures.to_json(), m.figures.to_json(), out)
        _diff("captured", measured.captured.to_json(), m.captured.to_json(), out)
        expected = replace(
            expected, stats=measured.stats, figures=measured.figures, captured=measured.captured
        )
    except AgentxError as exc:
        out.append(f"config {default.name}: cannot measure: {exc}")
    try:
        scan = scan_files(root, scanned(m.configs))
        _diff("secret_scan", scan.to_json(), m.privacy.secret_scan.to_json(), out)
        if scan.found:
            out.append(f"secret scan: {scan.found} found: " + "; ".join(scan.findings))
        expected = replace(expected, privacy=replace(m.privacy, secret_scan=scan))
    except (AgentxError, OSError) as exc:
        out.append(f"secret scan: {exc}")
    _card(root, expected, out)
    return VerifyReport(name, revision, files, rows, tuple(out))


def verify(target: str | os.PathLike[str], progress: Progress | None = None) -> VerifyReport:
    """Verify a packed directory, or a hub repository at a revision (downloaded whole into the
    Hugging Face cache; the commit verified is the report's ``revision``)."""
    from agentx.formats.hf import download, is_hf_url

    prog = progress or Progress()
    prog.phase("verifying", total=None, unit="")
    if is_hf_url(target):
        local = download(target, whole=True)
        return verify_dir(local, label=os.fspath(target), revision=local.name)
    return verify_dir(Path(target))
