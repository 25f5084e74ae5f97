"""``agentx convert``: import Weka / Mooncake / agentx traces, export agentx / Mooncake / Weka.

Importing is :mod:`agentx.formats` (format auto-detected). Hash-only rows (Weka, Mooncake)
stay hash-only: the trace stores their block ids (delta-encoded, trace format v1.1) and replay
gives them text when it sends them. ``with_text`` (``agentx convert --with-text``) instead
stores a prompt made of synthetic text laid out block by block from the hash ids
(:func:`agentx.prefixcache.synth.hash_id_text`): exactly ``usage.prompt_tokens`` cl100k tokens, where an
identical hash id always gives an identical block; the hash ids stay on the exchange.

The output is one Parquet file, or a dataset directory (``dataset=True``: one file per Weka
source file, parts of many exchanges otherwise). A Weka directory is imported file by file,
``jobs`` files at a time (:mod:`agentx.formats.ingest`); everything else streams.

Bad input stops at the first bad record with the file and the record named (exit 1). With
``skip_bad`` a bad Mooncake line, or a bad Weka file in a directory, is skipped and counted.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from agentx.core.errors import FormatError, UsageError
from agentx.core.models import Exchange
from agentx.core.progress import Progress
from agentx.formats.synthetic import with_text

__all__ = [
    "TARGETS",
    "ConvertReport",
    "Skipped",
    "Target",
    "convert",
    "read_exchanges",
    "with_text",
]
EXPORT_SKIPS = frozenset({"chunk_offsets_ns", "credentials", "response_message"})


class Target(StrEnum):
    """``--to``: the format a conversion writes."""

    AGENTX = "agentx"
    MOONCAKE = "mooncake"
    WEKA = "weka"


TARGETS = tuple(Target)


@dataclass(slots=True)
class Skipped:
    count: int = 0
    first: str | None = None  # the first error, as the strict mode would have reported it
    errors: list[str] = field(default_factory=list)

    def add(self, exc: FormatError | str) -> None:
        self.count += 1
        if self.first is None:
            self.first = str(exc)
        if len(self.errors) < 20:
            self.errors.append(str(exc))


@dataclass(frozen=True, slots=True)
class ConvertReport:
    input: str
    input_format: str
    output: str
    output_format: str
    exchanges: int  # read
    written: int  # exchanges (agentx), lines (mooncake), sessions (weka)
    synthesized: int  # hash-only exchanges given synthetic text (--with-text)
    skipped_bad: int
    first_bad: str | None
    dataset: bool = False  # the output is a directory of Parquet files

    def to_json(self) -> dict[str, object]:
        return {
            "schema": "agentx.convert/1",
            "input": self.input,
            "input_format": self.input_format,
            "output": self.output,
            "output_format": self.output_format,
            "exchanges": self.exchanges,
            "written": self.written,
            "synthesized": self.synthesized,
            "skipped_bad": self.skipped_bad,
            "first_bad": self.first_bad,
            "dataset": self.dataset,
        }


def read_exchanges(
    path: str | os.PathLike[str],
    *,
    skip_bad: bool = False,
    skipped: Skipped | None = None,
    progress: Progress | None = None,
    columns: Collection[str] | None = None,
    flat_chains: bool = True,
) -> Iterator[Exchange]:
    """Exchanges of any supported trace; with ``skip_bad``, bad records are skipped into
    ``skipped`` instead of raising. ``columns``: of an agentx trace, read only those;
    ``flat_chains``: as :func:`agentx.formats.load_exchanges`."""
    from agentx.formats import detect_format, load_exchanges

    fmt = detect_format(path)
    if not skip_bad or fmt == "agentx":
        return load_exchanges(
            path, shared=True, columns=columns, progress=progress, flat_chains=flat_chains
        )
    sink = skipped if skipped is not None else Skipped()
    if fmt == "weka":
        from agentx.formats.weka import iter_weka

        return iter_weka(path, on_bad=sink.add, progress=progress, flat_chains=flat_chains)
    if fmt == "hf":
        from agentx.formats.hf import iter_hf

        return iter_hf(path, on_bad=sink.add, flat_chains=flat_chains)
    from agentx.formats.mooncake import iter_mooncake

    return iter_mooncake(path, on_bad=sink.add, progress=progress)


def convert(
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    *,
    to: Target | str = Target.AGENTX,
    skip_bad: bool = False,
    synthesize: bool = False,
    dataset: bool = False,
    jobs: int = 1,
    progress: Progress | None = None,
    force: bool = False,
    flat_chains: bool = True,
) -> ConvertReport:
    """Convert ``input_path`` (any supported format) into ``output_path`` in format ``to``.

    ``synthesize`` stores synthetic text for hash-only rows (``--with-text``); ``dataset``
    writes a directory of Parquet files; ``jobs`` imports a Weka directory with that many
    processes. ``progress`` is told how far the reading is. ``flat_chains``: split Weka
    traces' flat parallel agents into threads (:func:`agentx.formats.weka.parse_weka`)."""
    from agentx.formats import detect_format
    from agentx.formats.export import write_mooncake, write_weka
    from agentx.store.schema import COLUMNS

    if to not in TARGETS:
        raise UsageError(f"--to must be one of {', '.join(TARGETS)}, not {to!r}")
    to = Target(to)
    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if dataset and to != "agentx":
        raise UsageError("a dataset directory is an agentx trace: use --to agentx")
    src, dst = Path(input_path), Path(output_path)
    if dst.exists() and src.exists() and src.resolve() == dst.resolve():
        raise UsageError("convert never modifies its input: give -o another path")
    prog = progress or Progress()
    fmt = detect_format(src)
    meta: dict[str, str] = {"converted_from": fmt}
    if to == "agentx" and fmt == "weka" and src.is_dir():
        from agentx.formats.ingest import import_weka_dir

        s = import_weka_dir(
            src,
            dst,
            dataset=dataset,
            jobs=jobs,
            synthesize=synthesize,
            skip_bad=skip_bad,
            metadata=meta,
            progress=prog,
            force=force,
            flat_chains=flat_chains,
        )
        return ConvertReport(
            input=str(src),
            input_format=fmt,
            output=str(dst),
            output_format=to,
            exchanges=s.exchanges,
            written=s.exchanges,
            synthesized=s.synthesized,
            skipped_bad=s.skipped,
            first_bad=s.first_bad,
            dataset=dataset,
        )
    skipped = Skipped()
    counts = {"read": 0, "synth": 0}
    prog.phase("reading")

    def stream() -> Iterator[Exchange]:
        # an export never reads the chunk timings, credentials or assistant messages
        columns = None if to == "agentx" else [c for c in COLUMNS if c not in EXPORT_SKIPS]
        for ex in read_exchanges(
            src,
            skip_bad=skip_bad,
            skipped=skipped,
            progress=prog,
            columns=columns,
            flat_chains=flat_chains,
        ):
            counts["read"] += 1
            prog.count("exchanges")
            yield ex

    if to == "agentx":
        written = _write_agentx(stream(), dst, synthesize, counts, meta, dataset, force)
    elif to == "mooncake":
        written = write_mooncake(stream(), dst, force=force)
    else:
        sizes = _session_rows(src) if fmt == "agentx" else None
        written = write_weka(stream(), dst, force=force, session_rows=sizes)
    return ConvertReport(
        input=str(src),
        input_format=fmt,
        output=str(dst),
        output_format=to,
        exchanges=counts["read"],
        written=written,
        synthesized=counts["synth"],
        skipped_bad=skipped.count,
        first_bad=skipped.first,
        dataset=dataset,
    )


def _session_rows(path: Path) -> dict[str, int]:
    """Rows per session of an agentx trace, from one small column: lets the Weka export write
    each session as soon as it is complete."""
    from agentx.store import iter_records

    counts: dict[str, int] = {}
    for r in iter_records(path, ["session_id"]):
        counts[r["session_id"]] = counts.get(r["session_id"], 0) + 1
    return counts


def _write_agentx(
    exchanges: Iterator[Exchange],
    dst: Path,
    synthesize: bool,
    counts: dict[str, int],
    metadata: dict[str, str],
    dataset: bool,
    force: bool,
) -> int:
    from agentx.store.dataset import open_writer

    with open_writer(dst, dataset=dataset, metadata=metadata, force=force) as writer:
        for ex in exchanges:
            if synthesize:
                new = with_text(ex)
                if new is not ex:
                    counts["synth"] += 1
                ex = new
            writer.append(ex)
    return writer.count
