"""The streaming requests of a replay, and the HTTP clients it talks through.

:func:`stream_request` sends one request on the lanes' client (:mod:`agentx.replay.http1`, a
minimal HTTP/1.1 client whose protocol feeds each read to the SSE parser) and returns what it
measured. :func:`make_http_client` is httpx's API on the aiohttp transport (``httpx-aiohttp``),
for everything off the hot path (probe, metrics scrapes, cache reset). ``scripts/bench_client.py``
measures the clients side by side; the figures are in ``docs/benchmarks.md``. Both verify an
https server with the one :func:`tls_context` of the run's ``--insecure`` / ``--ca-bundle``.

Every failure of one request becomes data on its row (``error_type`` from
:mod:`agentx.core.record`); nothing here raises for a per-request fault.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson
from httpx_aiohttp import AiohttpTransport

from agentx.apis.encodings import DECODE_ERRORS, StreamDecoder, decode_body
from agentx.apis.registry import family
from agentx.apis.stream import StreamParser, StreamProtocolError
from agentx.apis.usage import checked_usage
from agentx.core.errors import UsageError
from agentx.core.models import JSON
from agentx.core.record import (
    ERR_BAD_USAGE,
    ERR_CANCELLED,
    ERR_CONNECT,
    ERR_HTTP,
    ERR_NO_CONTENT,
    ERR_NO_USAGE,
    ERR_NOT_A_STREAM,
    ERR_PROTOCOL,
    ERR_REDIRECT,
    ERR_RESET,
    ERR_TIMEOUT,
    NO_GAPS,
    Gaps,
    redirect_error,
)
from agentx.core.urls import credential_values, redact_url, redact_values
from agentx.replay.http1.connection import Response, Sink
from agentx.replay.http1.errors import (
    ConnectError,
    ConnectionClosed,
    ConnectTimeout,
    HTTPTransportError,
    MalformedResponse,
)
from agentx.replay.http1.pool import StreamClient

USER_AGENT = "agentx-replay"
CONNECT_TIMEOUT_S = 30.0
ERROR_BODY_BYTES = 2048


@dataclass(frozen=True, slots=True)
class StreamOutcome:
    """What one request produced, measured from ``sent_ns`` (a ``perf_counter_ns`` instant)."""

    sent_ns: int
    status: int | None
    ok: bool
    error_type: str | None = None
    error: str | None = None
    ttfb_ns: int | None = None
    ttft_ns: int | None = None
    ttfc_ns: int | None = None
    e2e_ns: int | None = None
    itl_ns: Gaps = NO_GAPS
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    assistant: JSON = None  # the live assistant turn (chat message), when asked for


@functools.lru_cache(maxsize=4)
def tls_context(*, insecure: bool = False, ca_bundle: Path | None = None) -> ssl.SSLContext:
    """The TLS context of every https connection a run makes, one per process and setting
    (building one loads the CA bundle, ~40 ms). Verifying by default against certifi's bundle
    (as httpx does: not the system's), or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set;
    ``ca_bundle``: those CAs instead; ``insecure``: no verification at all."""
    if insecure:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    if ca_bundle is None:
        return httpx.create_ssl_context()
    try:
        return ssl.create_default_context(cafile=os.fspath(ca_bundle))
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(
            f"--ca-bundle {ca_bundle}: not a PEM file of certificates ({exc})"
        ) from None


def default_ca_bundle() -> str:
    """Where the default context's CAs come from (said in the hint for an untrusted server)."""
    import certifi

    return os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR") or certifi.where()


def tls_problem(exc: BaseException) -> tuple[str, bool] | None:
    """The words for a TLS failure in ``exc``'s chain and whether it is the certificate (not
    trusted, or not the host's) rather than the handshake; ``None``: no TLS failure."""
    cause: BaseException | None = exc
    seen: list[BaseException] = []
    while cause is not None and cause not in seen:
        seen.append(cause)
        # aiohttp's wrappers (ssl errors themselves, without their details): the error inside
        if isinstance(cause, aiohttp.ClientConnectorCertificateError):
            cause = cause.certificate_error
            continue
        if isinstance(cause, aiohttp.ClientSSLError):
            cause = cause.os_error
            continue
        if isinstance(cause, ssl.SSLCertVerificationError):
            why = cause.verify_message or cause.reason or "verification failed"
            return f"its TLS certificate is not trusted ({why})", True
        if isinstance(cause, ssl.SSLError):
            return f"the TLS handshake failed ({cause.reason or cause})", False
        cause = cause.__cause__ or cause.__context__
    return None


def make_http_client(
    base_url: str,
    *,
    timeout_s: float,
    max_connections: int,
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    tls: ssl.SSLContext | None = None,
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` on ``AiohttpTransport`` with explicit timeouts and limits.

    httpx's defaults (5 s timeouts, 100 connections) are wrong for long streamed generations
    under load: the read timeout here is the whole ``--timeout``, and the pool holds one
    connection per concurrently running thread so no request queues inside the client.
    ``tls``: how an https server is verified (default: :func:`tls_context`'s default).
    """
    limits = httpx.Limits(
        max_connections=max_connections,
        max_keepalive_connections=max_connections,
        keepalive_expiry=30.0,
    )

    tls = tls or tls_context()

    def session() -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=max_connections,
            limit_per_host=0,
            keepalive_timeout=30.0,
            ttl_dns_cache=300,
            ssl=tls,
        )
        return aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None),
            auto_decompress=False,
            trust_env=False,
        )

    transport = AiohttpTransport(verify=tls, limits=limits, client=session)
    timeout = httpx.Timeout(
        connect=min(CONNECT_TIMEOUT_S, timeout_s), read=timeout_s, write=timeout_s, pool=timeout_s
    )
    base_headers = {"user-agent": USER_AGENT, "accept-encoding": "identity"}
    base_headers.update(headers or {})
    return httpx.AsyncClient(
        base_url=base_url,
        transport=transport,
        timeout=timeout,
        headers=base_headers,
        params=dict(params) if params else None,
        trust_env=False,
    )


_CONNECT = (aiohttp.ClientConnectorError, httpx.ConnectError, ConnectionRefusedError, ConnectError)
_TIMEOUT = (TimeoutError, aiohttp.ServerTimeoutError, httpx.TimeoutException, ConnectTimeout)
_RESET = (
    ConnectionClosed,
    aiohttp.ClientPayloadError,
    aiohttp.ServerDisconnectedError,
    ConnectionResetError,
    BrokenPipeError,
    httpx.ReadError,
    httpx.RemoteProtocolError,
)


def classify(exc: BaseException, *, streaming: bool) -> tuple[str, str]:
    """``(error_type, message)`` of a transport exception.

    httpx-aiohttp re-raises aiohttp's exceptions as httpx ones, not always faithfully (a server
    that hangs up becomes ``httpx.ConnectTimeout``), so the chain is read from its root: the
    most precise exception wins.
    """
    chain: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and cause not in chain:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    root = chain[-1]
    text = _short(root) or _short(exc) or type(root).__name__
    for e in reversed(chain):
        if isinstance(e, _CONNECT):
            return ERR_CONNECT, text
        if isinstance(e, _RESET):
            return ERR_RESET, text
        if isinstance(e, _TIMEOUT):
            return ERR_TIMEOUT, text
    if isinstance(root, aiohttp.ClientError | OSError):  # other socket trouble
        return (ERR_RESET if streaming else ERR_CONNECT), text
    return ERR_PROTOCOL, text


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else ""


def make_stream_client(
    base_url: str,
    *,
    timeout_s: float,
    max_connections: int,
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    tls: ssl.SSLContext | None = None,
) -> StreamClient:
    """The lanes' client (:mod:`agentx.replay.http1`): the same headers, query parameters and
    TLS context as :func:`make_http_client`, one connection per concurrently running thread."""
    base_headers = {
        "user-agent": USER_AGENT,
        "accept-encoding": "identity",
        "content-type": "application/json",
    }
    base_headers.update(headers or {})
    return StreamClient(
        base_url,
        connect_timeout_s=min(CONNECT_TIMEOUT_S, timeout_s),
        max_connections=max_connections,
        headers=base_headers,
        params=params,
        ssl_context=(tls or tls_context()) if base_url.startswith("https:") else None,
    )


async def stream_request(
    client: StreamClient,
    path: str,
    body: bytes,
    api: str,
    *,
    headers: Mapping[str, str] | None = None,
    live: bool = False,
    timeout_s: float | None = None,
    on_headers: Callable[[Mapping[str, str]], None] | None = None,
) -> StreamOutcome:
    """POST ``body`` to ``path`` and consume the streamed answer, timestamping every read.
    ``on_headers`` is given the response's headers (a router's session token, llm-d's). The
    outcome's error text (the server's words, maybe) never carries a credential the request
    sent: a server that echoes the key gets ``REDACTED`` stored."""
    secrets = (*client.secrets, *credential_values(headers or {}))
    outcome = await _stream_request(
        client, path, body, api, headers, live, timeout_s, secrets, on_headers
    )
    if outcome.error is None or not secrets:
        return outcome
    return replace(outcome, error=redact_values(outcome.error, secrets))


async def _stream_request(
    client: StreamClient,
    path: str,
    body: bytes,
    api: str,
    headers: Mapping[str, str] | None,
    live: bool,
    timeout_s: float | None,
    secrets: tuple[str, ...],
    on_headers: Callable[[Mapping[str, str]], None] | None,
) -> StreamOutcome:
    parser = family(api).stream_parser(live)
    sent_ns = time.perf_counter_ns()
    status: int | None = None
    ttfb_ns: int | None = None
    streaming = False
    try:
        async with asyncio.timeout(timeout_s), client.post(path, body, headers) as response:
            status = response.status
            ttfb_ns = response.headers_ns - sent_ns
            if on_headers is not None:
                on_headers(response.headers)
            if status >= 400:
                detail = await _error_body(response, secrets)
                return StreamOutcome(
                    sent_ns, status, False, ERR_HTTP, f"HTTP {status}: {detail}", ttfb_ns=ttfb_ns
                )
            wrong = _not_an_answer(response)
            if wrong is not None:
                return StreamOutcome(sent_ns, status, False, *wrong, ttfb_ns=ttfb_ns)
            ctype = response.headers.get("content-type", "")
            encoding = response.headers.get("content-encoding")
            if "json" in ctype and "event-stream" not in ctype:
                raw = _decoded(await response.read(), encoding)
                return _non_streamed(api, sent_ns, status, ttfb_ns, raw, live)
            streaming = True
            end_ns = await response.stream(_decoding(parser.feed, encoding))
            parser.finish(end_ns)
    except asyncio.CancelledError:
        # the run was stopped (Ctrl-C): the request becomes a row; the cancellation is handled
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        return _partial(parser, sent_ns, status, ttfb_ns, ERR_CANCELLED, "request cancelled")
    except (StreamProtocolError, MalformedResponse) as exc:
        return _partial(parser, sent_ns, status, ttfb_ns, ERR_PROTOCOL, str(exc))
    except (HTTPTransportError, OSError, TimeoutError) as exc:
        error_type, message = classify(exc, streaming=streaming)
        if isinstance(exc, TimeoutError):
            message = f"no complete answer within --timeout {timeout_s:g} s"
        return _partial(parser, sent_ns, status, ttfb_ns, error_type, message)
    except Exception as exc:  # whatever else the answer provoked is this request's failure
        message = f"unexpected answer ({type(exc).__name__}: {str(exc)[:200]})"
        return _partial(parser, sent_ns, status, ttfb_ns, ERR_PROTOCOL, message)
    return _complete(parser, sent_ns, status, ttfb_ns, end_ns)


def _not_an_answer(response: Response) -> tuple[str, str] | None:
    """``(error_type, message)`` of a status below 400 that carries no answer: a redirect
    (not followed: the endpoint moved), a body-less 2xx, a web page where a stream belongs."""
    status, headers = response.status, response.headers
    if 300 <= status < 400:
        where = headers.get("location")
        return ERR_REDIRECT, redirect_error(status, redact_url(where) if where else None)
    if status == 204 or headers.get("content-length", "").strip() == "0":
        return ERR_NO_CONTENT, f"HTTP {status} without a body"
    if "text/html" in headers.get("content-type", "").lower():
        return ERR_NOT_A_STREAM, f"HTTP {status} text/html: a web page, not an answer"
    return None


def _decoded(raw: bytes, encoding: str | None) -> bytes:
    try:
        return decode_body(raw, encoding)
    except ValueError as exc:
        raise StreamProtocolError(str(exc)) from None


def _decoding(feed: Sink, encoding: str | None) -> Sink:
    """``feed`` behind the answer's ``Content-Encoding`` (asked for ``identity``, a server may
    compress anyway): each read decoded as it arrives, keeping its instant."""
    try:
        decoder = StreamDecoder(encoding)
    except ValueError as exc:
        raise StreamProtocolError(str(exc)) from None
    if decoder.identity:
        return feed

    def sink(data: bytes, t_ns: int) -> None:
        try:
            out = decoder.feed(data)
        except DECODE_ERRORS as exc:
            raise StreamProtocolError(f"cannot decode {encoding} stream: {exc}") from None
        if out:
            feed(out, t_ns)

    return sink


async def _error_body(response: Response, secrets: tuple[str, ...]) -> str:
    """The server's message, cut to 200 characters once its credentials are out (a key cut in
    two by the cut would be found in neither half)."""
    try:
        raw = await response.read(ERROR_BODY_BYTES)
    except (HTTPTransportError, OSError):
        raw = b""
    encoding = response.headers.get("content-encoding")
    if raw and encoding:  # a compressed error body is the server's words once decoded
        why: Exception | None = None
        try:
            raw = StreamDecoder(encoding).feed(raw)  # incremental: the read may be cut short
        except ValueError as exc:  # an encoding agentx does not know
            why = exc
        except DECODE_ERRORS as exc:
            why = exc
        if why is not None:
            return f"{response.reason} (a {encoding} body that does not decode: {why})"[:200]
    if secrets:
        raw = redact_values(raw.decode("utf-8", "replace"), secrets).encode()
    try:
        obj = orjson.loads(raw)
        if isinstance(obj, dict):
            err = obj.get("error", obj)
            msg = err.get("message") if isinstance(err, dict) else err
            if msg is None and isinstance(obj.get("detail"), str):
                msg = obj["detail"]
            if msg is not None:
                return str(msg)[:200]
    except orjson.JSONDecodeError:
        pass
    text = raw.decode("utf-8", "replace").strip().replace("\n", " ")
    return text[:200] or response.reason


def _relative(t: int | None, sent_ns: int) -> int | None:
    return None if t is None else t - sent_ns


def _partial(
    parser: StreamParser,
    sent_ns: int,
    status: int | None,
    ttfb_ns: int | None,
    error_type: str,
    error: str,
) -> StreamOutcome:
    return _outcome(parser, sent_ns, status, ttfb_ns, time.perf_counter_ns(), error_type, error)


def _outcome(
    parser: StreamParser,
    sent_ns: int,
    status: int | None,
    ttfb_ns: int | None,
    end_ns: int,
    error_type: str | None,
    error: str | None,
    *,
    ok: bool = False,
) -> StreamOutcome:
    """What one stream measured: the parser's timestamps relative to ``sent_ns``."""
    return StreamOutcome(
        sent_ns=sent_ns,
        status=status,
        ok=ok,
        error_type=error_type,
        error=error,
        ttfb_ns=ttfb_ns,
        ttft_ns=_relative(parser.first_token_ns, sent_ns),
        ttfc_ns=_relative(parser.first_content_ns, sent_ns),
        e2e_ns=end_ns - sent_ns,
        itl_ns=Gaps(parser.itl_ns),
        prompt_tokens=parser.prompt_tokens,
        completion_tokens=parser.completion_tokens,
        cached_tokens=parser.cached_tokens,
        assistant=parser.assistant_message() if ok and parser.live else None,
    )


def _complete(
    parser: StreamParser, sent_ns: int, status: int | None, ttfb_ns: int | None, end_ns: int
) -> StreamOutcome:
    if not parser.done and not parser.usage_seen and parser.finish_reason is None:
        return _partial(
            parser, sent_ns, status, ttfb_ns, ERR_RESET, "stream ended before its final event"
        )
    error_type = error = None
    if not parser.usage_seen:
        error_type, error = ERR_NO_USAGE, "stream ended without a usage block"
    elif parser.usage_problem:
        error_type, error = ERR_BAD_USAGE, f"impossible usage: {parser.usage_problem}"
    return _outcome(parser, sent_ns, status, ttfb_ns, end_ns, error_type, error, ok=True)


def _non_streamed(
    api: str, sent_ns: int, status: int, ttfb_ns: int, raw: bytes, live: bool
) -> StreamOutcome:
    """A server that ignored ``stream: true`` and answered with one JSON body."""
    end = time.perf_counter_ns() - sent_ns
    try:
        obj: Any = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return StreamOutcome(sent_ns, status, False, ERR_PROTOCOL, "response is not JSON", ttfb_ns)
    if not isinstance(obj, dict):
        return StreamOutcome(
            sent_ns, status, False, ERR_PROTOCOL, "response is not an object", ttfb_ns
        )
    choices = obj.get("choices")
    message: JSON = None
    if choices is not None:
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            return StreamOutcome(
                sent_ns, status, False, ERR_PROTOCOL, "response choices are not objects", ttfb_ns
            )
        message = choices[0].get("message") if choices else None
        if message is not None and not isinstance(message, dict):
            return StreamOutcome(
                sent_ns, status, False, ERR_PROTOCOL, "response message is not an object", ttfb_ns
            )
    raw_usage = obj.get("usage")
    tokens, problem = checked_usage(api, raw_usage, obj.get("timings"))
    error_type = error = None
    if raw_usage is None:
        error_type, error = ERR_NO_USAGE, "response without a usage block"
    elif problem:
        error_type, error = ERR_BAD_USAGE, f"impossible usage: {problem}"
    return StreamOutcome(
        sent_ns=sent_ns,
        status=status,
        ok=True,
        error_type=error_type,
        error=error,
        ttfb_ns=ttfb_ns,
        ttft_ns=end,
        ttfc_ns=end,
        e2e_ns=end,
        prompt_tokens=tokens.prompt_tokens,
        completion_tokens=tokens.completion_tokens,
        cached_tokens=tokens.cached_tokens,
        assistant=message if live else None,
    )
