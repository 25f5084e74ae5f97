"""The failed requests of a run, grouped by what went wrong, in the server's own words.

:func:`error_kinds` groups the failed measured requests by (error kind, HTTP status), commonest
first, keeping the first one's message whole; :func:`hint` says what to change when the message
is one of the commonest a benchmark meets (vLLM started without a tool parser, a wrong model
name, prompts longer than the server's context, a refused key, a wrong path), and for every
kind of failure otherwise (:data:`agentx.core.record.FAILURE_KINDS`). Redirects are grouped by
status and by the origin their ``Location`` names.
:func:`failed_requests_line` is the one line the terminal, stderr and ``summary.json``'s warnings
carry about them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentx.core.record import (
    ERR_CANCELLED,
    ERR_CONNECT,
    ERR_HTTP,
    ERR_NO_CONTENT,
    ERR_NOT_A_STREAM,
    ERR_PROTOCOL,
    ERR_REDIRECT,
    ERR_RESET,
    ERR_TIMEOUT,
    RequestRecord,
    redirect_origin,
)
from agentx.results.summary.errors import ErrorKind

TOOL_PARSER = re.compile(r"tool choice requires --enable-auto-tool-choice", re.I)
NO_MODEL = re.compile(
    r"model\b.*\b(does not exist|not found|not exist)|model_not_found|unknown model", re.I
)
CONTEXT = re.compile(
    r"maximum context length is (?P<limit>[\d,]+)|context length|context window|prompt is too "
    r"long|exceeds? the (maximum )?(context|model length)|too many (input )?tokens|"
    r"max_model_len|max-model-len",
    re.I,
)


@dataclass(frozen=True, slots=True)
class _Failure:
    """What :func:`hint` reads of one group of failed requests."""

    kind: str
    status: int | None
    message: str
    longest_prompt_tokens: int | None  # agentx's count of the longest of these prompts


def _context_hint(f: _Failure) -> str:
    m = CONTEXT.search(f.message)
    limit = m.group("limit") if m is not None else None
    longest = (
        f"; the longest of these prompts is {f.longest_prompt_tokens:,} tokens by agentx's count"
        if f.longest_prompt_tokens
        else ""
    )
    context = f"the server's context ({limit} tokens)" if limit else "the server's context"
    cut = f" {limit.replace(',', '')}" if limit else " N"
    return (
        f"prompts longer than {context}{longest}: start the server with a longer context "
        "(vLLM --max-model-len; agentx serve-sim --profile agentx), or drop longer requests "
        f"from the trace (agentx scrub --max-context{cut})"
    )


HINTS: tuple[tuple[Callable[[_Failure], bool], Callable[[_Failure], str]], ...] = (
    (
        lambda f: bool(TOOL_PARSER.search(f.message)),
        lambda f: (
            "the server was started without a tool parser: start vLLM with "
            "--enable-auto-tool-choice --tool-call-parser NAME (hermes for Qwen and Hermes "
            'models), or replay with --extra-body \'{"tool_choice": "none"}\' (the recorded '
            "tool calls are still sent as history)"
        ),
    ),
    (
        lambda f: bool(NO_MODEL.search(f.message)),
        lambda f: "the server does not serve that model: --model NAME, one of GET /v1/models",
    ),
    (lambda f: bool(CONTEXT.search(f.message)), _context_hint),
    (
        lambda f: f.status in (401, 403),
        lambda f: "the server refused the API key: --api-key KEY or OPENAI_API_KEY",
    ),
    (
        lambda f: f.status in (404, 405),
        lambda f: (
            "no such route on the server: --endpoint is its base URL (http://HOST:PORT or "
            "http://HOST:PORT/v1) and --api picks the path (chat: /v1/chat/completions, "
            "messages: /v1/messages)"
        ),
    ),
    (
        lambda f: f.status == 413,
        lambda f: "a request body was too large for the server or a proxy in front of it",
    ),
    (
        lambda f: f.status == 429,
        lambda f: "the server rate-limited the client: lower --concurrency or raise its limit",
    ),
    (
        lambda f: f.kind == ERR_CONNECT,
        lambda f: "the server could not be reached: did it stop during the run?",
    ),
    (
        lambda f: f.kind == ERR_TIMEOUT,
        lambda f: "no complete answer in time: raise --timeout, or lower --concurrency",
    ),
    (
        lambda f: f.kind == ERR_REDIRECT,
        lambda f: (
            f"the endpoint {'moved' if f.status in (301, 308) else 'sent these elsewhere'}: "
            "give --endpoint the URL it redirects to (replay does not follow a redirect: it "
            "would re-send the body, or send the key to another origin)"
        ),
    ),
    (
        lambda f: f.kind == ERR_NO_CONTENT,
        lambda f: (
            "answers without a body: --endpoint must reach the inference server itself, not a "
            "health check or a proxy that drops the request"
        ),
    ),
    (
        lambda f: f.kind == ERR_NOT_A_STREAM,
        lambda f: (
            "a web page answered (a login or proxy page): --endpoint must reach the inference "
            "server itself; a gateway may want --api-key or --header"
        ),
    ),
    (
        lambda f: f.kind == ERR_RESET,
        lambda f: (
            "the connection closed before the answer's end: the server crashed or restarted "
            "(its log says), or a proxy in front of it cut the stream (its idle timeout)"
        ),
    ),
    (
        lambda f: f.kind == ERR_PROTOCOL,
        lambda f: (
            "the answer was not what the API defines (the message says what): does the server "
            "speak --api (chat, messages, responses, native), or does a proxy rewrite it?"
        ),
    ),
    (
        lambda f: f.kind == ERR_CANCELLED,
        lambda f: (
            "in flight when the run stopped (a signal, a failed gate, the end of --duration's "
            "drain): not the server's failure"
        ),
    ),
    (
        lambda f: f.kind == ERR_HTTP and f.status is not None and f.status >= 500,
        lambda f: (
            "the server failed on these requests: its log says why (out of memory, a crash, "
            "overload); lower --concurrency to tell load from a bad request"
        ),
    ),
    (
        lambda f: f.kind == ERR_HTTP,
        lambda f: (
            "the server refused these requests (its message says why): --extra-body or "
            "--api change what is sent"
        ),
    ),
)


def hint(
    kind: str, status: int | None, message: str, longest_prompt_tokens: int | None
) -> str | None:
    """What to change for a failure whose message agentx recognises (``None`` otherwise)."""
    failure = _Failure(kind, status, message, longest_prompt_tokens)
    for matches, say in HINTS:
        if matches(failure):
            return say(failure)
    return None


def error_kinds(measured: Sequence[RequestRecord]) -> tuple[ErrorKind, ...]:
    """The failed requests of ``measured`` by (kind, status; a redirect's target origin too),
    commonest first (ties: first seen first), each with the first one's message whole and its
    hint."""
    groups: dict[tuple[str, int | None, str | None], list[RequestRecord]] = {}
    for r in measured:
        if not r.ok:
            kind = r.error_type or "unknown"
            status = r.status if kind in (ERR_HTTP, ERR_REDIRECT) else None
            # redirects: one group per status and target origin (307 to a login page is not
            # 301 to the endpoint's new home)
            where = redirect_origin(r.error) if kind == ERR_REDIRECT else None
            groups.setdefault((kind, status, where), []).append(r)
    out = []
    for (kind, status, _), rows in groups.items():
        message = next((r.error for r in rows if r.error), None)
        prompts = [r.expected_prompt_tokens for r in rows if r.expected_prompt_tokens is not None]
        longest = max(prompts) if prompts else None
        out.append(
            ErrorKind(
                kind,
                status,
                len(rows),
                message,
                hint(kind, status, message or "", longest),
            )
        )
    return tuple(sorted(out, key=lambda k: -k.count))


def failed_requests_line(kinds: Sequence[ErrorKind], measured: int) -> str | None:
    """``38 of 48 measured requests failed: http 400 x30: "..." (hint); connect x8: ...``."""
    failed = sum(k.count for k in kinds)
    if not failed:
        return None
    parts = []
    for k in kinds[:3]:
        words = f": {k.message}" if k.message else ""
        parts.append(f"{k.label} x{k.count}{words}" + (f" ({k.hint})" if k.hint else ""))
    more = len(kinds) - 3
    tail = f"; and {more} more kinds (summary.json errors.by_kind)" if more > 0 else ""
    return f"{failed} of {measured} measured requests failed: " + "; ".join(parts) + tail
