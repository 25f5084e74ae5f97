"""The trace's fingerprint hashed beside the lanes: a child writes it into ``run.json`` once it
is known and hands it to the finish; a stopped or failed child is a warning within a bounded
wait; a killed run that never learnt it gets it at recovery from the trace, if the trace is
still there and unchanged."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import orjson

from agentx.formats.fingerprint import UNKNOWN, trace_fingerprint
from agentx.replay.fingerprint_job import (
    FingerprintJob,
    fingerprint_known,
    recovered_fingerprint,
    with_fingerprint,
)
from agentx.results.runstart import RunStart

from .factory import chat_session, write


def a_start(trace: Path, **changes: object) -> RunStart:
    """A run's set-up as written when its lanes start: no fingerprint yet."""
    data = {
        "schema": "agentx.run-start/1",
        "started_at": "2026-12-02T00:00:00+00:00",
        "clock": {"perf_ns": 1, "wall_ns": 2},
        "endpoint": "http://127.0.0.1:1",
        "model": "m",
        "server_kind": "serve-sim",
        "block_size": 16,
        "lanes": 1,
        "concurrency": 1,
        "workers": 1,
        "api": "chat",
        "trace": str(trace),
        "warnings": ["a warning of the set-up"],
        **changes,
    }
    return RunStart.from_json(data)


def run_json(tmp_path: Path, start: RunStart) -> Path:
    path = tmp_path / "run.json"
    path.write_bytes(orjson.dumps(start.to_json()))
    return path


def test_the_job_writes_the_fingerprint_into_run_json_and_hands_it_over(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=3))
    start = a_start(trace)
    path = run_json(tmp_path, start)
    assert not fingerprint_known(start)
    job = FingerprintJob(trace, path)
    value, unknown = job.result()
    assert value == trace_fingerprint(trace) and unknown == ()
    written = RunStart.from_json(orjson.loads(path.read_bytes()))
    assert written == with_fingerprint(start, (value, ()))  # the rest of the set-up as it was
    assert fingerprint_known(written)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file


def test_an_unreadable_trace_is_a_warning_in_run_json(tmp_path: Path) -> None:
    trace = tmp_path / "t.parquet"
    trace.write_bytes(b"PAR1 this is no parquet file")
    start = a_start(trace)
    path = run_json(tmp_path, start)
    value, unknown = FingerprintJob(trace, path).result()
    assert value is None and len(unknown) == 1 and unknown[0].startswith(UNKNOWN), unknown
    written = RunStart.from_json(orjson.loads(path.read_bytes()))
    assert written.trace_fingerprint is None and unknown[0] in written.warnings
    assert fingerprint_known(written)  # known to be unknown: a recovery does not hash again


def test_a_stopped_child_is_given_up_within_the_bound(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=3))
    path = run_json(tmp_path, a_start(trace))
    job = FingerprintJob(trace, path)
    assert job.pid is not None
    os.kill(job.pid, signal.SIGSTOP)  # before it could hash anything
    value, unknown = job.result(stall_s=1.0)
    assert value is None and "made no progress for 1 s" in unknown[0], unknown
    assert orjson.loads(path.read_bytes())["trace_fingerprint"] is None
    try:  # ended, not left stopped
        os.kill(job.pid, 0)
        alive = Path(f"/proc/{job.pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        alive = False
    assert not alive


def test_a_recovery_hashes_the_trace_if_it_is_there_and_unchanged(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=3))
    later = os.stat(trace).st_mtime_ns + 10**9
    start = a_start(trace, clock={"perf_ns": 1, "wall_ns": later})  # started after it was made
    assert recovered_fingerprint(start) == (trace_fingerprint(trace), ())

    os.utime(trace, ns=(later + 10**9, later + 10**9))  # rewritten since the run started
    value, unknown = recovered_fingerprint(start)
    assert value is None and "the trace changed since the run started" in unknown[0], unknown

    trace.unlink()
    value, unknown = recovered_fingerprint(start)
    assert value is None and "cannot be read now" in unknown[0], unknown
    assert unknown[0].startswith(UNKNOWN)


def test_a_directory_trace_changed_in_one_file_is_not_hashed_at_recovery(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("a", "b"):
        (corpus / f"{name}.json").write_text("{}")
    later = max(f.stat().st_mtime_ns for f in corpus.iterdir()) + 10**9
    start = a_start(corpus, clock={"perf_ns": 1, "wall_ns": later})
    os.utime(corpus / "b.json", ns=(later + 10**9, later + 10**9))
    value, unknown = recovered_fingerprint(start)
    assert value is None and "b.json" in unknown[0], unknown
