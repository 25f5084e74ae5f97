"""The recorder: turns proxy events into Exchanges and writes them, on its own thread.

Pure Python: no mitmproxy import, so it is tested by feeding events directly.

Events (:mod:`.events`, small frozen dataclasses built on the proxy's event loop)::

    RequestSent(key, start_ns, wall_ns, method, path, headers, raw_body, peer, conn_id)
    ResponseHeaders(key, t_ns, status, content_type, content_encoding)
    ResponseData(key, t_ns, chunk)
    ResponseEnd(key, t_ns)
    FlowError(key, t_ns, message)

``*_ns`` are ``time.monotonic_ns()``; ``wall_ns`` is ``time.time_ns()``.

:mod:`.worker` (the queue, the thread, holding and writing rows), :mod:`.exchange` (requests
in, Exchanges out), :mod:`.flow` (one response as it streams in), :mod:`.counters`.
"""

from __future__ import annotations

from agentx.capture.recorder.counters import CaptureStats, StatsCounter, summary_line
from agentx.capture.recorder.events import Event
from agentx.capture.recorder.exchange import KEEP_RESPONSES, ExchangeBuilder
from agentx.capture.recorder.flow import MAX_MODEL_BODY, MAX_OTHER_BODY, Flow
from agentx.capture.recorder.worker import HOLD_NS, SPOOL_LATENCY_S, Recorder

__all__ = [
    "HOLD_NS",
    "KEEP_RESPONSES",
    "MAX_MODEL_BODY",
    "MAX_OTHER_BODY",
    "SPOOL_LATENCY_S",
    "CaptureStats",
    "Event",
    "ExchangeBuilder",
    "Flow",
    "Recorder",
    "StatsCounter",
    "summary_line",
]
