"""serve-sim against a flood: a request head or body that never completes is closed after its
timeout (300 half-header connections stayed open past 90 s), connections beyond the limit are
refused while the server keeps answering the rest, and each condition is one log line (at
file-descriptor exhaustion asyncio logged a traceback a second, 438 MB in ~100 s).

Real sockets against a real serve-sim (on a thread, and as an ``agentx serve-sim`` subprocess
for the descriptor limit).
"""

from __future__ import annotations

import logging
import resource
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from urllib.parse import urlsplit

import pytest

from agentx.serve_sim import SimServer
from agentx.serve_sim.config import SimConfig

HALF_HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\ncontent-type: app"


@contextmanager
def sim(**settings: object) -> Iterator[tuple[str, int]]:
    with SimServer(SimConfig.of(port=0, fast=True, **settings)) as srv:
        yield "127.0.0.1", srv.port


def connect(addr: tuple[str, int], first: bytes = b"") -> socket.socket:
    s = socket.create_connection(addr, timeout=10)
    if first:
        s.sendall(first)
    return s


def closed_within(s: socket.socket, seconds: float) -> bytes | None:
    """What the server sent before closing ``s`` within ``seconds``; ``None``: still open."""
    got = b""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([s], [], [], left)[0]:
            return None
        try:
            data = s.recv(65536)
        except ConnectionResetError:
            return got
        if not data:
            return got
        got += data
    return None


def health(addr: tuple[str, int]) -> bytes:
    with connect(addr, b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") as s:
        return closed_within(s, 10) or b""


def said(caplog: pytest.LogCaptureFixture, words: str) -> int:
    return sum(words in r.getMessage() for r in caplog.records if r.name == "agentx.serve_sim")


def test_half_heads_are_closed_after_the_header_timeout(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "agentx.serve_sim")
    with sim(header_timeout_s=0.5) as addr, ExitStack() as stack:
        socks = [stack.enter_context(connect(addr, HALF_HEAD)) for _ in range(30)]
        silent = stack.enter_context(connect(addr))  # connected, sent nothing
        t0 = time.monotonic()
        for s in [*socks, silent]:
            assert closed_within(s, 10) == b""
        assert time.monotonic() - t0 < 8
        assert health(addr).startswith(b"HTTP/1.1 200")  # still serving
    assert said(caplog, "request head took longer than 0.5 s") == 1  # not 31 lines


def test_a_kept_alive_connection_is_not_a_slow_head() -> None:
    """The head timer runs until a request's head is parsed, not over the idle time after."""
    with sim(header_timeout_s=0.5) as addr, connect(addr) as s:
        for _ in range(2):
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert s.recv(65536).startswith(b"HTTP/1.1 200")
            time.sleep(1.0)  # idle past the head timeout, between requests


def test_a_trickled_body_is_a_408_after_the_body_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "agentx.serve_sim")
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        b"content-type: application/json\r\ncontent-length: 1000\r\n\r\n{"
    )
    with sim(body_timeout_s=0.5) as addr, ExitStack() as stack:
        socks = [stack.enter_context(connect(addr, head)) for _ in range(5)]
        for s in socks:
            answer = closed_within(s, 10)
            assert answer is not None and answer.startswith(b"HTTP/1.1 408"), answer
            assert b"request body not received within 0.5 s" in answer
    assert said(caplog, "request body took longer than 0.5 s") == 1


def test_connections_beyond_the_limit_are_refused(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "agentx.serve_sim")
    with sim(max_connections=4, header_timeout_s=60) as addr, ExitStack() as stack:
        held = [stack.enter_context(connect(addr, HALF_HEAD)) for _ in range(4)]
        time.sleep(0.2)  # accepted
        for _ in range(10):
            with connect(addr, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n") as extra:
                assert closed_within(extra, 10) == b""  # refused: closed, no answer
        for s in held:
            assert closed_within(s, 0.1) is None  # the ones admitted stay
        held[0].close()
        time.sleep(0.2)
        assert health(addr).startswith(b"HTTP/1.1 200")  # room again
    assert said(caplog, "4 connections open: refusing more") == 1


# serve-sim with no descriptors held back for itself, under a low descriptor limit: a flood
# runs it out of descriptors at accept()
NO_RESERVE = """
import sys
import agentx.serve_sim.guard as guard
guard.FD_RESERVE = 0
sys.argv = ["agentx", *sys.argv[1:]]
from agentx.cli import main
main()
"""


def test_descriptor_exhaustion_is_one_line_not_a_traceback_a_second() -> None:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (96, 96))

    proc = subprocess.Popen(
        [sys.executable, "-c", NO_RESERVE, "serve-sim", "--port", "0", "--fast"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limit,
    )
    try:
        assert proc.stdout is not None
        url = urlsplit(proc.stdout.readline().strip())
        assert url.port, "serve-sim did not start"
        addr = ("127.0.0.1", url.port)
        with ExitStack() as stack:
            for _ in range(150):
                try:
                    stack.enter_context(connect(addr, HALF_HEAD))
                except OSError:
                    break
            time.sleep(3.5)  # asyncio retries accept() every second
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err[-3000:]
    lines = [line for line in err.splitlines() if "cannot accept connections" in line]
    assert len(lines) == 1, err[-3000:]
    assert "Too many open files" in lines[0]
