"""``recover`` skips damaged spool lines, keeps everything else, says how many
it skipped, and never deletes a spool it did not fully recover.

(One damaged line used to stop the recovery there: 4 of 66 exchanges kept, exit 0, spool gone.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentx.apis import Api
from agentx.cli import app
from agentx.core.models import Exchange, Timing, Usage
from agentx.store import TraceWriter, read_trace, recover, spool_path
from agentx.store.reader import recover_report

SESSIONS, TURNS = 22, 3  # 66 exchanges


def exchange(session: int, turn: int) -> Exchange:
    messages: list[dict[str, object]] = [{"role": "system", "content": f"session {session}"}]
    for t in range(turn + 1):
        messages.append({"role": "user", "content": f"s{session} turn {t} " + "x" * 300})
        if t < turn:
            messages.append({"role": "assistant", "content": f"answer {t}"})
    return Exchange(
        request_id=f"s{session}-{turn}",
        session_id=f"s{session}",
        thread_id="main",
        api=Api.OPENAI_CHAT,
        request={"model": "m", "messages": messages, "stream": True},
        timing=Timing(start_wall_ns=1_700_000_000_000_000_000 + 10 * session + turn),
        parent_request_id=f"s{session}-{turn - 1}" if turn else None,
        usage=Usage(prompt_tokens=100, completion_tokens=5),
    )


def dead_spool(path: Path, damage: list[str]) -> None:
    """A spool of 66 exchanges left by a killed writer, the lines of ``damage`` garbled."""
    w = TraceWriter(path)
    for turn in range(TURNS):
        for s in range(SESSIONS):
            w.append(exchange(s, turn))
    w._spool.close()  # killed
    spool = spool_path(path)
    lines = spool.read_bytes().split(b"\n")
    for i, line in enumerate(lines):
        if any(f'"request_id":"{rid}"'.encode() in line for rid in damage):
            lines[i] = line[:40] + b"\x00\xff garbage" + line[60:]  # still one line
    spool.write_bytes(b"\n".join(lines))


def test_a_damaged_line_without_dependents_loses_that_exchange_only(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    dead_spool(path, ["s5-2"])
    report = recover_report(path)
    assert report is not None
    assert (report.rows, report.damaged, report.orphaned) == (65, 1, 0)
    assert {ex.request_id for ex in read_trace(path)} == {
        f"s{s}-{t}" for s in range(SESSIONS) for t in range(TURNS)
    } - {"s5-2"}
    assert report.kept_spool is not None and report.kept_spool.exists()  # not deleted
    assert not spool_path(path).exists()  # and not in the way of readers and writers


def test_exchanges_extending_a_damaged_one_are_counted_too(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    dead_spool(path, ["s7-0"])
    assert recover(path) == 63  # s7-1 and s7-2 extend s7-0: their prefix is gone with it
    got = read_trace(path)
    assert len(got) == 63 and not any(ex.session_id == "s7" for ex in got)


def test_the_recover_command_reports_what_it_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    dead_spool(path, ["s3-1", "s9-2"])
    runner = CliRunner()
    res = runner.invoke(app, ["recover", str(path)])
    assert res.exit_code == 0, res.output
    assert "recovered 63 exchanges" in res.stdout
    assert "2 damaged" in res.stderr and "1 exchange" in res.stderr and ".damaged" in res.stderr
    again = runner.invoke(app, ["recover", str(path)])
    assert again.exit_code == 0 and "nothing to recover" in again.stdout
    assert runner.invoke(app, ["stats", str(path)]).exit_code == 0


def test_a_complete_recovery_deletes_the_spool(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    dead_spool(path, [])
    report = recover_report(path)
    assert report is not None and (report.rows, report.damaged) == (66, 0)
    assert report.kept_spool is None and list(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize("target", ["directory"])
def test_a_failed_recovery_keeps_the_spool(tmp_path: Path, target: str) -> None:
    path = tmp_path / "t.parquet"
    dead_spool(path, [])
    path.mkdir()  # the trace cannot be written there
    res = CliRunner().invoke(app, ["recover", str(path)])
    assert res.exit_code == 1 and res.stderr.count("\n") == 1
    assert spool_path(path).exists()
