"""The HTTP face of serve-sim (aiohttp): OpenAI chat and Responses, Anthropic messages, Gemini
generateContent, models, metrics.

Server-side timing, so a client can measure its own error: non-streaming responses carry
``x-agentx-server-ttft-ms``, ``x-agentx-server-queue-ms`` and ``x-agentx-server-e2e-ms``
headers; an SSE stream carries the same figures in a comment line (ignored by SSE clients and
SDKs) just before its last event (``data: [DONE]``, ``message_stop``, ``response.completed``,
Gemini's last chunk; a Gemini JSON-array stream has no place for it)::

    : agentx-server-timing {"ttft_ms": 12.1, "queue_ms": 0.0, "e2e_ms": 85.3}

``ttft_ms`` runs from the handler's start (request head parsed, before the body is read) to the
moment the first token chunk is handed to the socket; ``e2e_ms`` to the terminator.
Running the application: :mod:`agentx.serve_sim.server`.

With ``--replicas N`` the application holds N replicas, each its own engine, KV cache and
``/metrics``, every endpoint of replica I under the path prefix ``/replicas/I`` (so a client
routing on its own gives ``--endpoint URL/replicas/0 --endpoint URL/replicas/1``). The top-level
paths are a built-in router (``--router POLICY``, :mod:`agentx.routing`'s policies): it reads
the session a request names in any ``--session-header`` preset's headers
(:func:`agentx.routing.headers.routing_key`), keeps a request that sends back an
``x-session-token`` it answered on the replica that token names (llm-d's echo), and answers
``x-session-token`` and ``x-agentx-replica`` naming the replica that served. Behind a router
there is no top-level ``/metrics`` (a router has no engine): each replica's is its own.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from aiohttp import web

from agentx import __version__
from agentx.apis import Api
from agentx.apis.family import Family
from agentx.apis.registry import FAMILIES, family
from agentx.apis.serving import RequestError, Route, check_context, parse_json
from agentx.apis.translate import to_chat
from agentx.core.models import JSON
from agentx.prefixcache.hashing import HashArray, block_hashes
from agentx.prefixcache.tokenizer import Tokenizer, resolve_tokenizer
from agentx.prefixcache.tokens import set_encode_memo_tokens
from agentx.routing import Router, RouteRequest, make_router
from agentx.routing.headers import LLM_D_TOKEN, replica_token, routing_key, token_replica
from agentx.serve_sim.config import SimConfig
from agentx.serve_sim.delivery import complete, json_response, stream
from agentx.serve_sim.guard import Guard
from agentx.serve_sim.output import plan_output
from agentx.serve_sim.replica import Replica

log = logging.getLogger("agentx.serve_sim")

MAX_BODY_BYTES = 256 * 1024 * 1024
TOKENIZE_IN_THREAD_BYTES = 16 * 1024  # bodies above this are tokenized off the event loop
# Encodings remembered (agentx.prefixcache.tokens: long messages in pieces): dozens of ~100K-token contexts
# in flight each re-send what they sent before plus a little; ~12 bytes per token held.
ENCODE_MEMO_TOKENS = 16 << 20
_WARMUP: dict[str, JSON] = {"messages": [{"role": "user", "content": "warm up"}]}


REPLICA_PREFIX = "/replicas/{replica:\\d+}"  # replica I's endpoints, with --replicas N > 1


@dataclass(slots=True)
class _State:
    replicas: list[Replica]
    executor: ThreadPoolExecutor
    tokenizer: Tokenizer
    router: Router | None = None  # --replicas N > 1: the top-level paths' router
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def replica(self) -> Replica:
        """The first replica (the only one without --replicas): the server's settings."""
        return self.replicas[0]

    def next_id(self, prefix: str) -> str:
        return f"{prefix}{self.replica.config.seed:04x}{next(self.ids):012x}"

    def addressed(self, request: web.Request) -> int | None:
        """The replica a ``/replicas/I`` path names (404 past the last), ``None`` for a
        top-level path behind a router; 0 when there is one replica."""
        index = request.match_info.get("replica")
        if index is None:
            return None if self.router is not None else 0
        if int(index) >= len(self.replicas):
            raise web.HTTPNotFound()
        return int(index)

    def route(self, request: web.Request, route: RouteRequest) -> int:
        """The replica the router sends a top-level request to (llm-d's echoed token first)."""
        assert self.router is not None
        token = request.headers.get(LLM_D_TOKEN)
        pinned = token_replica(token, len(self.replicas)) if token else None
        return pinned if pinned is not None else self.router.pick(route)


STATE = web.AppKey("agentx_sim_state", _State)


