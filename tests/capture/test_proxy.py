"""Real mitmproxy, real sockets on 127.0.0.1, real SDK clients, a scripted upstream."""

from __future__ import annotations

import itertools
import socket
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pyarrow.parquet as pq
import pytest
from upstream import Upstream, usage_for

from agentx.apis import Api
from agentx.capture.runner import Capture
from agentx.core.models import Exchange
from agentx.store import read_trace, spool_path

from .clients import run_anthropic, run_chat, run_responses

ANT_KEY = "sk-ant-api03-TESTsecretKEYanthropic0001"
OAI_KEY = "sk-proj-TESTsecretKEYopenai0002"
QUERY_KEY = "AIzaTESTsecretQUERYkey0003"
COOKIE = "sessiontoken=TESTsecretCOOKIE0004"
SECRETS = (ANT_KEY, OAI_KEY, QUERY_KEY, "TESTsecretCOOKIE0004")


def _by_api(trace: list[Exchange]) -> dict[str, list[Exchange]]:
    out: dict[str, list[Exchange]] = defaultdict(list)
    for ex in trace:
        out[ex.api].append(ex)
    return out


def _assert_chain(rows: list[Exchange]) -> None:
    """One thread; each request's parent is the one before it; think time known after the first."""
    assert len({r.thread_id for r in rows}) == 1
    assert rows[0].parent_request_id is None
    for prev, cur in itertools.pairwise(rows):
        assert cur.parent_request_id == prev.request_id
        assert cur.think_time_s is not None and cur.think_time_s >= 0
        assert cur.timing.start_wall_ns >= prev.timing.start_wall_ns


