"""``agentx recover``'s summary is the live finish's: the same rows, spooled by a run that ended,
recovered from a copy of its spool, give the same figures; only what a killed run cannot know
(the client's CPU, the sessions, the bottleneck) is unknown, and the run is marked partial."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentx.core.errors import AgentxError, UsageError
from agentx.core.outputs import RUN_SPOOL, claimed_results_dir
from agentx.core.progress import Progress
from agentx.formats.fingerprint import trace_fingerprint
from agentx.replay import finish, run, run_replay
from agentx.replay.recover import KILLED, recover_run
from agentx.replay.rundir import RUN_START_FILE, read_start

from .factory import T0, chat_session, write
from .fault_server import FaultServer
from .test_run import options

SAME = ("requests", "tokens", "throughput", "latency_ms", "cache", "errors", "windows", "slo")


def keep_spool(monkeypatch: pytest.MonkeyPatch, into: Path) -> None:
    """The spool of the next run copied into ``into/.agentx-run`` (its sent bodies beside it)
    before the run removes it: what a SIGKILL at the finish would have left."""
    remove = run.remove_spool

    def keep(spool: Path) -> None:
        start = read_start(spool)
        assert start is not None
        copy = into / RUN_SPOOL
        shutil.copytree(spool, copy)
        logs = []
        for p in start.sent_logs:
            logs.append(str(shutil.copy(p, into.parent / f"{into.name}-{Path(p).name}")))
        data = orjson.loads((copy / RUN_START_FILE).read_bytes())
        data["sent_logs"] = logs
        (copy / RUN_START_FILE).write_bytes(orjson.dumps(data))
        remove(spool)

    into.mkdir()
    monkeypatch.setattr(run, "remove_spool", keep)


def test_a_recovered_run_has_the_figures_of_the_same_rows_finished_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = write(
        tmp_path / "t.parquet",
        chat_session("a", turns=6) + chat_session("b", turns=5, start_ns=T0 + 1),
    )
    rec = tmp_path / "rec"
    keep_spool(monkeypatch, rec)
    shown: list[str] = []  # whose name the finish's progress lines carry
    drawn = finish.progress_for

    def named(command: str) -> Progress:
        shown.append(command)
        return drawn(command)

    monkeypatch.setattr(finish, "progress_for", named)
    with FaultServer() as server:
        live = run_replay(options(trace, server.url, tmp_path, concurrency=2, slo="ttft_p99<=60s"))
    assert not (tmp_path / "out" / RUN_SPOOL).exists()  # a run that ended leaves no spool
    recovered = recover_run(rec)
    assert shown == ["replay", "recover"]
    assert not (rec / RUN_SPOOL).exists()
    a: dict[str, Any] = live.summary.to_json()
    b: dict[str, Any] = orjson.loads((rec / "summary.json").read_bytes())
    for key in SAME:
        assert b[key] == a[key], key
    assert b["cache"]["theoretical_hit_rate"] is not None
    assert b["rollups"]["per_session"] == a["rollups"]["per_session"]
    assert b["trace_fingerprint"] == a["trace_fingerprint"]
    assert b["server_identity"] == a["server_identity"]
    # one anchor of the rows' clock on the wall clock, written at the start
    wall, perf = (b["clock"][k] - a["clock"][k] for k in ("wall_ns", "perf_ns"))
    assert wall == perf
    # what it cannot know is unknown, and the run is partial as a stopped run is
    assert b["client"] == {"cpu_percent": None, "saturated": None}
    assert b["sessions"] == {"started": None, "completed": None}
    assert "bottleneck" not in b and a["bottleneck"] is not None
    assert b["config"]["interrupted"] is True and a["config"]["interrupted"] is False
    assert {k: v for k, v in b["config"].items() if k != "interrupted"} == {
        k: v for k, v in a["config"].items() if k != "interrupted"
    }
    assert b["gates"]["passed"] is False and b["gates"]["reasons"] == [KILLED]
    assert recovered.failure == KILLED and len(recovered.records) == len(live.records)


def test_without_the_bodies_sent_the_theoretical_hit_rate_is_unknown_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=4))
    rec = tmp_path / "rec"
    keep_spool(monkeypatch, rec)
    with FaultServer() as server:
        run_replay(options(trace, server.url, tmp_path))
    for p in tmp_path.glob("rec-sent-*"):
        p.unlink()
    result = recover_run(rec)
    assert result.summary.cache.theoretical_hit_rate is None
    assert result.summary.tokenizer is None
    assert any("bodies the run sent" in w for w in result.warnings), result.warnings
    assert not (rec / "theory.parquet").exists()


def test_a_directory_being_written_is_not_recovered(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with claimed_results_dir(out, force=False):
        (out / RUN_SPOOL).mkdir()
        with pytest.raises(UsageError, match=r"being written by a live agentx run \(pid \d+\)"):
            recover_run(out)
    with pytest.raises(AgentxError, match="killed before its lanes started"):
        recover_run(out)  # its writer gone: nothing to recover, said so
    assert not (out / RUN_SPOOL).exists()
    with pytest.raises(UsageError, match="no replay to recover"):
        recover_run(out)


def test_a_run_killed_before_its_fingerprint_was_known_gets_it_from_the_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=4))
    rec = tmp_path / "rec"
    keep_spool(monkeypatch, rec)
    with FaultServer() as server:
        live = run_replay(options(trace, server.url, tmp_path))
    assert live.summary.trace_fingerprint == trace_fingerprint(trace)
    path = rec / RUN_SPOOL / RUN_START_FILE
    data = orjson.loads(path.read_bytes())
    assert data["trace_fingerprint"] == live.summary.trace_fingerprint  # written when known
    data["trace_fingerprint"] = None  # what a run killed before its hash was done left
    path.write_bytes(orjson.dumps(data))
    recs = [rec, tmp_path / "rec2"]
    shutil.copytree(rec, recs[1])
    assert recover_run(recs[0]).summary.trace_fingerprint == trace_fingerprint(trace)
    trace.unlink()  # gone before the second is recovered: unknown, and said
    result = recover_run(recs[1])
    assert result.summary.trace_fingerprint is None
    assert any("fingerprint is unknown" in w and "cannot be read now" in w for w in result.warnings)
