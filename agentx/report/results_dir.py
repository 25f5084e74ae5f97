"""A results directory (``agentx replay -o DIR``, ``agentx merge -o DIR``): the one home of its
layout. ``summary.json``, ``requests.parquet`` (one row per request), ``theory.parquet`` (what the
theoretical cache learnt from each request, for an exact merge) and ``report.html``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import orjson

from agentx.core.errors import AgentxError, ShapeError
from agentx.core.outputs import (
    REPORT_FILE,
    REQUESTS_FILE,
    SUMMARY_FILE,
    THEORY_FILE,
    atomic_dir,
    results_at,
    write_atomic,
)
from agentx.core.progress import Progress
from agentx.core.record import RequestRecord
from agentx.core.urls import redact_urls_deep
from agentx.prefixcache.theory import TheoryRow
from agentx.report.html import write_html
from agentx.report.page import page_source
from agentx.results.summary import SCHEMA, Summary

SUMMARY = SUMMARY_FILE
REQUESTS = REQUESTS_FILE
THEORY = THEORY_FILE
REPORT = REPORT_FILE


def load_summary(path: str | os.PathLike[str]) -> Summary:
    """``DIR/summary.json`` (or the file itself), checked to be an ``agentx.summary/1``; any
    other kind of path is refused saying what it is (:func:`not_results`)."""
    p = Path(path)
    f = p / SUMMARY if p.is_dir() else p
    if not f.is_file() or (p.is_file() and p.name != SUMMARY and results_at(p) is not None):
        raise not_results(p)
    if p.is_file() and p.name != SUMMARY and not _has_json_head(p):
        raise not_results(p)
    try:
        summary = orjson.loads(f.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise AgentxError(f"{f}: unreadable: {exc}") from None
    if not isinstance(summary, dict) or summary.get("schema") != SCHEMA:
        got = summary.get("schema") if isinstance(summary, dict) else type(summary).__name__
        raise AgentxError(f"{f}: not an {SCHEMA} summary (schema: {got!r})")
    try:
        # redacted: a summary written before URLs were redacted
        return Summary.from_json(redact_urls_deep(summary))
    except ShapeError as exc:
        raise ShapeError(f"{f}: not an {SCHEMA} summary ({exc})") from None


def _has_json_head(path: Path) -> bool:
    """Whether a file given for a summary starts as a JSON object (a trace does not)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(64).lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")
    except OSError:
        return False


def not_results(p: Path) -> AgentxError:
    """What ``p`` is, given where a results directory goes, and what to run instead."""
    from agentx.core.examples import resolve_trace

    if not p.exists():
        bundled = resolve_trace(p)
        if bundled != p and _trace_format(bundled) is not None:
            return AgentxError(
                f"no such directory: {p} ({p} names a bundled example trace: {_use_trace(p)})"
            )
        return AgentxError(f"no such directory: {p}")
    inside = results_at(p)
    if inside is not None and inside.directory != p:
        return AgentxError(f"{p} is {inside.what}: agentx report {inside.directory}")
    trace = _trace_format(p)
    if trace is not None:
        return AgentxError(f"{p} is a trace ({trace}), not a results directory: {_use_trace(p)}")
    if p.is_dir():
        return AgentxError(f"{p}: no {SUMMARY} (not an agentx results directory)")
    return AgentxError(
        f"{p} is a file, not a results directory (a directory holding {SUMMARY}, {REQUESTS})"
    )


def _use_trace(p: Path) -> str:
    return f"agentx stats {p}, or agentx replay {p} --endpoint URL to make a results directory"


def _trace_format(p: Path) -> str | None:
    """The format of the trace ``p`` is, in words; ``None`` when it is none."""
    from agentx.formats import FORMAT_NAMES, detect_format

    try:
        return FORMAT_NAMES[detect_format(p)]
    except AgentxError:
        return None


def load_results(path: str | os.PathLike[str]) -> tuple[Summary, list[RequestRecord]]:
    """The summary and the per-request records (empty when requests.parquet is absent)."""
    summary = load_summary(path)
    p = Path(path)
    rp = p / REQUESTS if p.is_dir() else p.with_name(REQUESTS)
    if not rp.is_file():
        return summary, []
    from agentx.store.results import read_requests

    return summary, read_requests(rp)


def write_results(
    out_dir: Path,
    summary: Summary,
    records: Sequence[RequestRecord],
    theory: Sequence[TheoryRow] | None = None,
    *,
    whole: bool = False,
    progress: Progress | None = None,
) -> None:
    """Write a results directory: ``theory`` rows (in send order) when given, at the summary's
    block size. Each file is written to a temporary file and renamed into place (the caller
    checked the directory: :func:`agentx.core.outputs.check_results_dir`). ``whole`` (a merge,
    whose directory is made at once): the directory is built beside ``out_dir`` and replaces it
    as a whole (:func:`agentx.core.outputs.atomic_dir`), so an older ``summary.json`` never
    stands beside newer rows, nor an older ``theory.parquet`` beside a merge without one.
    ``progress`` counts the rows written."""
    prog = progress or Progress()
    if whole:
        with atomic_dir(out_dir, owned=LAYOUT.__contains__) as tmp:
            _write_files(tmp, summary, records, theory, out_dir, prog)
        return
    _write_files(out_dir, summary, records, theory, out_dir, prog)


# The files of a results directory: what replacing one as a whole replaces.
LAYOUT = frozenset({SUMMARY, REQUESTS, THEORY, REPORT})


def _write_files(
    out_dir: Path,
    summary: Summary,
    records: Sequence[RequestRecord],
    theory: Sequence[TheoryRow] | None,
    shown: Path,
    progress: Progress,
) -> None:
    from agentx.store.results import write_requests
    from agentx.store.theory import write_theory

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        progress.phase("writing results", total=len(records), unit="rows")
        write_requests(out_dir / REQUESTS, records, progress)
        if theory is not None:
            block_size = summary.cache.block_size
            assert block_size is not None  # a run's summary always says it
            routed = any(r.replica is not None for r in theory)
            write_theory(out_dir / THEORY, theory, block_size, routed=routed)
    except OSError as exc:
        raise AgentxError(f"cannot write results to {shown}: {exc.strerror or exc}") from None
    summary_json = orjson.dumps(summary.to_json(), option=orjson.OPT_INDENT_2) + b"\n"
    write_atomic(out_dir / SUMMARY, summary_json, force=True)
    write_html(summary, out_dir / REPORT, source=page_source(shown))