def test_three_families_multi_turn(
    upstream: Upstream, start_capture: Callable[..., Capture], tmp_path: Path
) -> None:
    cap = start_capture(upstream.url)
    n_ant = run_anthropic(cap.url, ANT_KEY)
    n_beta = run_anthropic(cap.url, ANT_KEY, "Beta route.", beta=True)
    n_chat = run_chat(cap.url + "/v1", OAI_KEY)
    n_chain = run_responses(cap.url + "/v1", OAI_KEY)
    n_full = run_responses(cap.url + "/v1", OAI_KEY, "Codex style.", chain=False)
    assert (n_ant, n_beta, n_chat, n_chain, n_full) == (3, 3, 3, 3, 3)
    spool = spool_path(tmp_path / "trace.parquet").read_bytes()
    stats = cap.close()
    assert stats.requests == 15 and stats.partial == 0 and stats.lost == 0

    trace = read_trace(tmp_path / "trace.parquet")
    assert len(trace) == 15
    assert {r.host for r in trace} == {upstream.url.removeprefix("http://")}  # the upstream
    apis = _by_api(trace)
    assert {k: len(v) for k, v in apis.items()} == {
        Api.ANTHROPIC_MESSAGES: 6,
        Api.OPENAI_CHAT: 3,
        Api.OPENAI_RESPONSES: 6,
    }
    # exact request bodies: what the upstream received is what reads back (chains resolved)
    seen = [s for s in upstream.seen]
    assert len(seen) == 15
    for s, ex in zip(seen, sorted(trace, key=lambda e: e.timing.start_wall_ns), strict=True):
        assert s.path == ex.path
        if isinstance(s.body, dict) and "previous_response_id" in s.body:
            assert "previous_response_resolved" in ex.flags
            assert "previous_response_id" not in ex.request
            assert ex.request["input"][-len(s.body["input"]) :] == s.body["input"]
            assert {
                k: v for k, v in s.body.items() if k not in ("input", "previous_response_id")
            } == {k: v for k, v in ex.request.items() if k != "input"}
        else:
            assert ex.request == s.body
            assert list(ex.request) == list(s.body)  # key order too

    # threads: one per conversation, parents chained
    conversations: dict[str, list[Exchange]] = defaultdict(list)
    for ex in sorted(trace, key=lambda e: e.timing.start_wall_ns):
        conversations[ex.thread_id].append(ex)
    assert len(conversations) == 5
    for rows in conversations.values():
        assert len(rows) == 3
        _assert_chain(rows)
        assert not any(r.flags and r.flags != ("previous_response_resolved",) for r in rows)

    # the previous_response_id chain resolved into the whole context
    chain = [r for r in apis[Api.OPENAI_RESPONSES] if "previous_response_resolved" in r.flags]
    assert len(chain) == 2
    last = chain[-1].request["input"]
    assert last[0] == {"role": "user", "content": "Fix the bug."}
    assert [i.get("type") for i in last[1:]] == [
        "message",
        "function_call",
        "function_call_output",
    ] * 2

    # sessions: Anthropic's metadata.user_id carries one; the others group by client
    assert {r.session_id for r in apis[Api.ANTHROPIC_MESSAGES]} == {
        "0f0e0d0c-1111-2222-3333-444455556666"
    }

    # usage normalised: Anthropic input excludes cache reads and writes
    for rows in conversations.values():
        for turn, r in enumerate(rows):
            u = usage_for(turn)
            assert r.usage.prompt_tokens == (
                u["input"] + u["cache_read"] + u["cache_write"]
                if r.api == Api.ANTHROPIC_MESSAGES
                else u["input"] + u["cache_read"]
            )
            assert r.usage.cached_tokens == u["cache_read"]
            assert r.usage.completion_tokens == u["output"]
            assert r.usage.cache_creation_tokens == (
                u["cache_write"] if r.api == Api.ANTHROPIC_MESSAGES else None
            )
            assert r.status == 200
            assert (
                r.timing.ttfb_ns is not None
                and r.timing.ttft_ns is not None
                and r.timing.e2e_ns is not None
            )
            assert 0 < r.timing.ttfb_ns <= r.timing.ttft_ns <= r.timing.e2e_ns
            assert len(r.timing.chunk_offsets_ns) >= 5
            # responses assembled
            if turn < 2:
                assert len(r.response.tool_calls) == 1
                call = r.response.tool_calls[0]
                assert orjson.loads(call["arguments"]) == {"cmd": f"echo step {turn}"}
            else:
                assert r.response.text == "All done after 2 tool calls."
                assert r.response.tool_calls == ()
            assert r.credentials and r.credentials[0].family in ("sk-ant-", "sk-proj-")

    # no secret anywhere on disk
    table = pq.read_table(tmp_path / "trace.parquet").to_pylist()
    dumped = orjson.dumps(table, default=str) + (tmp_path / "trace.parquet").read_bytes() + spool
    for secret in SECRETS:
        assert secret.encode() not in dumped


def test_chunk_timing_preserved(
    upstream: Upstream, start_capture: Callable[..., Capture], tmp_path: Path
) -> None:
    """The upstream sends events 40 ms apart; the client must see them 40 ms apart, one by one."""
    upstream.gap_s = 0.04
    cap = start_capture(upstream.url)
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [],
    }
    arrivals: list[int] = []
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", cap.url + "/v1/chat/completions", json=body) as resp,
    ):
        for chunk in resp.iter_raw():
            arrivals.append(time.monotonic_ns())
            assert chunk.count(b"data:") == 1  # never two events glued together
    cap.close()
    sent = upstream.sent_events_ns[-1]
    assert len(arrivals) == len(sent) >= 6
    gaps_client = [(b - a) / 1e6 for a, b in itertools.pairwise(arrivals)]
    assert min(gaps_client) > 25, gaps_client
    for s, a in zip(sent, arrivals, strict=True):
        assert 0 <= (a - s) / 1e6 < 25  # each event reaches the client promptly
    (ex,) = read_trace(tmp_path / "trace.parquet")
    offs = ex.timing.chunk_offsets_ns
    assert len(offs) == len(sent)
    gaps_trace = [(b - a) / 1e6 for a, b in itertools.pairwise(offs)]
    assert min(gaps_trace) > 25 and max(gaps_trace) < 200