def _error(
    api: str,
    status: int,
    message: str,
    param: str | None = None,
    code: str | None = None,
    kind: str | None = None,
) -> web.Response:
    return json_response(family(api).error_body(status, message, param, code, kind), status)


def _api_of(path: str) -> str:
    """The family whose error shape a path answers in (any other path: OpenAI chat's)."""
    for fam in FAMILIES.values():
        if path.startswith(fam.error_prefix):
            return fam.api
    return Api.OPENAI_CHAT


@web.middleware
async def _errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Every failure becomes a JSON error in the API's shape; nothing takes the server down."""
    api = _api_of(request.path)
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        message = exc.text or exc.reason
        if exc.status == 413:
            message = f"request body too large (limit {MAX_BODY_BYTES} bytes)"
        elif exc.status == 404:
            message = f"no such endpoint: {request.method} {request.path}"
        elif exc.status == 405:
            message = f"method {request.method} not allowed on {request.path}"
        return _error(api, exc.status, message)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("serve-sim: internal error on %s %s", request.method, request.path)
        return _error(api, 500, f"internal error: {type(exc).__name__}: {exc}")


def _tokenize(
    tokenizer: Tokenizer, api: str, body: dict[str, JSON], block_size: int
) -> tuple[int, HashArray]:
    tokens = tokenizer.request_tokens(api, body)
    return int(tokens.size), block_hashes(tokens, block_size)


async def _prompt(
    state: _State, api: str, body: dict[str, JSON], raw_len: int
) -> tuple[int, HashArray]:
    bs = state.replica.config.engine.block_size
    if raw_len < TOKENIZE_IN_THREAD_BYTES:
        return _tokenize(state.tokenizer, api, body, bs)
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(state.executor, _tokenize, state.tokenizer, api, body, bs)


async def _generate(request: web.Request, fam: Family) -> web.StreamResponse:
    route = fam.route(request.match_info.get("target", ""), request.query)
    if route is None:
        raise web.HTTPNotFound()
    state = request.app[STATE]
    index = state.addressed(request)
    replica = state.replicas[index or 0]
    clock = replica.clock
    t0 = clock()
    cfg = replica.config
    api = fam.api
    raw = await request.read()
    try:
        body = parse_json(raw)
        sreq = fam.parse_request(body, cfg.model, route)
        n_prompt, hashes = await _prompt(state, api, body, len(raw))
        check_context(fam.context_error, n_prompt, sreq.max_tokens, cfg.max_model_len)
    except RequestError as exc:
        return _error(api, exc.status, exc.message, exc.param, exc.code, exc.kind)
    plan = plan_output(
        api,
        body,
        max_tokens=sreq.max_tokens,
        room=cfg.max_model_len - n_prompt,
        min_tokens=sreq.min_tokens,
        ignore_eos=sreq.ignore_eos,
        eos_tokens=cfg.eos_tokens,
        default_tokens=cfg.default_max_tokens,
        call_id=state.next_id(fam.call_id_prefix),
    )
    rid, emitter = fam.emitter(state.next_id, sreq, plan, cfg.seed, route.sse)
    if index is not None:
        if sreq.stream:
            return await stream(request, replica, plan, emitter, hashes, n_prompt, t0, rid)
        return await complete(replica, plan, emitter, hashes, n_prompt, t0, rid)
    # the built-in router: the replica it picks serves, and the router counts its load
    router = state.router
    assert router is not None
    ask = RouteRequest(routing_key(request.headers), n_prompt, hashes)
    index = state.route(request, ask)
    replica = state.replicas[index]
    said = {LLM_D_TOKEN: replica_token(index), "x-agentx-replica": str(index)}
    router.started(index, ask)
    try:
        if sreq.stream:
            return await stream(
                request, replica, plan, emitter, hashes, n_prompt, t0, rid, extra_headers=said
            )
        return await complete(replica, plan, emitter, hashes, n_prompt, t0, rid, extra_headers=said)
    finally:
        router.finished(index, ask)


def _handler(fam: Family) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The route handler of ``fam``'s generation endpoint."""

    async def handle(request: web.Request) -> web.StreamResponse:
        return await _generate(request, fam)

    return handle


