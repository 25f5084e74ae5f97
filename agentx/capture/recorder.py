"""The recorder: turns proxy events into Exchanges and writes them, on its own thread.

The mitmproxy addon only timestamps and enqueues (:meth:`Recorder.submit` is a lock-free
``SimpleQueue.put``); decoding, SSE parsing, session placement and the durable spool write all
happen here, off the proxy's event loop. Pure Python: no mitmproxy import, so it is tested by
feeding events directly.

Events (tuples, cheap to build on the event loop)::

    ("req",  key, start_ns, wall_ns, method, path, headers, raw_body, peer, conn_id)
    ("hdr",  key, t_ns, status, content_type, content_encoding)
    ("data", key, t_ns, chunk)
    ("end",  key, t_ns)
    ("err",  key, t_ns, message)

``*_ns`` are ``time.monotonic_ns()``; ``wall_ns`` is ``time.time_ns()``.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from agentx.capture.apis import Assembled, Assembler, classify, error_text, make_assembler
from agentx.capture.encodings import StreamDecoder, decode_body
from agentx.capture.procs import Proc, peer_process
from agentx.capture.secrets import Secrets
from agentx.capture.sessions import (
    FLAG_SIDE_CALL,
    Placement,
    Sessions,
    conversation_items,
    has_tools,
    new_id,
    session_hint,
)
from agentx.capture.sse import SSEParser
from agentx.errors import AgentxError
from agentx.models import API_OPENAI_RESPONSES, API_OTHER, JSON, Exchange, Response, Timing, Usage
from agentx.store import TraceWriter

log = logging.getLogger("agentx.capture")

Event = tuple[Any, ...]
MAX_MODEL_BODY = 64 * 1024 * 1024
MAX_OTHER_BODY = 256 * 1024
KEEP_RESPONSES = 512
_THREAD_FLAGS = frozenset({"side_call", "subagent", "compaction", "fork", "retry"})
HOLD_NS = 60 * 1_000_000_000  # how long a tool-less first call waits to learn what it was

FLAG_PARTIAL = "partial"
FLAG_NON_MODEL = "non_model"
FLAG_NO_RESPONSE = "no_response"
FLAG_HTTP_ERROR = "http_error"
FLAG_RESOLVED = "previous_response_resolved"
FLAG_UNRESOLVED = "previous_response_unresolved"
FLAG_UNPARSED = "unparsed_body"
FLAG_REDACTED = "secret_redacted"


@dataclass(frozen=True, slots=True)
class CaptureStats:
    requests: int = 0  # model calls written
    other: int = 0  # non-model rows written
    dropped: int = 0  # non-model requests dropped by option
    lost: int = 0  # rows that could not be written (disk full, ...)
    partial: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    sessions: int = 0
    threads: int = 0
    in_flight: int = 0
    write_error: str | None = None


@dataclass(slots=True)
class _Flow:
    request_id: str
    api: str
    start_ns: int
    wall_ns: int
    method: str
    path: str
    body: JSON
    client: str | None
    agent: str | None
    credentials: tuple[Any, ...]
    flags: list[str]
    keep: bool
    placement: Placement | None = None
    status: int | None = None
    ttfb_ns: int | None = None
    ttft_ns: int | None = None
    offsets: list[int] = field(default_factory=list)
    sse: SSEParser | None = None
    assembler: Assembler | None = None
    decoder: StreamDecoder | None = None
    buf: bytearray = field(default_factory=bytearray)
    buf_full: bool = False
    decode_error: str | None = None
    resolved_input: list[JSON] | None = None


def _text(v: str | bytes) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def detect_agent(ua: str, headers: dict[str, str], proc: Proc | None) -> str | None:
    hay = " ".join([ua, headers.get("originator", ""), headers.get("x-app", "")]).lower()
    if proc is not None:
        hay += " " + proc.cmdline.lower()
    for needle, agent in (
        ("claude-cli", "claude-code"),
        ("claude-code", "claude-code"),
        ("codex", "codex"),
        ("aider", "aider"),
        ("opencode", "opencode"),
        ("gemini-cli", "gemini-cli"),
        ("cursor", "cursor"),
    ):
        if needle in hay:
            return agent
    return None


class Recorder:
    """Owns the trace writer and the session state; one worker thread does all the work."""

    def __init__(
        self,
        writer: TraceWriter | None,
        *,
        keep_non_model: bool = True,
        reporter: Callable[[str], None] | None = None,
        secrets: Secrets | None = None,
        agent_pid: int | None = None,
        resolve_processes: bool = True,
    ) -> None:
        self.writer = writer
        self.keep_non_model = keep_non_model
        self.secrets = secrets or Secrets()
        self.sessions = Sessions()
        self.agent_pid = agent_pid
        self.resolve_processes = resolve_processes
        self._report = reporter or (lambda msg: log.error(msg))
        self._q: queue.SimpleQueue[Event | None] = queue.SimpleQueue()
        self._flows: dict[str, _Flow] = {}
        self._ignored: set[str] = set()
        self._responses: OrderedDict[str, tuple[str, list[JSON]]] = OrderedDict()
        self._procs: dict[str, Proc | None] = {}
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stats = CaptureStats()
        self._reported: set[str] = set()
        # Tool-less thread roots, held until the session shows whether its agent uses tools
        # (then they are side calls: titles, topic checks) or HOLD_NS passes.
        self._held: dict[str, list[tuple[int, Exchange]]] = {}

    # ------------------------------------------------------------------ threading

    def submit(self, event: Event) -> None:
        """Thread-safe and non-blocking: called on the proxy's event loop."""
        self._q.put(event)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="agentx-recorder", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            ev = self._q.get()
            if ev is None:
                return
            self.process(ev)

    def close(self, timeout: float | None = 30.0) -> CaptureStats:
        """Drain the queue, record in-flight exchanges as partial, compact the trace."""
        if self._thread is not None:
            self._q.put(None)
            self._thread.join(timeout)
            self._thread = None
        else:
            while True:
                try:
                    ev = self._q.get_nowait()
                except queue.Empty:
                    break
                if ev is not None:
                    self.process(ev)
        now = time.monotonic_ns()
        for key in list(self._flows):
            self.process(("err", key, now, "capture stopped before the response ended"))
        for session_id in list(self._held):
            self._release(session_id)
        if self.writer is not None:
            try:
                self.writer.close()
            except AgentxError as exc:
                self._report_once("close", f"agentx capture: {exc}")
            except OSError as exc:
                self._report_once("close", f"agentx capture: cannot finish the trace: {exc}")
        return self.stats()

    def stats(self) -> CaptureStats:
        with self._lock:
            return replace(
                self._stats,
                sessions=self.sessions.session_count,
                threads=self.sessions.thread_count,
                in_flight=len(self._flows),
            )

    def _bump(self, **delta: int) -> None:
        with self._lock:
            self._stats = replace(
                self._stats, **{k: getattr(self._stats, k) + v for k, v in delta.items()}
            )

    def _report_once(self, kind: str, message: str) -> None:
        if kind in self._reported:
            return
        self._reported.add(kind)
        with self._lock:
            self._stats = replace(self._stats, write_error=message)
        try:
            self._report(message)
        except Exception:  # a reporter must never take the recorder down
            log.exception("reporter failed")

    # ------------------------------------------------------------------ events

    def process(self, ev: Event) -> None:
        """Handle one event; never raises (a broken exchange is logged and dropped)."""
        kind, key = ev[0], ev[1]
        try:
            if self._held and kind in ("req", "end", "err"):
                self._release_expired(ev[2])
            if kind == "req":
                self._on_request(*ev[1:])
            elif key in self._ignored:
                if kind in ("end", "err"):
                    self._ignored.discard(key)
            elif (flow := self._flows.get(key)) is not None:
                if kind == "hdr":
                    self._on_headers(flow, *ev[2:])
                elif kind == "data":
                    self._on_data(flow, ev[2], ev[3])
                elif kind == "end":
                    del self._flows[key]
                    self._finish(flow, ev[2], None)
                elif kind == "err":
                    del self._flows[key]
                    self._finish(flow, ev[2], str(ev[3]))
        except Exception as exc:
            self._flows.pop(key, None)
            self._bump(errors=1)
            log.exception("agentx capture: dropped an exchange after an internal error")
            self._report_once(
                f"internal:{type(exc).__name__}",
                f"agentx capture: internal error ({type(exc).__name__}: {exc}); the exchange was not recorded",
            )

    def _on_request(
        self,
        key: str,
        start_ns: int,
        wall_ns: int,
        method: str,
        path: str,
        headers: Any,
        raw: bytes,
        peer: tuple[str, int] | None,
        conn_id: str,
    ) -> None:
        headers = [(_text(k).lower(), _text(v)) for k, v in headers]
        api = classify(method, path)
        if api == API_OTHER and not self.keep_non_model:
            self._ignored.add(key)
            self._bump(dropped=1)
            return
        hdrs = dict(headers)
        flags: list[str] = []
        body: JSON = None
        if raw:
            limit = MAX_MODEL_BODY if api != API_OTHER else MAX_OTHER_BODY
            try:
                data = decode_body(raw, hdrs.get("content-encoding"))
                body = orjson.loads(data) if len(data) <= limit else None
            except (ValueError, orjson.JSONDecodeError):
                body = None
                if api != API_OTHER:
                    flags.append(FLAG_UNPARSED)
        credentials = self.secrets.from_headers(headers)
        path, query_creds = self.secrets.scrub_path(path)
        credentials += query_creds
        proc = self._process(conn_id, peer)
        ua = hdrs.get("user-agent", "")
        flow = _Flow(
            request_id=new_id("r-"),
            api=api,
            start_ns=start_ns,
            wall_ns=wall_ns,
            method=method,
            path=path,
            body=body,
            client=ua or None,
            agent=detect_agent(ua, hdrs, proc),
            credentials=tuple(credentials),
            flags=flags,
            keep=True,
        )
        hint = session_hint(hdrs, body)
        if proc is not None:
            client_key = f"pid:{proc.pid}"
        else:
            client_key = f"peer:{peer[0] if peer else '?'}|{ua}"
        if api == API_OTHER:
            flow.flags.append(FLAG_NON_MODEL)
            flow.placement = Placement(
                session_id=hint or self.sessions.current_session(client_key) or "",
                thread_id="",
                parent_request_id=None,
                think_time_s=None,
                flags=(),
            )
        else:
            explicit = None
            if api == API_OPENAI_RESPONSES and isinstance(body, dict):
                body, explicit = self._resolve_previous(body, flow.flags)
                flow.body = body
            flow.placement = self.sessions.place(
                flow.request_id,
                api,
                body,
                start_ns,
                hint=hint,
                client_key=client_key,
                explicit_parent=explicit,
                subagent=bool(hdrs.get("x-claude-code-agent-id")),
            )
            if api == API_OPENAI_RESPONSES:
                flow.resolved_input = conversation_items(api, body)
            if flow.placement.session_id in self._held:
                self._release(flow.placement.session_id)
        self._flows[key] = flow

    def _process(self, conn_id: str, peer: tuple[str, int] | None) -> Proc | None:
        if not self.resolve_processes or peer is None:
            return None
        if conn_id not in self._procs:
            if len(self._procs) > 4096:
                self._procs.clear()
            self._procs[conn_id] = peer_process(peer[0], peer[1], self.agent_pid)
        return self._procs[conn_id]

    def _resolve_previous(self, body: dict[str, Any], flags: list[str]) -> tuple[JSON, str | None]:
        prev_id = body.get("previous_response_id")
        if not isinstance(prev_id, str) or not prev_id:
            return body, None
        prev = self._responses.get(prev_id)
        if prev is None:
            flags.append(FLAG_UNRESOLVED)
            return body, None
        parent_request, context = prev
        full = context + conversation_items(API_OPENAI_RESPONSES, body)
        out: dict[str, Any] = {}
        for k, v in body.items():
            if k == "previous_response_id":
                continue
            out[k] = full if k == "input" else v
        if "input" not in out:
            out["input"] = full
        flags.append(FLAG_RESOLVED)
        return out, parent_request

    def _on_headers(
        self, flow: _Flow, t_ns: int, status: int, ctype: str | None, cenc: str | None
    ) -> None:
        flow.status = status
        flow.ttfb_ns = t_ns - flow.start_ns
        try:
            flow.decoder = StreamDecoder(cenc)
        except ValueError as exc:
            flow.decode_error = str(exc)
        if flow.api != API_OTHER:
            flow.assembler = make_assembler(flow.api)
            if ctype and "text/event-stream" in ctype.lower():
                flow.sse = SSEParser()

    def _on_data(self, flow: _Flow, t_ns: int, chunk: bytes) -> None:
        off = t_ns - flow.start_ns
        flow.offsets.append(off)
        if flow.decode_error is not None:
            return
        data = chunk
        if flow.decoder is not None and not flow.decoder.identity:
            try:
                data = flow.decoder.feed(chunk)
            except Exception as exc:
                flow.decode_error = f"cannot decode response body: {exc}"
                return
        if flow.sse is not None and flow.assembler is not None:
            for ev in flow.sse.feed(data):
                if flow.assembler.event(ev) and flow.ttft_ns is None:
                    flow.ttft_ns = off
        elif not flow.buf_full:
            limit = MAX_MODEL_BODY if flow.api != API_OTHER else MAX_OTHER_BODY
            if len(flow.buf) + len(data) > limit:
                flow.buf_full = True
                flow.buf.clear()
            else:
                flow.buf += data

    # ------------------------------------------------------------------ rows

    def _finish(self, flow: _Flow, t_ns: int, transport_error: str | None) -> None:
        end = t_ns - flow.start_ns
        result: Assembled | None = None
        body_json: JSON = None
        if flow.sse is None and flow.buf and not flow.buf_full:
            try:
                body_json = orjson.loads(bytes(flow.buf))
            except orjson.JSONDecodeError:
                body_json = None
        if flow.assembler is not None:
            if flow.sse is None and body_json is not None:
                flow.assembler.body(body_json)
            result = flow.assembler.result()
        flags = list(flow.flags)
        if flow.placement is not None and flow.api != API_OTHER:
            final = self.sessions.finish(
                flow.request_id, flow.start_ns + end, result.response if result else Response()
            )
            flags.extend(f for f in final if f not in flags)
        elif flow.placement is not None:
            flags.extend(flow.placement.flags)
        error = transport_error
        if transport_error is not None and result is not None and result.complete:
            error = None  # the client hung up after the stream's own end marker: nothing lost
        elif transport_error is not None:
            flags.append(FLAG_PARTIAL if flow.status is not None else FLAG_NO_RESPONSE)
        elif flow.sse is not None and result is not None and not result.complete:
            flags.append(FLAG_PARTIAL)
            error = "the stream ended before its end marker"
        if flow.status is not None and flow.status >= 400:
            flags.append(FLAG_HTTP_ERROR)
            if error is None:
                error = (
                    (result.error if result else None)
                    or error_text(body_json)
                    or f"HTTP {flow.status}"
                )
        if error is None and result is not None and result.error:
            error = result.error
        if flow.decode_error and error is None:
            error = flow.decode_error
        ttft = flow.ttft_ns
        if (
            flow.sse is None
            and result is not None
            and flow.offsets
            and (result.response.text or result.response.tool_calls)
        ):
            ttft = flow.offsets[-1]  # a JSON body: the answer is usable when it has all arrived
        response = result.response if result is not None else Response()
        if flow.api == API_OTHER and body_json is not None:
            response = Response(message=body_json)
        if result is not None and result.response_id and flow.api == API_OPENAI_RESPONSES:
            context = list(flow.resolved_input or []) + list(response.message or [])
            self._responses[result.response_id] = (flow.request_id, context)
            while len(self._responses) > KEEP_RESPONSES:
                self._responses.popitem(last=False)
        placement = flow.placement
        assert placement is not None
        usage = result.usage if result is not None else Usage()
        model = (result.model if result else None) or (
            flow.body.get("model") if isinstance(flow.body, dict) else None
        )
        ex = Exchange(
            request_id=flow.request_id,
            session_id=placement.session_id,
            thread_id=placement.thread_id,
            parent_request_id=placement.parent_request_id,
            api=flow.api,
            method=flow.method,
            path=flow.path,
            status=flow.status,
            model=model if isinstance(model, str) else None,
            request=flow.body,
            response=response,
            usage=usage,
            timing=Timing(
                start_wall_ns=flow.wall_ns,
                ttfb_ns=flow.ttfb_ns,
                ttft_ns=ttft,
                e2e_ns=end,
                chunk_offsets_ns=tuple(flow.offsets),
            ),
            think_time_s=placement.think_time_s,
            client=flow.client,
            agent=flow.agent,
            credentials=flow.credentials,
            flags=tuple(dict.fromkeys(flags)),
            error=error[:2000] if error else None,
        )
        ex = self._redact(ex)
        if (
            flow.api != API_OTHER
            and ex.parent_request_id is None
            and not set(ex.flags) & _THREAD_FLAGS
            and not has_tools(flow.body)
            and not self.sessions.uses_tools(ex.session_id)
        ):
            self._held.setdefault(ex.session_id, []).append((t_ns + HOLD_NS, ex))
        else:
            self._write(ex)
        partial = 1 if (FLAG_PARTIAL in ex.flags or FLAG_NO_RESPONSE in ex.flags) else 0
        if flow.api == API_OTHER:
            self._bump(other=1, partial=partial)
        else:
            self._bump(
                requests=1,
                partial=partial,
                prompt_tokens=usage.prompt_tokens or 0,
                completion_tokens=usage.completion_tokens or 0,
            )

    def _release(self, session_id: str) -> None:
        side = self.sessions.uses_tools(session_id)
        for _deadline, ex in self._held.pop(session_id, []):
            self._write(replace(ex, flags=(*ex.flags, FLAG_SIDE_CALL)) if side else ex)

    def _release_expired(self, now_ns: int) -> None:
        for session_id, held in list(self._held.items()):
            if held and held[0][0] <= now_ns:
                self._release(session_id)

    def _redact(self, ex: Exchange) -> Exchange:
        """Last line of defence: no credential value seen in this capture reaches the trace."""
        if not self.secrets.seen:
            return ex
        blob = orjson.dumps(
            [
                ex.request,
                ex.response.text,
                ex.response.message,
                ex.error,
                ex.path,
                ex.client,
                [list(c) if isinstance(c, list) else c for c in ex.response.tool_calls],
                ex.response.reasoning,
            ]
        )
        leaks = self.secrets.leaks(blob)
        if not leaks:
            return ex

        def clean(v: Any) -> Any:
            if isinstance(v, str):
                for s in leaks:
                    v = v.replace(s, "[REDACTED]")
                return v
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, list | tuple):
                return type(v)(clean(x) for x in v)
            return v

        r = ex.response
        return replace(
            ex,
            request=clean(ex.request),
            path=clean(ex.path),
            client=clean(ex.client),
            error=clean(ex.error),
            response=Response(
                text=clean(r.text),
                reasoning=clean(r.reasoning),
                tool_calls=clean(r.tool_calls),
                stop_reason=r.stop_reason,
                message=clean(r.message),
            ),
            flags=(*ex.flags, FLAG_REDACTED),
        )

    def _write(self, ex: Exchange) -> None:
        if self.writer is None:
            return
        if "write" in self._reported:
            self._bump(lost=1)
            return
        try:
            self.writer.append(ex)
        except AgentxError as exc:
            self._bump(lost=1)
            self._report_once("write", f"agentx capture: NOT RECORDING: {exc}")
        except OSError as exc:
            self._bump(lost=1)
            self._report_once("write", f"agentx capture: NOT RECORDING: {exc}")
