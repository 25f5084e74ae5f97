"""The recorder: one worker thread turns proxy events into Exchanges and writes them.

The mitmproxy addon only timestamps and enqueues (:meth:`Recorder.submit` is a lock-free
``SimpleQueue.put``); decoding, SSE parsing, session placement and the durable spool write all
happen on the worker, off the proxy's event loop. Every exchange is appended to the trace's
write-ahead spool as soon as its response ends (its end event is processed), whatever its
session: a SIGKILL then loses only the exchanges in flight. A tool-less first call is written at
once too, and *amended* (flag ``side_call``) if its session later shows that the agent uses
tools. A write that fails is counted as lost and reported once, loudly; an internal error drops
one exchange, never the capture.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

import orjson

from agentx.apis import Api
from agentx.capture.credentials import Secrets
from agentx.capture.recorder.counters import CaptureStats, StatsCounter
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
from agentx.capture.recorder.exchange import ExchangeBuilder
from agentx.capture.recorder.flow import Flow
from agentx.capture.sessions.conversation import has_tools
from agentx.capture.sessions.placement import Sessions
from agentx.core.errors import AgentxError
from agentx.core.flags import (
    FLAG_NO_RESPONSE,
    FLAG_PARTIAL,
    FLAG_SIDE_CALL,
    FLAG_USAGE_ESTIMATED,
    THREAD_FLAGS,
)
from agentx.core.models import Exchange
from agentx.store import TraceWriter, spool_path

log = logging.getLogger("agentx.capture")

HOLD_NS = 60 * 1_000_000_000  # how long a tool-less first call may still become a side call
# The bound docs/reliability.md states: a completed exchange is in the spool this soon after its
# response ended (the worker writes it when it processes the end event; typically milliseconds).
SPOOL_LATENCY_S = 1.0


def response_create(data: bytes) -> bytes | None:
    """The Responses request body of a ``{"type": "response.create", ...}`` WebSocket message
    (the request's fields beside ``type``, or under ``response``), else ``None``."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or obj.get("type") != "response.create":
        return None
    inner = obj.get("response")
    body = inner if isinstance(inner, dict) else {k: v for k, v in obj.items() if k != "type"}
    return orjson.dumps(body)


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
        self.exchanges = ExchangeBuilder(
            keep_non_model=keep_non_model,
            secrets=secrets or Secrets(),
            agent_pid=agent_pid,
            resolve_processes=resolve_processes,
        )
        self._report = reporter or (lambda msg: log.error(msg))
        self._q: queue.SimpleQueue[Event | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._stats = StatsCounter()
        self._reported: set[str] = set()
        # Tool-less thread roots (written already), until the session shows whether its agent
        # uses tools (then they were side calls: titles, topic checks) or HOLD_NS passes.
        self._held: dict[str, list[tuple[int, Exchange]]] = {}
        # WebSocket flow id -> (messages seen, key of the response streaming on it)
        self._sockets: dict[str, tuple[int, str | None]] = {}

    # ------------------------------------------------------------------ state

    @property
    def sessions(self) -> Sessions:
        return self.exchanges.sessions

    @property
    def secrets(self) -> Secrets:
        return self.exchanges.secrets

    @property
    def agent_pid(self) -> int | None:
        """The launched agent's pid: its process tree is searched first for a connection's owner."""
        return self.exchanges.agent_pid

    @agent_pid.setter
    def agent_pid(self, pid: int | None) -> None:
        self.exchanges.agent_pid = pid

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
        for key in list(self.exchanges.flows):
            self.process(FlowError(key, now, "capture stopped before the response ended"))
        for session_id in list(self._held):
            self._release(session_id)
        if self.writer is not None:
            try:
                self.writer.close()
            except (AgentxError, OSError) as exc:
                self._report_once("close", f"agentx capture: {exc}{self._what_is_kept()}")
        return self.stats()

    def _what_is_kept(self) -> str:
        """What a failed compaction leaves: the spooled exchanges, and the ones never spooled
        (a full disk refuses the spool too), counted."""
        assert self.writer is not None
        kept, path = spool_path(self.writer.path), self.writer.path
        if not kept.exists():
            return ""
        recover = f"run `agentx recover {path}` once that is fixed"
        lost = self._stats.snapshot(sessions=0, threads=0, in_flight=0).lost
        if not lost:
            return f"; every exchange is kept in {kept}: {recover}"
        spooled = self.writer.count
        return (
            f"; {spooled} {'exchange is' if spooled == 1 else 'exchanges are'} kept in {kept} "
            f"({recover}); {lost} could not be written and {'is' if lost == 1 else 'are'} lost"
        )

    def stats(self) -> CaptureStats:
        return self._stats.snapshot(
            sessions=self.sessions.session_count,
            threads=self.sessions.thread_count,
            in_flight=len(self.exchanges.flows),
        )

    def _report_once(self, kind: str, message: str) -> None:
        if kind in self._reported:
            return
        self._reported.add(kind)
        self._stats.set_write_error(message)
        try:
            self._report(message)
        except Exception:  # a reporter must never take the recorder down
            log.exception("reporter failed")

    # ------------------------------------------------------------------ events

    def process(self, ev: Event) -> None:
        """Handle one event; never raises (a broken exchange is logged and dropped)."""
        key = ev.key
        flows = self.exchanges.flows
        try:
            if isinstance(ev, ResponseData):  # the common case first
                if (flow := flows.get(key)) is not None:
                    flow.on_data(ev.t_ns, ev.chunk)
                return
            if self._held and isinstance(ev, RequestSent | ResponseEnd | FlowError):
                self._release_expired(ev.start_ns if isinstance(ev, RequestSent) else ev.t_ns)
            if isinstance(ev, WebSocketMessage | WebSocketEnd):
                self._on_websocket(ev)
            elif isinstance(ev, RequestSent):
                self._on_request(ev)
            elif key in self.exchanges.ignored:
                if isinstance(ev, ResponseEnd | FlowError):
                    self.exchanges.ignored.discard(key)
            elif (flow := flows.get(key)) is not None:
                if isinstance(ev, ResponseHeaders):
                    flow.on_headers(ev.t_ns, ev.status, ev.content_type, ev.content_encoding)
                elif isinstance(ev, ResponseEnd):
                    del flows[key]
                    self._finish(flow, ev.t_ns, None)
                else:
                    del flows[key]
                    self._finish(flow, ev.t_ns, str(ev.message))
        except Exception as exc:
            flows.pop(key, None)
            self._stats.bump(errors=1)
            log.exception("agentx capture: dropped an exchange after an internal error")
            self._report_once(
                f"internal:{type(exc).__name__}",
                f"agentx capture: internal error ({type(exc).__name__}: {exc}); the exchange was not recorded",
            )

    def _on_request(self, ev: RequestSent) -> None:
        flow = self.exchanges.request(ev)
        if flow is None:
            self._stats.bump(dropped=1)
            return
        placement = flow.placement
        if flow.api == Api.OTHER or placement is None or placement.session_id not in self._held:
            return
        held = self._held[placement.session_id]
        if self.sessions.uses_tools(placement.session_id) or all(
            h.thread_id != placement.thread_id for _, h in held
        ):  # the agent uses tools (the held calls were side calls), or another tool-less
            # conversation started (it does not): a retry of a held call waits with it
            self._release(placement.session_id)

    def _on_websocket(self, ev: WebSocketMessage | WebSocketEnd) -> None:
        """The Responses API over a WebSocket, as if each ``response.create`` were a POST whose
        answer streamed the events that follow it (until its terminal event)."""
        count, open_key = self._sockets.get(ev.key, (0, None))
        flows = self.exchanges.flows
        if isinstance(ev, WebSocketEnd):
            self._sockets.pop(ev.key, None)
            if open_key is not None and (flow := flows.pop(open_key, None)) is not None:
                self._finish(flow, ev.t_ns, ev.message)
            return
        if not ev.from_client:
            flow = flows.get(open_key) if open_key is not None else None
            if flow is None or open_key is None:
                return
            if flow.status is None:
                flow.on_headers(ev.t_ns, 200, "text/event-stream", None)
            flow.on_data(ev.t_ns, b"data: " + ev.data + b"\n\n")
            asm = flow.assembler
            if asm is not None and (asm.complete or asm.error is not None):
                del flows[open_key]
                self._sockets[ev.key] = (count, None)
                self._finish(flow, ev.t_ns, None)
            return
        body = response_create(ev.data)
        if body is None:  # response.cancel, a session update...: not a model call
            return
        if open_key is not None and (flow := flows.pop(open_key, None)) is not None:
            self._finish(flow, ev.t_ns, "superseded by the next response.create")
        key = f"{ev.key}#{count}"
        self._sockets[ev.key] = (count + 1, key)
        self._on_request(
            RequestSent(
                key=key,
                start_ns=ev.t_ns,
                wall_ns=ev.wall_ns,
                method="WS",
                path=ev.path,
                headers=ev.headers,
                raw_body=body,
                peer=ev.peer,
                conn_id=ev.conn_id,
                host=ev.host,
            )
        )

    def _finish(self, flow: Flow, t_ns: int, transport_error: str | None) -> None:
        ex = self.exchanges.finish(flow, t_ns, transport_error)
        held = self._held.get(ex.session_id, ())
        if flow.api != Api.OTHER and (
            (
                ex.parent_request_id is None
                and not THREAD_FLAGS.intersection(ex.flags)
                and not has_tools(flow.body)
                and not self.sessions.uses_tools(ex.session_id)
            )
            or any(h.thread_id == ex.thread_id for _, h in held)  # (its retries) share its fate
        ):
            self._held.setdefault(ex.session_id, []).append((t_ns + HOLD_NS, ex))
        self._write(ex)
        partial = 1 if (FLAG_PARTIAL in ex.flags or FLAG_NO_RESPONSE in ex.flags) else 0
        if flow.api == Api.OTHER:  # telemetry cut short is no model call lost: not "partial"
            self._stats.bump(other=1)
        else:
            self._stats.bump(
                requests=1,
                partial=partial,
                prompt_tokens=ex.usage.prompt_tokens or 0,
                completion_tokens=ex.usage.completion_tokens or 0,
                estimated=1 if FLAG_USAGE_ESTIMATED in ex.flags else 0,
            )

    # ------------------------------------------------------------------ writing

    def _release(self, session_id: str) -> None:
        held = self._held.pop(session_id, [])
        if self.sessions.uses_tools(session_id):
            for _deadline, ex in held:
                self._amend(ex.request_id, (FLAG_SIDE_CALL,))

    def _release_expired(self, now_ns: int) -> None:
        for session_id, held in list(self._held.items()):
            if held and held[0][0] <= now_ns:
                self._release(session_id)

    def _write(self, ex: Exchange) -> None:
        if self.writer is None:
            return
        if "write" in self._reported:
            self._stats.bump(lost=1)
            return
        try:
            self.writer.append(ex)
        except (AgentxError, OSError) as exc:
            self._stats.bump(lost=1)
            self._report_once("write", f"agentx capture: NOT RECORDING: {exc}")

    def _amend(self, request_id: str, flags: tuple[str, ...]) -> None:
        if self.writer is None or "write" in self._reported:
            return
        try:
            self.writer.amend(request_id, flags)
        except (AgentxError, OSError) as exc:
            self._report_once("write", f"agentx capture: NOT RECORDING: {exc}")