def test_aborted_stream_is_partial(
    upstream: Upstream, start_capture: Callable[..., Capture], tmp_path: Path
) -> None:
    cap = start_capture(upstream.url)
    body = {
        "model": "m",
        "stream": True,
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "ABORT please"}],
        "tools": [{"name": "t", "input_schema": {}}],
    }
    with (
        pytest.raises(httpx.HTTPError),
        httpx.Client(timeout=10) as client,
        client.stream("POST", cap.url + "/v1/messages", json=body) as resp,
    ):
        for _ in resp.iter_raw():
            pass
    # the agent's next request still works
    ok = httpx.post(
        cap.url + "/v1/messages",
        json={**body, "stream": False, "messages": [{"role": "user", "content": "fine"}]},
        timeout=10,
    )
    assert ok.status_code == 200
    cap.close()
    rows = sorted(read_trace(tmp_path / "trace.parquet"), key=lambda e: e.timing.start_wall_ns)
    assert len(rows) == 2
    partial, whole = rows
    assert "partial" in partial.flags and partial.error
    assert partial.status == 200 and len(partial.timing.chunk_offsets_ns) == 3
    assert partial.usage.prompt_tokens == 7 + 30  # message_start arrived before the cut
    assert "partial" not in whole.flags and whole.response.text == "Step 0: working."


def test_gzip_stream_zstd_request_query_key_cookie(
    upstream: Upstream, start_capture: Callable[..., Capture], tmp_path: Path
) -> None:
    from backports import zstd

    cap = start_capture(upstream.url, identity=False)
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "GZIP me"}],
        "tools": [{"type": "function", "function": {"name": "f"}}],
    }
    raw = zstd.compress(orjson.dumps(body))
    with httpx.Client(timeout=10) as client:
        r = client.post(
            cap.url + f"/v1/chat/completions?key={QUERY_KEY}&alt=sse",
            content=raw,
            headers={
                "content-encoding": "zstd",
                "content-type": "application/json",
                "cookie": COOKIE,
                "accept-encoding": "gzip",
            },
        )
        assert r.status_code == 200 and b"[DONE]" in r.content  # httpx decoded the gzip stream
        r2 = client.get(cap.url + "/v1/models", headers={"authorization": f"Bearer {OAI_KEY}"})
        assert r2.status_code == 200
    assert upstream.seen[0].headers.get("Accept-Encoding") == "gzip"  # identity not asked here
    spool = spool_path(tmp_path / "trace.parquet").read_bytes()
    cap.close()
    rows = sorted(read_trace(tmp_path / "trace.parquet"), key=lambda e: e.timing.start_wall_ns)
    chat, models = rows
    assert chat.request == body
    assert chat.response.tool_calls[0]["name"] == "f"
    assert chat.path == "/v1/chat/completions?key=REDACTED&alt=sse"
    assert {c.header for c in chat.credentials} == {"cookie", "query:key"}
    assert next(c for c in chat.credentials if c.header == "query:key").family == "AIza"
    assert models.api == Api.OTHER and "non_model" in models.flags and models.status == 200
    assert models.response.message == {"object": "list", "data": [{"id": "scripted-1"}]}
    dumped = (
        orjson.dumps(pq.read_table(tmp_path / "trace.parquet").to_pylist(), default=str) + spool
    )
    for secret in SECRETS:
        assert secret.encode() not in dumped


def test_identity_asked_and_non_model_dropped(
    upstream: Upstream, start_capture: Callable[..., Capture], tmp_path: Path
) -> None:
    cap = start_capture(upstream.url, keep_non_model=False)
    r = httpx.post(
        cap.url + "/v1/messages/count_tokens",
        json={"model": "m", "messages": []},
        headers={"accept-encoding": "gzip, br"},
    )
    assert r.json() == {"input_tokens": 42}
    assert upstream.seen[-1].headers.get("Accept-Encoding") == "identity"
    stats = cap.close()
    assert stats.dropped == 1 and stats.other == 0
    assert read_trace(tmp_path / "trace.parquet") == []


