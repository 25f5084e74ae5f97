"""The mitmproxy addon: timestamps and forwards, never parses on the proxy's event loop.

Every response is streamed through a :class:`ChunkTap` installed in ``responseheaders``: it
stamps each chunk with ``time.monotonic_ns()``, hands it to the recorder's queue, and returns it
unchanged, so the agent sees exactly the bytes, and the gaps, that the upstream sent. Each hook
swallows its own exceptions: a bug in agentx must never break the agent's request.

Standalone: ``mitmdump -s $(agentx capture --print-addon-path) --set agentx_out=trace.parquet``.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from mitmproxy import ctx, http

from agentx.capture.recorder import Recorder, summary_line
from agentx.capture.recorder.events import (
    Event,
    FlowError,
    RequestSent,
    ResponseData,
    ResponseEnd,
    ResponseHeaders,
    WebSocketEnd,
    WebSocketMessage,
)
from agentx.store import TraceWriter

log = logging.getLogger("agentx.capture")


_DEFAULT_PORTS = {"http": 80, "https": 443}


def target_host(scheme: str, host: str, port: int) -> str | None:
    """Where the proxy sends a request: ``host``, or ``host:port`` when the port is not the
    scheme's default (``[v6]:port`` for an IPv6 address)."""
    if not host:
        return None
    if port == _DEFAULT_PORTS.get(scheme):
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _safe[F: Callable[..., None]](fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        except Exception:
            log.exception("agentx addon: %s failed (the request goes on untouched)", fn.__name__)

    return wrapper  # type: ignore[return-value]


class ChunkTap:
    """``flow.response.stream``: called by mitmproxy with each body chunk, then with ``b""``."""

    __slots__ = ("end_ns", "key", "submit")

    def __init__(self, submit: Callable[[Event], None], key: str) -> None:
        self.submit = submit
        self.key = key
        self.end_ns: int | None = None

    def __call__(self, data: bytes) -> bytes:
        try:
            t = time.monotonic_ns()
            if data:
                self.submit(ResponseData(self.key, t, data))
            else:
                self.end_ns = t
        except Exception:  # never let a recording problem touch the stream
            pass
        return data


class CaptureAddon:
    """Records model calls into an agentx trace.

    Embedded by ``agentx capture`` with a :class:`Recorder` it owns; loaded by ``mitmdump -s``
    without one, it registers the ``agentx_*`` options and opens the trace itself.
    """

    def __init__(self, recorder: Recorder | None = None, *, identity: bool = True) -> None:
        self.recorder = recorder
        self._standalone = recorder is None
        self.identity = identity
        self._submit: Callable[[Event], None] | None = (
            recorder.submit if recorder is not None else None
        )

    # ------------------------------------------------------------------ standalone set-up

    def load(self, loader: Any) -> None:
        if not self._standalone:
            return
        loader.add_option("agentx_out", str, "agentx-trace.parquet", "agentx: trace file to write")
        loader.add_option(
            "agentx_keep_non_model",
            bool,
            True,
            "agentx: keep non-model calls (count_tokens, model lists, telemetry) as flagged rows",
        )
        loader.add_option(
            "agentx_identity",
            bool,
            True,
            "agentx: ask upstreams for uncompressed responses (Accept-Encoding: identity)",
        )

    def running(self) -> None:
        if not self._standalone or self.recorder is not None:
            return
        self.identity = bool(ctx.options.agentx_identity)
        try:
            writer: TraceWriter | None = TraceWriter(
                ctx.options.agentx_out, metadata={"capture": "mitmdump"}
            )
        except Exception as exc:  # unwritable path: say so loudly, keep proxying
            log.error("agentx: NOT RECORDING: %s", exc)
            writer = None
        self.recorder = Recorder(writer, keep_non_model=bool(ctx.options.agentx_keep_non_model))
        self.recorder.start()
        self._submit = self.recorder.submit
        if writer is not None:
            log.info("agentx: recording model calls to %s", writer.path)

    def done(self) -> None:
        if self._standalone and self.recorder is not None:
            stats = self.recorder.close()
            self.recorder = None
            self._submit = None
            log.info("agentx: %s", summary_line(stats))

    # ------------------------------------------------------------------ flow hooks

    @_safe
    def requestheaders(self, flow: http.HTTPFlow) -> None:
        flow.metadata["agentx_t0"] = (time.monotonic_ns(), time.time_ns())
        if self.identity and self._submit is not None and "accept-encoding" in flow.request.headers:
            flow.request.headers["accept-encoding"] = "identity"

    @_safe
    def request(self, flow: http.HTTPFlow) -> None:
        submit = self._submit
        if submit is None:
            return
        t0, wall = flow.metadata.get("agentx_t0") or (time.monotonic_ns(), time.time_ns())
        req = flow.request
        peer = flow.client_conn.peername
        submit(
            RequestSent(
                key=flow.id,
                start_ns=t0,
                wall_ns=wall,
                method=req.method,
                path=req.path,
                headers=req.headers.fields,
                raw_body=req.raw_content or b"",
                peer=(str(peer[0]), int(peer[1])) if peer else None,
                conn_id=flow.client_conn.id,
                host=target_host(req.scheme, req.host, req.port),
            )
        )

    @_safe
    def responseheaders(self, flow: http.HTTPFlow) -> None:
        submit = self._submit
        resp = flow.response
        if submit is None or resp is None:
            return
        t = time.monotonic_ns()
        tap = ChunkTap(submit, flow.id)
        if not resp.stream:
            resp.stream = tap
        flow.metadata["agentx_tap"] = tap
        submit(
            ResponseHeaders(
                key=flow.id,
                t_ns=t,
                status=resp.status_code,
                content_type=resp.headers.get("content-type"),
                content_encoding=resp.headers.get("content-encoding"),
            )
        )

    @_safe
    def response(self, flow: http.HTTPFlow) -> None:
        submit = self._submit
        if submit is None:
            return
        tap = flow.metadata.get("agentx_tap")
        t = tap.end_ns if isinstance(tap, ChunkTap) and tap.end_ns else time.monotonic_ns()
        submit(ResponseEnd(flow.id, t))

    @_safe
    def websocket_message(self, flow: http.HTTPFlow) -> None:
        """The Responses API over WebSocket: the recorder turns each ``response.create`` and
        the events that answer it into an exchange."""
        submit = self._submit
        ws = flow.websocket
        if submit is None or ws is None or not ws.messages:
            return
        msg = ws.messages[-1]
        peer = flow.client_conn.peername
        submit(
            WebSocketMessage(
                key=flow.id,
                t_ns=time.monotonic_ns(),
                wall_ns=time.time_ns(),
                from_client=msg.from_client,
                data=msg.content,
                path=flow.request.path,
                headers=flow.request.headers.fields,
                peer=(str(peer[0]), int(peer[1])) if peer else None,
                conn_id=flow.client_conn.id,
                host=target_host(flow.request.scheme, flow.request.host, flow.request.port),
            )
        )
        if not self._standalone:  # mitmproxy keeps every message; the recorder has them
            del ws.messages[:-1]

    @_safe
    def websocket_end(self, flow: http.HTTPFlow) -> None:
        submit = self._submit
        if submit is None:
            return
        ws = flow.websocket
        reason = f"the WebSocket closed (code {ws.close_code})" if ws is not None else "closed"
        submit(WebSocketEnd(flow.id, time.monotonic_ns(), reason))

    @_safe
    def error(self, flow: http.HTTPFlow) -> None:
        submit = self._submit
        if submit is None:
            return
        msg = flow.error.msg if flow.error else "connection error"
        submit(FlowError(flow.id, time.monotonic_ns(), msg))
