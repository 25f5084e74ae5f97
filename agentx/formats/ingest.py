"""Importing a directory of Weka files into an agentx trace, file by file, in parallel.

Each source file becomes one trace file (a *part*) of its own, written by its own
:class:`agentx.store.TraceWriter`: memory and the write-ahead spool hold one session at a time,
and ``jobs`` processes import files side by side. The parts are the output when it is a
dataset directory (``<source stem>.parquet`` each); for a single-file output they are staged
next to it and concatenated in source order (:func:`agentx.store.dataset.concat_traces`).
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from agentx.core.errors import FormatError, TraceError
from agentx.core.outputs import check_output
from agentx.core.progress import Progress
from agentx.formats.synthetic import with_text
from agentx.formats.weka import read_nth_file, weka_files
from agentx.store import spool_path
from agentx.store.dataset import TraceConcat


@dataclass(frozen=True, slots=True)
class PartResult:
    index: int
    part: Path | None  # None: the source was bad and skipped
    session: str | None
    exchanges: int
    synthesized: int
    error: str | None  # the FormatError, as text, of a skipped source


@dataclass(frozen=True, slots=True)
class _Job:
    index: int  # the source's index in the directory: its local-scope id offset
    source: Path
    part: Path
    trace_id: str
    metadata: dict[str, str]
    synthesize: bool
    skip_bad: bool
    flat_chains: bool = True


def import_file(job: _Job) -> PartResult:
    """One Weka file -> one trace file (run in a worker process, or inline)."""
    from agentx.store import TraceWriter

    try:
        trace = read_nth_file(job.source, job.index, flat_chains=job.flat_chains)
    except FormatError as exc:
        if not job.skip_bad:
            raise
        return PartResult(job.index, None, None, 0, 0, str(exc))
    synthesized = 0
    with TraceWriter(job.part, trace_id=job.trace_id, metadata=job.metadata) as writer:
        for ex in trace.exchanges:
            if job.synthesize:
                new = with_text(ex)
                synthesized += new is not ex
                ex = new
            writer.append(ex)
    return PartResult(job.index, job.part, trace.id, writer.count, synthesized, None)


def _results(jobs: list[_Job], workers: int) -> Iterator[PartResult]:
    """Results as they complete (inline when ``workers`` <= 1). Workers are spawned, not
    forked: the parent may run threads (progress), which a fork would copy mid-lock."""
    if workers <= 1 or len(jobs) <= 1:
        yield from map(import_file, jobs)
        return
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        pending: set[Future[PartResult]] = set()
        queue = iter(jobs)
        for job in queue:  # keep at most 2 jobs per worker queued: results stream back
            pending.add(pool.submit(import_file, job))
            if len(pending) >= 2 * workers:
                break
        while pending:
            done = next(iter(_wait_one(pending)))
            pending.discard(done)
            yield done.result()
            nxt = next(queue, None)
            if nxt is not None:
                pending.add(pool.submit(import_file, nxt))


def _wait_one(pending: set[Future[PartResult]]) -> set[Future[PartResult]]:
    from concurrent.futures import FIRST_COMPLETED, wait

    done, _ = wait(pending, return_when=FIRST_COMPLETED)
    return done


@dataclass(slots=True)
class ImportSummary:
    exchanges: int = 0
    synthesized: int = 0
    skipped: int = 0
    first_bad: str | None = None
    errors: tuple[str, ...] = ()


def import_weka_dir(
    src: Path,
    dst: Path,
    *,
    dataset: bool,
    jobs: int = 1,
    synthesize: bool = False,
    skip_bad: bool = False,
    metadata: dict[str, str] | None = None,
    progress: Progress | None = None,
    force: bool = False,
    flat_chains: bool = True,
) -> ImportSummary:
    """Import every ``*.json`` of ``src`` into ``dst``: a dataset directory (one
    ``<stem>.parquet`` per source, added to what is there, nothing replaced) or one trace file
    (an existing one replaced only with ``force``, once the new one is complete).
    ``flat_chains``: as :func:`agentx.formats.weka.parse_weka`."""
    prog = progress or Progress()
    files = weka_files(src)
    if not dataset:
        check_output(dst, force=force)
        if spool_path(dst).exists():
            raise TraceError(
                f"{dst}: a writer that died left {spool_path(dst).name}; run `agentx recover "
                f"{dst}` first (or delete the spool to discard it)"
            )
    trace_id = uuid.uuid4().hex
    meta = metadata or {}
    first = 0
    if dataset:
        dst.mkdir(parents=True, exist_ok=True)
        first = _existing_parts(dst)
        clash = next(
            (dst / f"{f.stem}.parquet" for f in files if (dst / f"{f.stem}.parquet").exists()), None
        )
        if clash is not None:
            raise TraceError(f"{clash} exists: convert never overwrites a dataset's files")
    # parts are staged under a hidden name, appended to the output as they come (one file), or
    # moved into place at the end (a dataset): a failed import leaves nothing behind
    stage = dst.parent / f".{dst.name}.parts.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    stage.mkdir(parents=True)
    summary = ImportSummary()
    sessions: dict[str, str] = {}
    errors: list[str] = []
    ready: dict[int, Path | None] = {}  # finished parts not yet appended (by index)
    following = first  # the next index to append: parts go in source order
    done: list[Path] = []  # a dataset's parts, moved into place once all are there
    out = None if dataset else TraceConcat(dst, trace_id=trace_id, metadata=meta)
    try:
        todo = [
            _Job(
                first + k,
                f,
                stage / f"{f.stem}.parquet",
                trace_id,
                meta,
                synthesize,
                skip_bad,
                flat_chains,
            )
            for k, f in enumerate(files)
        ]
        prog.phase("importing", total=len(todo), unit="files")
        for r in _results(todo, jobs):
            prog.advance()
            ready[r.index] = r.part
            if r.part is None:
                summary.skipped += 1
                summary.first_bad = summary.first_bad or r.error
                errors.append(r.error or "")
            else:
                summary.exchanges += r.exchanges
                summary.synthesized += r.synthesized
                prog.count("exchanges", r.exchanges)
                _check_unique(sessions, r, src)
            while following in ready:  # in order, as soon as they are there
                part = ready.pop(following)
                following += 1
                if part is None:
                    continue
                if out is None:
                    done.append(part)
                else:
                    out.add(part)
                    part.unlink()
        if out is not None:
            out.close()
        for part in done:
            os.replace(part, dst / part.name)
    except BaseException:
        if out is not None:
            out.abort()
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    summary.errors = tuple(errors[:20])
    return summary


def _check_unique(sessions: dict[str, str], r: PartResult, src: Path) -> None:
    """Two files with one session id would merge into one session: refuse."""
    if r.session is None or r.part is None:
        return
    other = sessions.setdefault(r.session, r.part.stem)
    if other != r.part.stem:
        raise FormatError(
            str(src), f"{other}.json and {r.part.stem}.json are both session {r.session!r}"
        )


def _existing_parts(directory: Path) -> int:
    from agentx.store import is_dataset, trace_files

    return len(trace_files(directory)) if is_dataset(directory) else 0
