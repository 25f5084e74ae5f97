"""Building Exchanges: a request becomes a :class:`Flow`, a finished flow becomes a row.

Request side: decode and parse the body, turn credentials into salted hashes, find the client
process and agent, resolve a Responses ``previous_response_id`` chain into the full context,
and place the request in a session and thread. Row side: the response's flags, error and
timings, and a last check that no credential value seen in this capture reaches the trace.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from typing import Any

import orjson

from agentx.apis import Api
from agentx.apis.assemble import error_text
from agentx.apis.bodies import conversation
from agentx.apis.encodings import decode_body
from agentx.apis.registry import classify, family
from agentx.capture.agents import detect_agent, parent_session_header
from agentx.capture.credentials import Secrets
from agentx.capture.procs import Proc, peer_process
from agentx.capture.recorder.events import RequestSent
from agentx.capture.recorder.flow import Flow, body_limit
from agentx.capture.sessions.ids import new_id, session_hint
from agentx.capture.sessions.placement import Placement, Sessions
from agentx.core.flags import (
    FLAG_HTTP_ERROR,
    FLAG_NO_RESPONSE,
    FLAG_NON_MODEL,
    FLAG_PARTIAL,
    FLAG_PREVIOUS_RESOLVED,
    FLAG_PREVIOUS_UNRESOLVED,
    FLAG_SECRET_REDACTED,
    FLAG_UNPARSED_BODY,
    FLAG_USAGE_ESTIMATED,
)
from agentx.core.models import JSON, Exchange, Response, Timing, Usage
from agentx.prefixcache.tokens import estimate_missing

KEEP_RESPONSES = 512


def _text(v: str | bytes) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


class ExchangeBuilder:
    """The flows in flight and the state that places them. Not thread-safe: the recorder's
    worker thread owns it."""

    def __init__(
        self,
        *,
        keep_non_model: bool,
        secrets: Secrets,
        agent_pid: int | None,
        resolve_processes: bool,
    ) -> None:
        self.keep_non_model = keep_non_model
        self.secrets = secrets
        self.sessions = Sessions()
        self.agent_pid = agent_pid
        self.resolve_processes = resolve_processes
        self.flows: dict[str, Flow] = {}
        self.ignored: set[str] = set()  # keys of non-model requests dropped by option
        self._responses: OrderedDict[str, tuple[str, list[JSON]]] = OrderedDict()
        self._procs: dict[str, Proc | None] = {}
        self._agents: dict[str, str] = {}  # session -> agent

    # ------------------------------------------------------------------ requests

    def request(self, ev: RequestSent) -> Flow | None:
        """Start tracking a request under ``ev.key``; ``None`` when it is dropped by option."""
        key, start_ns, path, peer = ev.key, ev.start_ns, ev.path, ev.peer
        headers = [(_text(k).lower(), _text(v)) for k, v in ev.headers]
        api = classify(ev.method, path)
        if api == Api.OTHER and not self.keep_non_model:
            self.ignored.add(key)
            return None
        hdrs = dict(headers)
        flags: list[str] = []
        body: JSON = None
        if ev.raw_body:
            try:
                data = decode_body(ev.raw_body, hdrs.get("content-encoding"))
                body = orjson.loads(data) if len(data) <= body_limit(api) else None
            except (ValueError, orjson.JSONDecodeError):
                body = None
                if api != Api.OTHER:
                    flags.append(FLAG_UNPARSED_BODY)
        credentials = self.secrets.from_headers(headers)
        path, query_creds = self.secrets.scrub_path(path)
        credentials += query_creds
        proc = self._process(ev.conn_id, peer)
        ua = hdrs.get("user-agent", "")
        flow = Flow(
            request_id=new_id("r-"),
            api=api,
            start_ns=start_ns,
            wall_ns=ev.wall_ns,
            method=ev.method,
            path=path,
            host=ev.host,
            body=body,
            client=ua or None,
            agent=detect_agent(hdrs, proc.cmdline if proc is not None else None),
            credentials=tuple(credentials),
            flags=flags,
        )
        hint = session_hint(hdrs, body)
        if proc is not None:
            client_key = f"pid:{proc.pid}"
        else:
            client_key = f"peer:{peer[0] if peer else '?'}|{ua}"
        if api == Api.OTHER:
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
            if api == Api.OPENAI_RESPONSES and isinstance(body, dict):
                body, explicit = self._resolve_previous(body, flow.flags)
                flow.body = body
            flow.placement = self.sessions.place(
                flow.request_id,
                api,
                body,
                start_ns,
                hint=hint,
                client_key=client_key,
                agent=flow.agent,
                explicit_parent=explicit,
                subagent=bool(hdrs.get("x-claude-code-agent-id")),
                parent_hint=parent_session_header(hdrs),
            )
            if api == Api.OPENAI_RESPONSES:
                flow.resolved_input = conversation(api, body)
        session = flow.placement.session_id
        if flow.agent is not None:
            self._agents[session] = flow.agent
            while len(self._agents) > 4096:
                del self._agents[next(iter(self._agents))]
        else:  # a connection whose process was not found: the session knows its agent
            flow.agent = self._agents.get(session)
        self.flows[key] = flow
        return flow

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
            flags.append(FLAG_PREVIOUS_UNRESOLVED)
            return body, None
        parent_request, context = prev
        full = context + conversation(Api.OPENAI_RESPONSES, body)
        out: dict[str, Any] = {}
        for k, v in body.items():
            if k == "previous_response_id":
                continue
            out[k] = full if k == "input" else v
        if "input" not in out:
            out["input"] = full
        flags.append(FLAG_PREVIOUS_RESOLVED)
        return out, parent_request

    # ------------------------------------------------------------------ rows

    def finish(self, flow: Flow, t_ns: int, transport_error: str | None) -> Exchange:
        """The row of a flow that ended at ``t_ns`` (``transport_error``: how it broke off)."""
        end = t_ns - flow.start_ns
        result, body_json = flow.assemble()
        flags = list(flow.flags)
        if flow.placement is not None and flow.api != Api.OTHER:
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
        if flow.api == Api.OTHER and body_json is not None:
            response = Response(message=body_json)
        if result is not None and result.response_id and flow.api == Api.OPENAI_RESPONSES:
            context = list(flow.resolved_input or []) + list(response.message or [])
            self._responses[result.response_id] = (flow.request_id, context)
            while len(self._responses) > KEEP_RESPONSES:
                self._responses.popitem(last=False)
        placement = flow.placement
        assert placement is not None
        usage = result.usage if result is not None else Usage()
        if result is not None and (flow.status or 0) < 400 and isinstance(flow.body, dict):
            estimated = estimate_missing(flow.api, flow.body, response, usage)
            if estimated is not None:  # a stream without usage (aider: no include_usage)
                usage = estimated
                flags.append(FLAG_USAGE_ESTIMATED)
        model = (
            (result.model if result else None)
            or (flow.body.get("model") if isinstance(flow.body, dict) else None)
            or family(flow.api).model_from_path(flow.path)
        )
        ex = Exchange(
            request_id=flow.request_id,
            session_id=placement.session_id,
            thread_id=placement.thread_id,
            parent_request_id=placement.parent_request_id,
            api=flow.api,
            method=flow.method,
            path=flow.path,
            host=flow.host,
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
        return self._redact(ex)

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
            flags=(*ex.flags, FLAG_SECRET_REDACTED),
        )
