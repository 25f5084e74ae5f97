"""The run's credentials reach the endpoint's origin and nowhere else.

A server that repeats the API key it was sent (in a 401 body, in an in-stream error) does not
get it written to ``requests.parquet``, ``report --csv``'s files, ``summary.json``'s error
messages or the terminal; a ``--metrics-url`` on another origin never receives the key, the
endpoint's query credentials or ``--header``: only its own ``--metrics-header``.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from replay.factory import chat_session, write
from replay.fault_server import FaultServer
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.urls import REDACTED

KEY = "sk-echoed-0123456789abcdef"
QUERY_KEY = "q-gateway-secret-42"
HEADER_TOKEN = "t-router-secret-99"
METRICS_TOKEN = "m-metrics-secret-77"
PROMETHEUS = b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n"


def files_under(*dirs: Path) -> list[bytes]:
    return [p.read_bytes() for d in dirs for p in sorted(d.rglob("*")) if p.is_file()]


def test_a_server_that_echoes_the_key_never_gets_it_stored(tmp_path: Path) -> None:
    rows = chat_session("good", turns=2)
    rows += chat_session("echo401", turns=1, user_text="fault:echo_key_401 ", start_ns=10**9)
    rows += chat_session("echoev", turns=1, user_text="fault:echo_key_event ", start_ns=2 * 10**9)
    trace = write(tmp_path / "t.parquet", rows)
    out, csv = tmp_path / "out", tmp_path / "csv"
    with FaultServer() as server:
        res = CliRunner().invoke(
            app,
            [
                "replay",
                str(trace),
                "--endpoint",
                server.url,
                "--api-key",
                KEY,
                "--time-scale",
                "0",
                "--max-failed-ratio",
                "1",
                "--no-preflight",
                "-o",
                str(out),
            ],
        )
        assert f"Bearer {KEY}" in server.auth  # the key was sent, and echoed back
    assert res.exit_code == 0, res.output
    rep = CliRunner().invoke(app, ["report", str(out), "--csv", str(csv)])
    assert rep.exit_code == 0, rep.output
    assert (csv / "requests.csv").is_file()
    for blob in [res.stdout, res.stderr, rep.stdout, rep.stderr, *files_under(out, csv)]:
        data = blob if isinstance(blob, bytes) else blob.encode()
        assert KEY.encode() not in data
    summary = orjson.loads((out / "summary.json").read_bytes())
    messages = orjson.dumps(summary["errors"]["by_kind"]).decode()
    assert f"invalid key: {REDACTED}" in messages  # the server's words kept, the key out
    assert f"quota exceeded for {REDACTED}" in messages


class _Metrics(http.server.BaseHTTPRequestHandler):
    seen: list[tuple[str, dict[str, str]]]

    def do_GET(self) -> None:
        self.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(PROMETHEUS)))
        self.end_headers()
        self.wfile.write(PROMETHEUS)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def metrics_server() -> Iterator[tuple[str, list[tuple[str, dict[str, str]]]]]:
    seen: list[tuple[str, dict[str, str]]] = []
    handler = type("Handler", (_Metrics,), {"seen": seen})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", seen
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_metrics_url_on_another_origin_gets_no_credentials(
    metrics_server: tuple[str, list[tuple[str, dict[str, str]]]], tmp_path: Path, workers: int
) -> None:
    metrics_url, seen = metrics_server
    trace = write(
        tmp_path / "t.parquet",
        chat_session("a", turns=2) + chat_session("b", turns=2, start_ns=10**9),
    )
    out = tmp_path / "out"
    with FaultServer() as server:
        res = CliRunner().invoke(
            app,
            [
                "replay",
                str(trace),
                "--endpoint",
                f"{server.url}/v1?api_key={QUERY_KEY}",
                "--api-key",
                KEY,
                "--header",
                f"X-Auth-Token: {HEADER_TOKEN}",
                "--metrics-url",
                f"{metrics_url}/metrics",
                "--metrics-header",
                f"X-Metrics-Token: {METRICS_TOKEN}",
                "--concurrency",
                "2",
                "--workers",
                str(workers),
                "--time-scale",
                "0",
                "-o",
                str(out),
            ],
        )
        assert set(server.auth) == {f"Bearer {KEY}"}  # the endpoint gets its credentials
    assert res.exit_code == 0, res.output
    assert len(seen) >= 3, seen  # the probe, the baseline and the last scrape
    for path, headers in seen:
        assert "authorization" not in headers and "x-auth-token" not in headers, headers
        assert QUERY_KEY not in path and KEY not in str(headers)
        assert headers["x-metrics-token"] == METRICS_TOKEN
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["config"]["metrics_headers"] == [f"X-Metrics-Token: {REDACTED}"]
    assert not [b for b in files_under(out) if METRICS_TOKEN.encode() in b]
