"""Credentials in URLs never reach disk or the terminal.

``--upstream`` with ``?key=`` or ``user:pass@``, ``--endpoint`` / ``--metrics-url`` with
``?api_key=``: not in the trace's metadata (nor scrub's output), not in ``summary.json``,
``sweep.json``, ``report.html`` or ``requests.parquet``, not in any printed line.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from replay.factory import chat_session, write
from replay.fault_server import FaultServer
from typer.testing import CliRunner
from upstream import Upstream

from agentx.cli import app
from agentx.core.urls import REDACTED, redact_url, redact_urls_in
from agentx.store import open_trace, read_trace

KEY = "AIzaSyTOTALLYSECRET0123456789"
PASSWORD = "hunter2-secret-pw"


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        (
            f"https://u:{PASSWORD}@h:8443/v1?api_key={KEY}&x=1",
            "https://REDACTED@h:8443/v1?api_key=REDACTED&x=1",
        ),
        (
            f"https://generativelanguage.googleapis.com/?key={KEY}",
            "https://generativelanguage.googleapis.com/?key=REDACTED",
        ),
        (
            "http://h/v1?api-version=2024-02-01&sig=abc#f",
            "http://h/v1?api-version=2024-02-01&sig=REDACTED#f",
        ),
        (f"http://h/?X-Goog-Credential={KEY}", "http://h/?X-Goog-Credential=REDACTED"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        (f"http://[::1?token={KEY}", "http://[::1?token=REDACTED"),  # malformed: still redacted
        ("anthropic", "anthropic"),
    ],
)
def test_redact_url(url: str, redacted: str) -> None:
    assert redact_url(url) == redacted
    assert redact_url(redacted) == redacted
    assert redact_urls_in(f"cannot reach {url}: refused") == f"cannot reach {redacted}: refused"


def leaks(*texts: str | bytes) -> list[str]:
    found = []
    for t in texts:
        data = t if isinstance(t, bytes) else t.encode()
        found += [s for s in (KEY, PASSWORD) if s.encode() in data]
    return found


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(metrics="# TYPE x counter\nx 1\n") as srv:
        yield srv


def test_replay_and_sweep_keep_endpoint_keys_out_of_results(
    server: FaultServer, tmp_path: Path
) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("a", turns=2))
    endpoint = f"{server.url}/v1?api_key={KEY}"
    metrics = f"{server.url}/metrics?token={KEY}"
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "replay",
            str(trace),
            "--endpoint",
            endpoint,
            "--metrics-url",
            metrics,
            "--time-scale",
            "0",
            "-o",
            str(tmp_path / "out"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert all(q == f"api_key={KEY}" or q == f"token={KEY}" for q in server.queries)  # sent
    out = tmp_path / "out"
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["endpoint"] == f"{server.url}/v1?api_key={REDACTED}"
    assert not leaks(
        res.stdout, res.stderr, *(p.read_bytes() for p in out.iterdir())
    )  # summary.json, requests.parquet, report.html
    sweep = runner.invoke(
        app,
        [
            "sweep",
            str(trace),
            "--endpoint",
            endpoint,
            "--concurrency",
            "1",
            "--time-scale",
            "0",
            "--no-metrics",
            "-o",
            str(tmp_path / "sw"),
        ],
    )
    assert sweep.exit_code == 0, sweep.output
    files = [p.read_bytes() for p in (tmp_path / "sw").rglob("*") if p.is_file()]
    assert not leaks(sweep.stdout, sweep.stderr, *files)


def test_unreachable_endpoint_error_is_redacted(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app, ["replay", "example", "--endpoint", f"http://127.0.0.1:9/v1?api_key={KEY}"]
    )
    assert res.exit_code == 1 and "cannot reach" in res.stderr
    assert not leaks(res.stdout, res.stderr)


def test_report_redacts_an_old_summary(tmp_path: Path) -> None:
    """A summary.json written before redaction existed: the report does not repeat its key."""
    from report.sample import summary

    old = summary()
    old["endpoint"] = f"http://u:{PASSWORD}@h:8000?api_key={KEY}"
    d = tmp_path / "res"
    d.mkdir()
    (d / "summary.json").write_bytes(orjson.dumps(old))
    res = CliRunner().invoke(app, ["report", str(d), "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert not leaks(res.stdout, res.stderr, (tmp_path / "r.html").read_bytes())


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream().start()
    yield up
    up.stop()


def test_capture_keeps_upstream_credentials_out_of_the_trace(
    upstream: Upstream, tmp_path: Path
) -> None:
    out = tmp_path / "t.parquet"
    url = upstream.url.replace("http://", f"http://user:{PASSWORD}@") + f"/?key={KEY}"
    agent = (
        "import os, httpx; r = httpx.post(os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', "
        "json={'model': 'm', 'max_tokens': 8, 'messages': [{'role': 'user', 'content': 'hi'}]}); "
        "assert r.status_code == 200, r.text"
    )
    res = CliRunner().invoke(
        app,
        [
            "capture",
            "--upstream",
            url,
            "-o",
            str(out),
            "--confdir",
            str(tmp_path / "conf"),
            "--no-status",
            "--",
            sys.executable,
            "-c",
            agent,
        ],
    )
    assert res.exit_code == 0, res.output
    assert len(read_trace(out)) == 1  # the proxy forwarded the agent's call
    assert upstream.seen[0].path == "/v1/messages"  # the URL's key was not forwarded either
    info = open_trace(out)
    assert info.metadata["upstream"] == redact_url(url)
    assert not leaks(res.stdout, res.stderr, out.read_bytes())
    clean = tmp_path / "clean.parquet"
    scrubbed = CliRunner().invoke(app, ["scrub", str(out), "-o", str(clean), "--no-hit-rate"])
    assert scrubbed.exit_code == 0, scrubbed.output
    assert not leaks(clean.read_bytes(), scrubbed.stdout)


def test_scrub_redacts_an_old_trace_metadata(tmp_path: Path) -> None:
    """A trace captured before redaction existed: scrub's output does not keep its key."""
    from agentx.store import write_trace

    old = tmp_path / "old.parquet"
    write_trace(
        old,
        [],
        metadata={"capture": "reverse", "upstream": f"https://u:{PASSWORD}@h/?key={KEY}"},
    )
    clean = tmp_path / "clean.parquet"
    res = CliRunner().invoke(app, ["scrub", str(old), "-o", str(clean), "--no-hit-rate"])
    assert res.exit_code == 0, res.output
    assert open_trace(clean).metadata["upstream"] == "https://REDACTED@h/?key=REDACTED"
    assert not leaks(clean.read_bytes())
