"""One test request before the run, as ``vllm bench serve`` sends one: a server that refuses the
run's requests (vLLM started without a tool parser, a model it does not serve, a wrong path, a
key it refuses) says so at once, in its own words, instead of failing every request of the run.

The request is a first turn of the plan's first session, built exactly as the lanes build it
(same API, tools, tool choice, extra body, headers): the first thread's, or the first one that
offers tools when that one does not (a session's first thread is often a title side call with
none, and a server without a tool parser refuses only requests that offer tools), asking for one
token, with a marker of its
own first in its system prompt and in its first tool's description
(:func:`agentx.workload.build.lead_with`): whichever a chat template renders first, it shares no
prefix with the run's requests beyond the template's first tokens, so the server's cache, and
every hit rate measured after, is as if it had not been sent. ``--no-preflight`` skips it.
"""

from __future__ import annotations

import orjson

from agentx.apis.registry import family
from agentx.core.errors import EndpointError
from agentx.core.urls import redact_url
from agentx.metrics.errors import hint
from agentx.replay.client import stream_request
from agentx.replay.http1.pool import StreamClient
from agentx.workload.build import (
    BuildConfig,
    SynthCache,
    ThreadBuilder,
    lead_with,
    marker_salt,
    salt_marker,
)
from agentx.workload.plan import ReplayPlan

PROBE = "preflight"  # the marker key of the test request: no tree instance has it


async def send_test_request(
    client: StreamClient,
    plan: ReplayPlan,
    build: BuildConfig,
    *,
    endpoint: str,
    nonce: str,
    headers: dict[str, str],
    timeout_s: float,
) -> None:
    """Send the test request; raise :class:`EndpointError` with the server's words when it
    fails."""
    if not len(plan.sessions):
        return
    session = plan.sessions[0]
    firsts = [(t.thread_id, t.turns[0].meta) for t in session.threads if t.turns]
    if not firsts:
        return
    loaded = plan.source.load_session(session.source)
    chosen = None
    for thread_id, meta in firsts:
        builder = ThreadBuilder(build, meta.api, SynthCache(max_bytes=1 << 24))
        built = builder.build(loaded.exchange(meta), None, max_tokens=1)
        with_tools = bool(family(built.api).offered_tools(orjson.loads(built.body)))
        if chosen is None or with_tools:
            chosen = thread_id, built
        if with_tools:
            break
    assert chosen is not None
    thread_id, built = chosen
    body = orjson.dumps(
        lead_with(orjson.loads(built.body), built.api, salt_marker(marker_salt(nonce, PROBE)))
    )
    outcome = await stream_request(
        client,
        built.path,
        body,
        built.api,
        headers=headers,
        live=build.live,
        timeout_s=timeout_s,
    )
    if outcome.ok:
        return
    kind = outcome.error_type or "unknown"
    message = outcome.error or kind
    what = f"HTTP {outcome.status}" if outcome.status is not None else kind
    advice = hint(kind, outcome.status, message, outcome.prompt_tokens)
    raise EndpointError(
        f"{redact_url(endpoint)} failed a test request ({what}; the first request of thread "
        f"{thread_id} of session {session.session_id}, one token, to {built.path}): {message}"
        + (f"; {advice}" if advice else "")
        + " (--no-preflight skips the test request)"
    )
