"""The secret scan of a packed dataset's files, with scrub's patterns
(:class:`agentx.scrub.secrets.SecretRedactor`): every string of every text column of the
Parquet files, every line of the JSONL exports. ``pack`` records the result in the manifest
and the card; ``verify`` scans again and compares."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from agentx.dataset.gate import SHOWN, families
from agentx.results.dataset import ConfigEntry, SecretScan
from agentx.scrub.secrets import SecretRedactor


def _values(path: Path) -> Iterator[tuple[str, str]]:
    """``(where, text)`` of a packed file."""
    if path.suffix == ".parquet":
        from agentx.store.tables import iter_text_values

        for column, row, value in iter_text_values(path):
            yield f"{column} row {row}", value
        return
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            yield f"line {n}", line


def scan_files(root: Path, files: Iterable[str]) -> SecretScan:
    """Scan ``files`` (paths relative to ``root``, ``/``-separated)."""
    redactor = SecretRedactor()
    values = found = scanned = 0
    findings: list[str] = []
    for name in files:
        scanned += 1
        for where, text in _values(root.joinpath(*name.split("/"))):
            values += 1
            for family, _, _ in redactor.find(text):
                found += 1
                if len(findings) < SHOWN:
                    findings.append(f"{name}: {where}: {family}")
    return SecretScan(families(), scanned, values, found, tuple(findings))


def scanned(configs: Iterable[ConfigEntry]) -> list[str]:
    """The files a scan reads: every config's, and the exports."""
    files = [f for c in configs for f in (*c.files, *((c.export,) if c.export else ()))]
    return list(dict.fromkeys(files))
