"""What agentx says is what happened: a bad column is one line naming it (not a traceback); a
convert that cannot write names the user's output (not its hidden temporary file); a capture
whose disk filled says how many exchanges were lost (not "every exchange is kept"); and scrub
redacts an AWS secret access key standing bare beside its key id.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from replay.factory import chat_session, write
from replay.fault_server import MODEL, FaultServer
from typer.testing import CliRunner

from agentx.capture.recorder import Recorder
from agentx.capture.recorder.events import RequestSent, ResponseData, ResponseEnd, ResponseHeaders
from agentx.cli import app
from agentx.core.errors import TraceError
from agentx.core.examples import example_path
from agentx.store import TraceWriter, read_trace, recover
from agentx.store.spool import spool_path


def run(*args: str | Path) -> tuple[int, str]:
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.stderr


def one_line(code: int, err: str) -> str:
    assert code == 1, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


# -- a column of the wrong kind ----------------------------------------------------------------


def with_column(src: Path, dst: Path, name: str, values: pa.Array) -> Path:
    table = pq.read_table(src)
    i = table.schema.get_field_index(name)
    table = table.set_column(i, pa.field(name, values.type), values)
    pq.write_table(table.replace_schema_metadata(pq.read_schema(src).metadata), dst)
    return dst


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return write(tmp_path / "t.parquet", chat_session("s", turns=3))


def test_scrub_of_a_trace_whose_api_is_null_is_one_line(trace: Path, tmp_path: Path) -> None:
    """AttributeError: 'NoneType' object has no attribute 'encode' (in the scrub's digest)."""
    bad = with_column(trace, tmp_path / "bad.parquet", "api", pa.nulls(3, pa.string()))
    err = one_line(*run("scrub", bad, "-o", tmp_path / "out.parquet"))
    assert "bad.parquet" in err and "no api" in err
    assert not (tmp_path / "out.parquet").exists()


def test_stats_of_a_trace_whose_prompt_tokens_are_strings_is_one_line(
    trace: Path, tmp_path: Path
) -> None:
    """TypeError: unsupported operand type(s) for +: 'int' and 'str' (in summarize)."""
    bad = with_column(trace, tmp_path / "bad.parquet", "prompt_tokens", pa.array(["1", "2", "3"]))
    err = one_line(*run("stats", bad))
    assert "bad.parquet" in err and "prompt_tokens" in err and "string" in err


def test_a_column_stored_narrower_or_all_null_still_reads(trace: Path, tmp_path: Path) -> None:
    """The check is on what the values are, not on the exact Arrow type."""
    narrow = with_column(
        trace, tmp_path / "n.parquet", "prompt_tokens", pa.array([1, 2, 3], pa.int32())
    )
    assert [ex.usage.prompt_tokens for ex in read_trace(narrow)] == [1, 2, 3]
    empty = with_column(trace, tmp_path / "e.parquet", "cached_tokens", pa.nulls(3))
    assert [ex.usage.cached_tokens for ex in read_trace(empty)] == [None] * 3


# -- convert names the user's output -----------------------------------------------------------


@pytest.mark.parametrize("to", ["agentx", "mooncake", "weka"])
def test_convert_errors_name_the_output_not_its_temporary_file(to: str, tmp_path: Path) -> None:
    """``ulimit -f``: it said "cannot write trace spool .out.parquet.PID.RANDOM.tmp.spool"."""
    trace = tmp_path / "t.parquet"
    shutil.copyfile(example_path(), trace)  # 48 rows: its spool passes the 4 KiB below
    out = tmp_path / ("out" if to == "weka" else "out.parquet")
    size = 512 if to == "weka" else 4096  # one Weka file is small

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    proc = subprocess.run(
        [sys.executable, "-m", "agentx", "convert", str(trace), "--to", to, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )
    err = one_line(proc.returncode, proc.stderr)
    assert f"cannot write trace {out}:" in err or f"cannot write {out}:" in err, err
    assert "File too large" in err and ".tmp" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]  # nothing left


# -- capture on a full disk --------------------------------------------------------------------


class FullDisk(TraceWriter):
    """A trace writer on a disk with room for ``room`` exchanges (its spool, then no Parquet)."""

    room = 3

    def _write_line(self, line: bytes) -> None:
        if self.count >= self.room:
            raise TraceError(f"cannot write trace spool {spool_path(self.path)}: No space left")
        super()._write_line(line)

    def close(self) -> None:
        self.abort()  # the spool stays, as a failed compaction leaves it
        raise TraceError(f"cannot write trace {self.path}: No space left on device")


def exchange_events(key: str, t: int) -> list[object]:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": f"hi {key}"}]}
    return [
        RequestSent(
            key=key,
            start_ns=t,
            wall_ns=1_700_000_000_000_000_000 + t,
            method="POST",
            path="/v1/chat/completions",
            headers=[(b"content-type", b"application/json"), (b"user-agent", b"claude-cli/2.0")],
            raw_body=orjson.dumps(body),
            peer=None,
            conn_id=key,
        ),
        ResponseHeaders(key, t + 5, 200, "text/event-stream", None),
        ResponseData(
            key,
            t + 7,
            b"data: "
            + orjson.dumps(
                {
                    "choices": [{"index": 0, "delta": {"content": "yo"}}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
                }
            )
            + b"\n\n",
        ),
        ResponseEnd(key, t + 9),
    ]


def test_capture_on_a_full_disk_says_what_was_lost(tmp_path: Path) -> None:
    """It said "every exchange is kept in spool" while 5 of 8 had been lost."""
    out = tmp_path / "t.parquet"
    said: list[str] = []
    rec = Recorder(FullDisk(out), reporter=said.append, resolve_processes=False)
    for i in range(8):
        for ev in exchange_events(f"f{i}", i * 1_000_000_000):
            rec.process(ev)  # type: ignore[arg-type]
    stats = rec.close()
    assert stats.lost == 5
    last = said[-1]
    assert "every exchange" not in last
    assert f"3 exchanges are kept in {spool_path(out)}" in last and "5 could not be written" in last
    assert "agentx recover" in last
    assert recover(out) == 3  # what it says is kept is what recover gives back


# -- scrub: an AWS secret beside its key id ----------------------------------------------------

KEY_ID = "AKIAQ3EGRXMPLE7ZTWQX"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKY"


@pytest.mark.parametrize(
    "text",
    [
        f"{KEY_ID} {SECRET}\n",
        f"Access key ID,Secret access key\n{KEY_ID},{SECRET}\n",
        f'{{"AccessKeyId": "{KEY_ID}", "SecretAccessKey": "{SECRET}"}}\n',
        f"id {KEY_ID}\nsecret: {SECRET}\n",
        f"{SECRET} {KEY_ID}\n",
    ],
    ids=["space", "csv", "json", "labelled", "before"],
)
def test_scrub_redacts_a_bare_aws_secret_beside_its_key_id(text: str, tmp_path: Path) -> None:
    src = write(tmp_path / "t.parquet", chat_session("s", turns=1, user_text=text))
    out = tmp_path / "out.parquet"
    code, err = run("scrub", src, "-o", out)
    assert code == 0, err
    (ex,) = read_trace(out)
    content = orjson.dumps(ex.request).decode()
    assert SECRET.replace("/", "\\/") not in content and SECRET not in content
    assert KEY_ID not in content


def test_a_model_list_whose_ids_are_null_names_no_model(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=2))
    out = tmp_path / "out"
    with FaultServer(models=[{"id": None, "owned_by": "x"}, {"id": ""}]) as server:
        args = ("replay", trace, "--endpoint", server.url, "--no-metrics", "-o", out)
        err = one_line(*run(*args))  # it used to send model "None"
        assert "lists no models on /v1/models: pass --model" in err, err
        assert not server.requests
    with FaultServer(models=[{"id": None}, {"id": MODEL}]) as server:
        code, err = run(*args[:3], server.url, "--no-metrics", "-o", out, "--time-scale", "0")
        assert code == 0, err
        assert {r["model"] for r in server.requests} == {MODEL}
