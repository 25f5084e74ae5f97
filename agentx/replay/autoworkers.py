"""``--workers auto``: how many client processes a run needs, from two measurements.

The rule (:func:`auto_workers`, pure)::

    demand   = lanes x stream_rate            chunks/s the run may have to consume
    capacity = chunks per CPU-second one client process consumes on this machine
    workers  = ceil(demand / (TARGET_UTILISATION x capacity)), clamped to
               [1, min(usable cores, lanes, sessions to replay)]

``TARGET_UTILISATION`` (0.5) leaves half of each process for what the capacity measurement
leaves out (socket reads, the event loop, building request bodies) and for bursts: the replay
warns that the client is the bottleneck at 90 % of a core. More processes than usable cores
only add contention, more than lanes or sessions would idle.

The measurements (:func:`measure`):

- ``capacity``: the lanes' data path (llhttp framing + the SSE parser of
  :mod:`agentx.replay.http1` and :class:`agentx.apis.openai_chat.ChatStreamParser`) fed a vLLM-shaped stream one event
  per read, in this process, for ~0.1 s of CPU. ``scripts/bench_client.py`` measures the whole
  client over sockets; this is its per-chunk floor on this machine, now.
- ``stream_rate``: one short streamed request (64 tokens) to the endpoint before the run, its
  token chunks per second after the first: the fastest a single stream decodes there (a
  stream only slows down as the batch grows, so the demand is an upper bound). When it fails,
  :data:`FALLBACK_STREAM_RATE` is assumed and the run says so.
"""

from __future__ import annotations

import dataclasses
import math
import os
import ssl
import sys
import time
from dataclasses import dataclass

import orjson

from agentx.apis.openai_chat import ChatStreamParser
from agentx.replay.client import make_stream_client, stream_request
from agentx.replay.http1.connection import HTTPConnection
from agentx.replay.options import ReplayOptions
from agentx.replay.setup import probe_setup, run_tls
from agentx.workload.plan import ReplayPlan

TARGET_UTILISATION = 0.5
FALLBACK_STREAM_RATE = 200.0  # chunks/s of one stream: a fast GPU decode
PROBE_TOKENS = 64
CALIBRATION_CPU_S = 0.1


@dataclass(frozen=True, slots=True)
class WorkersChoice:
    workers: int
    cores: int
    capacity_chunks_per_s: float
    stream_chunks_per_s: float
    demand_chunks_per_s: float
    note: str | None = None  # how a measurement fell back

    def config(self) -> dict[str, object]:
        return {
            "workers": self.workers,
            "rule": "ceil(lanes x stream_rate / (0.5 x capacity)), within [1, min(cores, lanes, sessions)]",
            "cores": self.cores,
            "capacity_chunks_per_s": _finite(self.capacity_chunks_per_s),
            "stream_chunks_per_s": _finite(self.stream_chunks_per_s),  # None: all in one read
            "demand_chunks_per_s": _finite(self.demand_chunks_per_s),
            "note": self.note,
        }


def _finite(x: float) -> float | None:
    return round(x, 1) if math.isfinite(x) else None


def _shown(x: float) -> str:
    return f"{x:,.0f}" if math.isfinite(x) else "unbounded (every token in one read)"


def auto_workers(
    *,
    lanes: int,
    sessions: int,
    cores: int,
    capacity_chunks_per_s: float,
    stream_chunks_per_s: float,
) -> int:
    """The rule above: processes for ``lanes`` streams of ``stream_chunks_per_s`` each."""
    demand = lanes * stream_chunks_per_s
    per_process = TARGET_UTILISATION * max(capacity_chunks_per_s, 1.0)
    need = math.ceil(demand / per_process) if math.isfinite(demand) else lanes
    return max(1, min(need, cores, lanes, sessions))


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _event(i: int) -> bytes:
    delta = {"content": f" tok{i % 97}"}
    obj = {
        "id": "chatcmpl-calibration",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "calibration",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}],
    }
    payload = b"data: " + orjson.dumps(obj) + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(payload), payload)