async def _count_tokens(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    raw = await request.read()
    try:
        body = parse_json(raw)
        anthropic = family(Api.ANTHROPIC_MESSAGES)
        anthropic.parse_request({**body, "max_tokens": 1}, state.replica.config.model, Route())
    except RequestError as exc:
        return _error(Api.ANTHROPIC_MESSAGES, exc.status, exc.message, exc.param)
    n, _ = await _prompt(state, Api.ANTHROPIC_MESSAGES, body, len(raw))
    return json_response({"input_tokens": n})


async def _version(request: web.Request) -> web.StreamResponse:
    """``/version`` as vLLM answers it: the agentx that serves."""
    return json_response({"version": __version__})


async def _models(request: web.Request) -> web.StreamResponse:
    cfg = request.app[STATE].replica.config
    created = int(time.time())
    model = {
        "id": cfg.model,
        "object": "model",
        "created": created,
        "owned_by": "agentx",
        "root": cfg.model,
        "parent": None,
        "max_model_len": cfg.max_model_len,
    }
    return json_response({"object": "list", "data": [model]})


async def _metrics(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    index = state.addressed(request)
    if index is None:  # a router has no engine of its own
        raise web.HTTPNotFound()
    text = state.replicas[index].render_metrics()
    return web.Response(
        text=text, content_type="text/plain", charset="utf-8", headers={"X-Format": "prometheus"}
    )


def _reset(request: web.Request) -> bool:
    """Reset the addressed replica's cache; behind the router, every replica's."""
    state = request.app[STATE]
    index = state.addressed(request)
    chosen = state.replicas if index is None else [state.replicas[index]]
    return all([r.reset_prefix_cache() for r in chosen])


async def _reset_prefix_cache(request: web.Request) -> web.StreamResponse:
    """vLLM's ``POST /reset_prefix_cache``: ``{"success": false}`` while requests hold blocks."""
    return json_response({"success": _reset(request)})


async def _flush_cache(request: web.Request) -> web.StreamResponse:
    """SGLang's ``/flush_cache``: 200 when flushed, 400 while requests run."""
    if _reset(request):
        return web.Response(text="Cache flushed.\n")
    return web.Response(status=400, text="Cache not flushed: requests are running.\n")


async def _health(request: web.Request) -> web.StreamResponse:
    return web.Response(status=200)


async def warm_up(app: web.Application) -> None:
    """Load the tokenizer before the first request pays for it (~0.1 s)."""
    state = app[STATE]
    loop = asyncio.get_running_loop()
    bs = state.replica.config.engine.block_size
    await loop.run_in_executor(
        state.executor, _tokenize, state.tokenizer, Api.OPENAI_CHAT, _WARMUP, bs
    )


def replica_of(app: web.Application) -> Replica:
    return app[STATE].replica


GUARD = web.AppKey("agentx_sim_guard", Guard)


def guard_of(app: web.Application) -> Guard:
    return app[GUARD]


def replicas_of(app: web.Application) -> tuple[Replica, ...]:
    return tuple(app[STATE].replicas)


def create_app(config: SimConfig) -> web.Application:
    """The aiohttp application for ``config`` (validated). Owns ``config.replicas``
    :class:`Replica` s (and their router when there are several)."""
    config.validate()
    set_encode_memo_tokens(ENCODE_MEMO_TOKENS)
    guard = Guard(
        max_connections=config.max_connections,
        header_timeout_s=config.header_timeout_s,
        body_timeout_s=config.body_timeout_s,
    )
    # the body's timeout inside _errors: a 408 in the API's shape
    middlewares = [guard.connections, _errors, guard.bodies]
    app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=middlewares)
    app[GUARD] = guard
    executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="agentx-sim-tokenize")
    tokenizer = resolve_tokenizer(config.tokenizer, to_chat=to_chat)
    replicas = [Replica(config) for _ in range(config.replicas)]
    router = (
        make_router(config.router, config.replicas, seed=config.seed)
        if config.replicas > 1
        else None
    )
    app[STATE] = _State(replicas, executor, tokenizer, router)

    async def _shutdown(app: web.Application) -> None:
        executor.shutdown(wait=False, cancel_futures=True)

    app.on_cleanup.append(_shutdown)
    r = app.router
    for prefix in ("", REPLICA_PREFIX) if config.replicas > 1 else ("",):
        for fam in FAMILIES.values():
            r.add_post(prefix + fam.serve_path, _handler(fam))
        r.add_post(prefix + "/v1/messages/count_tokens", _count_tokens)
        r.add_get(prefix + "/v1/models", _models)
        r.add_get(prefix + "/version", _version)
        r.add_get(prefix + "/metrics", _metrics)
        r.add_get(prefix + "/health", _health)
        r.add_post(prefix + "/reset_prefix_cache", _reset_prefix_cache)
        r.add_post(prefix + "/flush_cache", _flush_cache)
        r.add_get(prefix + "/flush_cache", _flush_cache)
    return app
