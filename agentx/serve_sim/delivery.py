"""The tokens of an admitted request, delivered on the engine's clock: a stream (SSE, or a
streamed JSON array for Gemini without ``alt=sse``) or, for a non-streaming request, one JSON
body when the last token is due. Either way the server-side timing
goes with it (see :mod:`agentx.serve_sim.app`) and the engine learns the request's end and latency.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import orjson
from aiohttp import web

from agentx.apis.answer import OutputPlan
from agentx.apis.emit import Emitter, UsageCounts
from agentx.core.models import JSON
from agentx.prefixcache.hashing import HashArray
from agentx.serve_sim.replica import Admission, Replica

log = logging.getLogger("agentx.serve_sim")

FAST_WRITE_TOKENS = 512  # tokens per write in --fast mode
NONSTREAM_SLICE_S = 0.05  # non-streaming requests re-read the batch size this often
STREAM_HEADERS = {"Cache-Control": "no-cache"}


def json_response(
    data: JSON, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        body=orjson.dumps(data), status=status, content_type="application/json", headers=headers
    )


async def _sleep_until(clock: Callable[[], float], when: float) -> None:
    delay = when - clock()
    if delay > 0:
        await asyncio.sleep(delay)


def _timing(t0: float, ttft_s: float | None, adm: Admission, end: float) -> dict[str, float | None]:
    return {
        "ttft_ms": None if ttft_s is None else round(ttft_s * 1000.0, 3),
        "queue_ms": round(adm.queue_s * 1000.0, 3),
        "e2e_ms": round((end - t0) * 1000.0, 3),
    }


def _reason(plan: OutputPlan) -> str:
    return "stop" if plan.finish == "tool" else plan.finish


async def stream(
    request: web.Request,
    replica: Replica,
    plan: OutputPlan,
    emitter: Emitter,
    hashes: HashArray,
    n_prompt: int,
    t0: float,
    rid: str,
    *,
    extra_headers: dict[str, str] | None = None,  # a router's: the replica that served
) -> web.StreamResponse:
    clock = replica.clock
    headers = {**STREAM_HEADERS, "Content-Type": emitter.content_type, "x-request-id": rid}
    if extra_headers:
        headers.update(extra_headers)
    resp = web.StreamResponse(headers=headers)
    await resp.prepare(request)  # headers go out now, as vLLM does, before queueing
    adm = await replica.admit(hashes, n_prompt, plan.tokens)
    usage = UsageCounts(n_prompt, adm.allocation.cached_tokens, plan.tokens)
    n = plan.tokens
    sent = 0
    finished = False
    ttft_s: float | None = None
    itls: list[float] = []
    try:
        if replica.config.engine.fast:
            ttft_s = clock() - t0
            stop = min(n, FAST_WRITE_TOKENS)
            await resp.write(emitter.opening(usage) + emitter.tokens(0, stop))
            sent = stop
            while sent < n:
                stop = min(n, sent + FAST_WRITE_TOKENS)
                await resp.write(emitter.tokens(sent, stop))
                sent = stop
        else:
            await _sleep_until(clock, adm.first_token_s)
            ttft_s = clock() - t0
            await resp.write(emitter.opening(usage) + emitter.token(0))
            sent = 1
            due = adm.first_token_s
            while sent < n:
                itl = replica.itl_s()
                due += itl
                await _sleep_until(clock, due)
                itls.append(itl)
                stop = sent + 1
                now = clock()
                while stop < n:  # the loop fell behind: send every token already due
                    itl = replica.itl_s()
                    if due + itl > now:
                        break
                    due += itl
                    itls.append(itl)
                    stop += 1
                await resp.write(
                    emitter.token(sent) if stop == sent + 1 else emitter.tokens(sent, stop)
                )
                sent = stop
        # the request is done: free its slot and blocks before the last bytes go out (as an
        # engine does), so a client's next request never finds them still held
        finished = True
        replica.finish(adm, _reason(plan), sent)
        end = clock()
        replica.observe_latency(ttft_s, end - t0, itls)
        closing = emitter.closing(usage)
        # the timing comment goes before the terminator so clients that stop there still get it
        if emitter.terminator is not None:
            cut = closing.rfind(emitter.terminator)
            timing = orjson.dumps(_timing(t0, ttft_s, adm, end))
            closing = closing[:cut] + b": agentx-server-timing " + timing + b"\n\n" + closing[cut:]
        await resp.write(closing)
        await resp.write_eof()
    except ConnectionError as exc:
        log.debug("serve-sim: stream %s aborted: %r", rid, exc)
    finally:
        if not finished:  # client gone (or handler cancelled) mid-stream
            replica.finish(adm, "abort", sent)
    return resp


async def complete(
    replica: Replica,
    plan: OutputPlan,
    emitter: Emitter,
    hashes: HashArray,
    n_prompt: int,
    t0: float,
    rid: str,
    *,
    extra_headers: dict[str, str] | None = None,
) -> web.Response:
    clock = replica.clock
    adm = await replica.admit(hashes, n_prompt, plan.tokens)
    reason = "abort"
    sent = 0
    try:
        itls: list[float] = []
        if not replica.config.engine.fast:
            await _sleep_until(clock, adm.first_token_s)
            remaining = plan.tokens - 1
            due = adm.first_token_s
            while remaining > 0:
                itl = replica.itl_s()
                k = min(remaining, max(1, int(NONSTREAM_SLICE_S / itl)))
                due += k * itl
                itls.extend([itl] * k)
                remaining -= k
                await _sleep_until(clock, due)
        ttft_s = adm.first_token_s - t0
        end = clock()
        reason = _reason(plan)
        sent = plan.tokens
    finally:
        replica.finish(adm, reason, sent)
    replica.observe_latency(ttft_s, end - t0, itls)
    timing = _timing(t0, ttft_s, adm, end)
    usage = UsageCounts(n_prompt, adm.allocation.cached_tokens, plan.tokens)
    headers = {
        "x-request-id": rid,
        "x-agentx-server-ttft-ms": str(timing["ttft_ms"]),
        "x-agentx-server-queue-ms": str(timing["queue_ms"]),
        "x-agentx-server-e2e-ms": str(timing["e2e_ms"]),
        **(extra_headers or {}),
    }
    return json_response(emitter.body(usage), headers=headers)