def test_unreachable_upstream_and_addon_failure_do_not_break_requests(
    start_capture: Callable[..., Capture], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = s.getsockname()[1]
    s.close()
    cap = start_capture(f"http://127.0.0.1:{dead}")
    r = httpx.post(cap.url + "/v1/messages", json={"model": "m", "messages": []}, timeout=10)
    assert r.status_code == 502  # mitmproxy's own answer; the agent sees a normal HTTP error
    assert cap.recorder is not None
    deadline = time.monotonic() + 10  # the recorder works on its own thread: let it catch up
    while cap.recorder.stats().requests < 1 and time.monotonic() < deadline:
        time.sleep(0.01)

    def boom(*_a: Any, **_k: Any) -> None:
        raise RuntimeError("recorder bug")

    monkeypatch.setattr(cap.recorder, "_on_request", boom)
    r = httpx.post(cap.url + "/v1/messages", json={"model": "m", "messages": []}, timeout=10)
    assert r.status_code == 502
    stats = cap.close()
    assert stats.errors == 1
    (row,) = read_trace(tmp_path / "trace.parquet")
    assert "no_response" in row.flags and row.error


def test_full_disk_reported_once(
    upstream: Upstream, start_capture: Callable[..., Capture], tmp_path: Path
) -> None:
    cap = start_capture(upstream.url)
    assert cap.recorder is not None and cap.recorder.writer is not None
    writer = cap.recorder.writer
    real = writer._spool

    class Full:
        def write(self, _b: bytes) -> int:
            raise OSError(28, "No space left on device")

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

    writer._spool = Full()  # type: ignore[assignment]
    for _ in range(3):
        r = httpx.post(
            cap.url + "/v1/messages",
            json={
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "x"}],
                "tools": [{"name": "run", "input_schema": {"type": "object"}}],
            },
            timeout=10,
        )
        assert r.status_code == 200  # the agent is not affected
    deadline = time.monotonic() + 5
    while cap.recorder.stats().lost < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    writer._spool = real
    stats = cap.close()
    assert stats.lost == 3
    loud = [m for m in cap.reports if "NOT RECORDING" in m]  # type: ignore[attr-defined]
    assert len(loud) == 1 and "No space left" in loud[0]


def test_forward_mode_proxy_and_ca_environment(
    upstream: Upstream, start_capture: Callable[..., Capture], tmp_path: Path
) -> None:
    from agentx.capture.runner import agent_env

    cap = start_capture(None, mode="forward")
    with httpx.Client(proxy=cap.url, timeout=10) as client:
        r = client.post(
            upstream.url + "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
        )
    assert r.status_code == 200
    env = agent_env(cap.config, cap.url, cap.confdir, base={"NO_PROXY": "*"})
    ca = (cap.confdir / "mitmproxy-ca-cert.pem").read_bytes()
    assert env["HTTPS_PROXY"] == env["http_proxy"] == cap.url and "NO_PROXY" not in env
    assert env["NODE_EXTRA_CA_CERTS"] == str(cap.confdir / "mitmproxy-ca-cert.pem")
    bundle = Path(env["SSL_CERT_FILE"]).read_bytes()
    assert env["REQUESTS_CA_BUNDLE"] == env["CODEX_CA_CERTIFICATE"] == env["SSL_CERT_FILE"]
    assert (
        bundle.endswith(ca) and bundle.count(b"BEGIN CERTIFICATE") > 10
    )  # system roots + agentx's
    cap.close()
    (row,) = read_trace(tmp_path / "trace.parquet")
    assert row.api == Api.OPENAI_CHAT and row.response.text == "All done after 0 tool calls."
    # the host the agent asked for, beside the path (telemetry elsewhere is told apart)
    assert row.host == upstream.url.removeprefix("http://") and row.path == "/v1/chat/completions"


def test_target_host_names_the_port_only_off_the_default() -> None:
    from agentx.capture.addon import target_host

    assert target_host("https", "api.anthropic.com", 443) == "api.anthropic.com"
    assert target_host("http", "127.0.0.1", 8011) == "127.0.0.1:8011"
    assert target_host("https", "::1", 8443) == "[::1]:8443"
    assert target_host("http", "", 80) is None
