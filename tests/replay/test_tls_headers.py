"""An https endpoint and a gateway's headers, over real sockets: serve-sim behind a self-signed
certificate for 127.0.0.1. By default the certificate is refused, with the words that say so
and the way out; ``--ca-bundle`` and ``--insecure`` are honoured by both clients (httpx for the
probe and metrics, the lanes' HTTP/1.1 client); ``--header`` goes with every request and is
never printed or written with a credential's value."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from agentx.apis import Api
from agentx.cli import app
from agentx.core.errors import UsageError
from agentx.core.urls import REDACTED, redact_header
from agentx.replay.client import (
    default_ca_bundle,
    make_http_client,
    make_stream_client,
    stream_request,
    tls_context,
)
from agentx.replay.options import ReplayOptions
from agentx.serve_sim import SimConfig, SimServer

from .tls import TlsSim, self_signed

runner = CliRunner()
BODY = orjson.dumps(
    {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
)
SECRETS = ("Bearer hunter2", "k-secret-1", "t0ken-secret")
HEADERS = [
    "--header",
    "X-Route: pool-a",
    "--header",
    f"Authorization: {SECRETS[0]}",
    "--header",
    f"X-Api-Key:{SECRETS[1]}",
    "--header",
    f"X-Auth-Token: {SECRETS[2]}",
]


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, Path]:
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def sim(cert: tuple[ssl.SSLContext, Path]) -> Iterator[TlsSim]:
    with TlsSim(cert[0]) as server:
        yield server


def _replay(url: str, out: Path, *more: str) -> tuple[int, str]:
    args = ["replay", "example", "--endpoint", url, "--time-scale", "0", "--max-requests", "4"]
    r = runner.invoke(app, [*args, "-o", str(out), *more])
    return r.exit_code, r.output


def test_an_untrusted_certificate_is_refused_as_such(sim: TlsSim, tmp_path: Path) -> None:
    code, output = _replay(sim.url, tmp_path / "r")
    assert code == 1, output
    assert f"cannot reach {sim.url}: its TLS certificate is not trusted (" in output
    assert "pass --ca-bundle FILE with the CA that signed it, or --insecure" in output
    assert f"(trusted by default: {default_ca_bundle()})" in output
    assert "connection refused" not in output
    assert not any(method == "POST" for method, _, _ in sim.seen)


def test_an_http_server_given_as_https_is_a_handshake_failure(tmp_path: Path) -> None:
    with SimServer(SimConfig.of(port=0, fast=True)) as plain:
        code, output = _replay(plain.url.replace("http:", "https:"), tmp_path / "r")
    assert code == 1 and "the TLS handshake failed" in output, output
    assert "is it an https server (not http://)?" in output


@pytest.mark.parametrize("trust", ["--ca-bundle", "--insecure"])
def test_ca_bundle_and_insecure_are_accepted_and_headers_sent(
    sim: TlsSim, cert: tuple[ssl.SSLContext, Path], tmp_path: Path, trust: str
) -> None:
    out = tmp_path / "r"
    trusting = [trust, str(cert[1])] if trust == "--ca-bundle" else [trust]
    code, output = _replay(sim.url, out, *trusting, *HEADERS, "--json")
    assert code == 0, output
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["requests"]["ok"] == summary["requests"]["total"] == 4
    posts = [headers for method, _, headers in sim.seen if method == "POST"]
    gets = [(path, headers) for method, path, headers in sim.seen if method == "GET"]
    assert len(posts) >= 4 and any(path == "/v1/models" for path, _ in gets)
    for headers in [*posts, *(h for _, h in gets)]:  # every request, through either client
        assert headers["x-route"] == "pool-a" and headers["x-api-key"] == SECRETS[1]
        assert headers["authorization"] == SECRETS[0]  # --header wins over agentx's own
    assert summary["config"]["headers"] == [
        "X-Route: pool-a",
        f"Authorization: {REDACTED}",
        f"X-Api-Key: {REDACTED}",
        f"X-Auth-Token: {REDACTED}",
    ]
    assert summary["config"]["insecure"] is (trust == "--insecure")
    written = b"".join(f.read_bytes() for f in out.iterdir() if f.is_file())
    for secret in SECRETS:
        assert secret not in output and secret.encode() not in written


def test_sweep_takes_the_same_tls_and_headers(sim: TlsSim, tmp_path: Path) -> None:
    args = ["sweep", "example", "--endpoint", sim.url, "--concurrency", "1,2", "--insecure"]
    r = runner.invoke(
        app,
        [*args, "--time-scale", "0", "--max-requests", "2", "-o", str(tmp_path / "sw"), *HEADERS],
    )
    assert r.exit_code == 0, r.output
    posts = [headers for method, _, headers in sim.seen if method == "POST"]
    assert len(posts) >= 4 and all(h["x-route"] == "pool-a" for h in posts)


async def test_both_clients_honour_the_tls_context(
    sim: TlsSim, cert: tuple[ssl.SSLContext, Path]
) -> None:
    for tls, trusted in (
        (tls_context(), False),
        (tls_context(ca_bundle=cert[1]), True),
        (tls_context(insecure=True), True),
    ):
        async with make_stream_client(sim.url, timeout_s=10, max_connections=1, tls=tls) as lanes:
            row = await stream_request(lanes, "/v1/chat/completions", BODY, Api.OPENAI_CHAT)
        assert row.ok is trusted, row.error
        if not trusted:
            assert row.error_type == "connect" and "CERTIFICATE_VERIFY_FAILED" in (row.error or "")
        async with make_http_client(sim.url, timeout_s=10, max_connections=1, tls=tls) as client:
            if trusted:
                assert (await client.get("/v1/models")).status_code == 200
            else:
                with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
                    await client.get("/v1/models")


@pytest.mark.parametrize(
    ("header", "words"),
    [
        ("Authorization Bearer hunter2", "--header: #1 is not NAME:VALUE"),
        ("Bad Name: hunter2", "--header: #1: 'Bad Name' is not a header name"),
        ("Content-Length: 5", "--header: Content-Length is set by agentx's client"),
        ("Accept-Encoding: gzip", "--header: Accept-Encoding is set by agentx's client"),
    ],
)
def test_a_bad_header_is_a_usage_error_that_never_shows_its_value(header: str, words: str) -> None:
    r = runner.invoke(
        app, ["replay", "example", "--endpoint", "http://127.0.0.1:9", "--header", header]
    )
    assert r.exit_code == 2 and r.stderr.startswith(f"agentx: error: {words}"), r.output
    assert "hunter2" not in r.output and "gzip" not in r.output


def test_a_header_given_twice_and_headers_from_code() -> None:
    base = {"trace": Path("t"), "endpoint": "http://127.0.0.1:1"}
    with pytest.raises(UsageError, match=r"^--header: x-a is given twice"):
        ReplayOptions.of(**base, headers=["X-A: 1", "x-a: 2"])
    o = ReplayOptions.of(**base, headers=["X-A: 1", ("X-B", "2")])
    assert o.headers == (("X-A", "1"), ("X-B", "2")) and "X-A" not in repr(o)


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("Authorization", "Bearer x", REDACTED),
        ("Proxy-Authorization", "Basic eA==", REDACTED),
        ("X-Api-Key", "x", REDACTED),
        ("api-key", "x", REDACTED),
        ("X-Auth-Token", "x", REDACTED),
        ("Cookie", "session=x", REDACTED),
        ("X-Custom", "Bearer x", REDACTED),  # the value says it is a credential
        ("X-Route", "pool-a", "pool-a"),
        ("OpenAI-Organization", "org-1", "org-1"),
    ],
)
def test_a_credentials_value_is_redacted(name: str, value: str, shown: str) -> None:
    assert redact_header(name, value) == f"{name}: {shown}"