class _Transport:
    """Enough of a transport for :class:`HTTPConnection` to run without a socket."""

    def write(self, data: bytes) -> None:
        pass

    def abort(self) -> None:
        pass


async def capacity_chunks_per_s(cpu_s: float = CALIBRATION_CPU_S) -> float:
    """Chunks per CPU-second of the lanes' data path on this machine (one event per read)."""
    reads = [_event(i) for i in range(256)]
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    chunks = 0
    start = time.process_time()
    while time.process_time() - start < cpu_s:
        conn = HTTPConnection()
        conn.connection_made(_Transport())  # type: ignore[arg-type]
        conn.begin(b"", b"")
        conn.data_received(head)
        parser = ChatStreamParser()
        conn.attach(parser.feed)
        for data in reads:
            conn.data_received(data)
        chunks += parser.token_chunks
    spent = time.process_time() - start
    return chunks / spent if spent > 0 else float("inf")


async def stream_chunks_per_s(
    root_url: str,
    *,
    model: str,
    api_mode: str,
    headers: dict[str, str],
    params: dict[str, str],
    ignore_eos: bool,
    timeout_s: float,
    tls: ssl.SSLContext | None = None,
) -> float | None:
    """Token chunks per second of one short streamed request; None when it failed."""
    if api_mode == "messages":
        path = "/v1/messages"
        body: dict[str, object] = {
            "model": model,
            "max_tokens": PROBE_TOKENS,
            "stream": True,
            "messages": [{"role": "user", "content": "Count from 1 to 100."}],
        }
        api = "anthropic.messages"
    else:
        path = "/v1/chat/completions"
        body = {
            "model": model,
            "max_tokens": PROBE_TOKENS,
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "Count from 1 to 100."}],
        }
        api = "openai.chat"
    if ignore_eos:
        body["ignore_eos"] = True
    async with make_stream_client(
        root_url,
        timeout_s=timeout_s,
        max_connections=1,
        headers=headers,
        params=params,
        tls=tls,
    ) as client:
        out = await stream_request(client, path, orjson.dumps(body), api, timeout_s=timeout_s)
    if not out.ok or not out.itl_ns:
        return None
    span_ns = sum(out.itl_ns)
    return len(out.itl_ns) / (span_ns / 1e9) if span_ns > 0 else float("inf")


async def resolve_workers(
    options: ReplayOptions, plan: ReplayPlan
) -> tuple[ReplayOptions, WorkersChoice]:
    """``options`` with ``--workers auto`` replaced by the rule's answer, and why."""
    setup = await probe_setup(dataclasses.replace(options, workers=1), plan)
    capacity = await capacity_chunks_per_s()
    rate = await stream_chunks_per_s(
        setup.root_url,
        model=setup.model,
        api_mode=options.workload.api,
        headers=setup.headers,
        params=setup.params,
        ignore_eos=setup.build.ignore_eos,
        timeout_s=min(options.timeout_s, 60.0),
        tls=run_tls(options),
    )
    note = None
    if rate is None:
        rate = FALLBACK_STREAM_RATE
        note = (
            f"the probe request did not stream: assumed {FALLBACK_STREAM_RATE:g} chunks/s a stream"
        )
    cores = usable_cores()
    workers = auto_workers(
        lanes=setup.lanes,
        sessions=len(plan.sessions),
        cores=cores,
        capacity_chunks_per_s=capacity,
        stream_chunks_per_s=rate,
    )
    choice = WorkersChoice(workers, cores, capacity, rate, setup.lanes * rate, note)
    print(
        f"agentx: --workers auto: {workers} (lanes x stream rate = "
        f"{_shown(choice.demand_chunks_per_s)} chunks/s; one process: {_shown(capacity)} "
        f"chunks/CPU-s; {cores} usable cores)",
        file=sys.stderr,
    )
    return dataclasses.replace(options, workers=workers), choice
