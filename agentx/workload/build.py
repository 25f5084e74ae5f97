"""Request building: the exact bytes each replayed request sends.

``--api chat`` converts any captured family to OpenAI chat (:mod:`agentx.apis.translate`);
``--api messages`` sends Anthropic requests to ``/v1/messages``; ``--api native`` sends each
request to its captured family's endpoint. In every mode: the model is replaced, ``max_tokens``
is the recorded output length, the answer is streamed with usage, ``--extra-body`` is merged
last, and the tree's cache-bust marker (``[rid:<12 hex>]`` and a blank line, as agentx-harness
writes it) goes at the start of the first user message (the system prompt stays unmarked).

A hash-only row (Weka, Mooncake) is sent as one user message of synthetic text laid out block by
block from its hash ids (:class:`agentx.prefixcache.synth.ThreadText`): the same id always gives the same
block, so the trace's prefix sharing is exact at its block size, and each turn of a thread only
makes its new blocks. The block texts are shared by the run's threads (:class:`SynthCache`).
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, replace
from typing import Any

import orjson

from agentx.apis import Api
from agentx.apis.bodies import conversation, conversation_key
from agentx.apis.family import Family
from agentx.apis.provider_fields import strip_provider_fields
from agentx.apis.registry import family
from agentx.apis.translate import Message, ThreadConverter
from agentx.core.flags import FLAG_PROVIDER_FIELDS
from agentx.core.models import JSON, Exchange
from agentx.prefixcache.synth import BlockTexts, ThreadText
from agentx.prefixcache.tokens import count_tokens

DEFAULT_MAX_TOKENS = 256  # when the trace does not say how long the answer was
# orjson reserves ~8-12 bytes of output a character of a long string and keeps that buffer as the
# bytes it returns: a 100K-token prompt's 0.9 MB body would hold ~9 MB while its request is in
# flight, and as its thread's previous body in the sent log. Bodies past this are copied to one
# of their own size (a copy costs ~0.1 ms a MB; the oversized buffer is freed at once).
COMPACT_BODY_BYTES = 1 << 16
_CONTENT = b'"content":"'  # where a synthetic request's text starts (after the marker)
SYNTH_CACHE_BYTES = 64 << 20  # block texts kept per run (per process), shared by its threads


@dataclass(frozen=True, slots=True)
class BuiltRequest:
    api: str  # the family of the body sent: how to parse the answer and count its tokens
    path: str
    body: bytes
    max_tokens: int
    live_fallback: bool = False  # --assistant live could not thread the reply into this turn


@dataclass(frozen=True, slots=True)
class BuildConfig:
    api_mode: str  # chat | messages | native
    model: str
    extra_body: dict[str, Any]
    ignore_eos: bool
    live: bool


def max_tokens_of(ex: Exchange) -> int:
    """The recorded output length (tokens), else a count of the recorded answer's text."""
    if ex.usage.completion_tokens is not None and ex.usage.completion_tokens > 0:
        return ex.usage.completion_tokens
    r = ex.response
    text = "".join(
        [
            r.text or "",
            r.reasoning or "",
            *(str(c.get("arguments", "")) for c in r.tool_calls if isinstance(c, dict)),
        ]
    )
    n = count_tokens(text) if text else 0
    return n if n > 0 else DEFAULT_MAX_TOKENS


def dumps_body(body: dict[str, Any]) -> bytes:
    """``orjson.dumps(body)``, held in no more memory than its length (:data:`COMPACT_BODY_BYTES`)."""
    out = orjson.dumps(body)
    return bytes(memoryview(out)) if len(out) > COMPACT_BODY_BYTES else out


def marker_salt(nonce: str, instance: int | str) -> str:
    """The 12 hex digits of a tree instance's cache-bust marker (``[rid:<salt>]``): one per
    instance of a tree, shared by its root and its subagents, new for every recycled copy."""
    return hashlib.sha256(f"{nonce}:{instance}".encode()).hexdigest()[:12]


def salt_marker(salt: str) -> str:
    return f"[rid:{salt}]\n\n"


def _salted_content(content: JSON, marker: str) -> JSON:
    if isinstance(content, str) or content is None:
        return marker + (content or "")
    if isinstance(content, list):
        blocks = list(content)
        for i, block in enumerate(blocks):
            if isinstance(block, dict) and block.get("type") in ("text", "input_text"):
                blocks[i] = {**block, "text": marker + str(block.get("text", ""))}
                return blocks
        kind = (
            "input_text"
            if any(isinstance(b, dict) and b.get("type", "").startswith("input_") for b in blocks)
            else "text"
        )
        return [{"type": kind, "text": marker}, *blocks]
    return content


def salt_messages(messages: list[JSON], marker: str) -> list[JSON]:
    """A copy of ``messages`` with ``marker`` at the start of the first user message (for
    Gemini ``contents``: of its first text part)."""
    for i, m in enumerate(messages):
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("parts"), list):
            out = list(messages)
            parts = list(m["parts"])
            at = next((j for j, p in enumerate(parts) if isinstance(p, dict) and "text" in p), None)
            if at is None:
                parts.insert(0, {"text": marker})
            else:
                parts[at] = {**parts[at], "text": marker + str(parts[at]["text"])}
            out[i] = {**m, "parts": parts}
            return out
    for i, m in enumerate(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            out = list(messages)
            out[i] = {**m, "content": _salted_content(m.get("content"), marker)}
            return out
    return list(messages)


def _lead_item(item: JSON, marker: str) -> JSON:
    """``item`` (a message, a system prompt, a Gemini content) with ``marker`` first."""
    if isinstance(item, dict) and isinstance(item.get("parts"), list):
        parts = list(item["parts"])
        if parts and isinstance(parts[0], dict) and "text" in parts[0]:
            parts[0] = {**parts[0], "text": marker + str(parts[0]["text"])}
        else:
            parts.insert(0, {"text": marker})
        return {**item, "parts": parts}
    if isinstance(item, dict) and "content" in item:
        return {**item, "content": _salted_content(item.get("content"), marker)}
    return _salted_content(item, marker)


def _lead_tool(tool: JSON, marker: str) -> JSON:
    """``tool`` with ``marker`` first in the description of the function it declares (the dict
    that names it, however deep the family nests it)."""
    if isinstance(tool, dict):
        if "name" in tool:
            return {**tool, "description": marker + str(tool.get("description") or "")}
        for key, value in tool.items():
            if isinstance(value, dict | list):
                led = _lead_tool(value, marker)
                if led is not value:
                    return {**tool, key: led}
    elif isinstance(tool, list) and tool:
        led = _lead_tool(tool[0], marker)
        if led is not tool[0]:
            return [led, *tool[1:]]
    return tool


def lead_with(body: dict[str, Any], api: str, marker: str) -> dict[str, Any]:
    """A copy of ``body`` with ``marker`` before what a chat template may render first: the
    description of its first tool, and its system prompt (the family's key), else its first
    conversation item. A request built so shares no prefix with any other, past the template's
    first few tokens, whether the template puts the tools or the system prompt first."""
    out = dict(body)
    fam = family(api)
    tools = out.get("tools")
    if isinstance(tools, list) and tools:
        out["tools"] = [_lead_tool(tools[0], marker), *tools[1:]]
    if out.get(fam.system_key):
        out[fam.system_key] = _lead_item(out[fam.system_key], marker)
        return out
    items = out.get(fam.conversation_key)
    if isinstance(items, list) and items:
        out[fam.conversation_key] = [_lead_item(items[0], marker), *items[1:]]
    elif isinstance(items, str):
        out[fam.conversation_key] = marker + items
    return out


class SynthCache:
    """The block texts of a run's hash-only requests, one bounded cache per block size."""

    def __init__(self, max_bytes: int = SYNTH_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._by_size: dict[int, BlockTexts] = {}

    def blocks(self, block_size: int) -> BlockTexts:
        blocks = self._by_size.get(block_size)
        if blocks is None:
            blocks = self._by_size[block_size] = BlockTexts(block_size, max_bytes=self.max_bytes)
        return blocks


def is_hash_only(ex: Exchange) -> bool:
    """A row whose prompt is only block ids: it is sent as synthetic text."""
    return (
        ex.hash_ids is not None
        and bool(ex.hash_block_size)
        and not conversation(ex.api, ex.request)
    )


class ThreadBuilder:
    """Builds the successive requests of one thread of one session instance."""

    def __init__(self, config: BuildConfig, api: str, synth: SynthCache | None = None) -> None:
        self.config = config
        self.api = api
        self._converter = ThreadConverter(api) if config.api_mode == "chat" else None
        self._synth = synth
        self._text: ThreadText | None = None  # this thread's synthetic text, hash-only rows
        # --assistant live: what was sent last turn, and the server's answer to it
        self._recorded_prev: list[Message] | None = None
        self._sent_prev: list[Message] | None = None
        self._reply: Message | None = None

    def live_reply(self, message: JSON) -> None:
        """The server's answer to the last request (``--assistant live``)."""
        self._reply = message if isinstance(message, dict) else None

    def build(self, ex: Exchange, salt: str | None, max_tokens: int | None = None) -> BuiltRequest:
        """The request for ``ex``; ``max_tokens`` overrides the recorded answer length (the
        warm-up asks for one token)."""
        synthetic = is_hash_only(ex)
        if synthetic:
            ex = self._synthetic(ex)
        max_tokens = max_tokens_of(ex) if max_tokens is None else max_tokens
        if self._converter is not None and ex.api != self._converter.api:
            self._converter = ThreadConverter(ex.api)  # a thread that changed API family
        if self._converter is not None:
            built = self._chat(ex, salt, max_tokens)
            if synthetic:  # one message, new every turn: nothing to re-use, its text not held
                self._converter = ThreadConverter(ex.api)
        else:
            built = self._native(ex, salt, max_tokens)
        if synthetic:
            self._hold_text(built.body, salt)
        return built

    def _hold_text(self, body: bytes, salt: str | None) -> None:
        """Have the thread's synthetic text kept as its span of the body sent (held as the
        thread's previous body by the sent log): one copy of a 100K-token prompt, not two. The
        text is the first message's content, after the marker; it needs no JSON escape (words of
        ASCII letters), and :meth:`ThreadText.hold_in` checks it is there."""
        if self._text is None:
            return
        at = body.find(_CONTENT)
        if at >= 0:
            lead = orjson.dumps(salt_marker(salt))[1:-1] if salt else b""
            self._text.hold_in(body, at + len(_CONTENT) + len(lead))

    def _synthetic(self, ex: Exchange) -> Exchange:
        assert ex.hash_ids is not None and ex.hash_block_size
        bs = ex.hash_block_size
        if self._text is None or self._text.blocks.block_size != bs:
            synth = self._synth if self._synth is not None else SynthCache()
            self._synth = synth
            self._text = ThreadText(synth.blocks(bs))
        n = ex.usage.prompt_tokens
        if n is None:
            n = len(ex.hash_ids) * bs
        text = self._text.text(ex.hash_ids, n)
        body = ex.request if isinstance(ex.request, dict) else {}
        return replace(ex, request={**body, "messages": [{"role": "user", "content": text}]})

    def _chat(self, ex: Exchange, salt: str | None, max_tokens: int) -> BuiltRequest:
        assert self._converter is not None
        cfg = self.config
        recorded, tools = self._converter.convert(ex.request)
        messages, fallback = recorded, False
        if cfg.live:
            messages, fallback = self._thread_live(recorded)
        sent = salt_messages(messages, salt_marker(salt)) if salt else messages
        body: dict[str, Any] = {"model": cfg.model, "messages": sent}
        if tools:
            body["tools"] = tools
        body["max_tokens"] = max_tokens
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        if cfg.ignore_eos:
            body["ignore_eos"] = True
            body["min_tokens"] = max_tokens
        body.update(cfg.extra_body)
        chat = family(Api.OPENAI_CHAT)
        return BuiltRequest(
            chat.api, chat.serve_path, dumps_body(body), _asked(body, max_tokens), fallback
        )

    def _thread_live(self, recorded: list[Message]) -> tuple[list[Message], bool]:
        prev, sent_prev, reply = self._recorded_prev, self._sent_prev, self._reply
        self._recorded_prev, self._reply = recorded, None
        messages, fallback = recorded, prev is not None
        if prev is not None and sent_prev is not None and reply is not None:
            n = len(prev)
            if (
                len(recorded) > n
                and recorded[n].get("role") == "assistant"
                and recorded[:n] == prev
            ):
                messages = [*sent_prev, _adopt_ids(reply, recorded[n]), *recorded[n + 1 :]]
                fallback = False
        self._sent_prev = messages
        return messages, fallback

    def _native(self, ex: Exchange, salt: str | None, max_tokens: int) -> BuiltRequest:
        cfg = self.config
        api = ex.api
        body: dict[str, Any] = dict(ex.request)
        if FLAG_PROVIDER_FIELDS in ex.flags:
            body = strip_provider_fields(body)
        key = conversation_key(api)
        if salt and isinstance(body.get(key), list):
            body[key] = salt_messages(body[key], salt_marker(salt))
        elif salt and isinstance(body.get(key), str):
            body[key] = salt_marker(salt) + body[key]
        fam = family(api)
        path = fam.replay_body(body, cfg.model, max_tokens)  # the family's model, length, stream
        if cfg.ignore_eos:
            # serve-sim honours these on every route, SGLang on /v1/messages too; vLLM 0.32's
            # /v1/messages drops them (max_tokens only), its /v1/responses has no such fields
            # either, Google's API refuses unknown fields, and replay warns when outputs come
            # back short
            body["ignore_eos"] = True
            body["min_tokens"] = max_tokens
        body.update(cfg.extra_body)
        return BuiltRequest(api, path, dumps_body(body), _asked(body, max_tokens, fam))


def _asked(body: dict[str, Any], max_tokens: int, fam: Family | None = None) -> int:
    """The output length the body asks for, after ``--extra-body`` (which may override it)."""
    asked = (fam or family(Api.OPENAI_CHAT)).asked_tokens(body, max_tokens)
    return DEFAULT_MAX_TOKENS if asked is None else asked


def _adopt_ids(reply: Message, recorded: Message) -> Message:
    """The live reply, keeping the recorded tool calls' ids (and count), so the recorded tool
    results of the next turn still pair with a call: live calls replace recorded ones in order,
    recorded calls the server did not make are kept, extra live calls are dropped."""
    out: Message = {"role": "assistant", "content": reply.get("content") or ""}
    recorded_calls = list(recorded.get("tool_calls") or ())
    live_calls = list(reply.get("tool_calls") or ())[: len(recorded_calls)]
    calls = [
        {**copy.deepcopy(c), "id": r.get("id")}
        for c, r in zip(live_calls, recorded_calls, strict=False)
    ]
    calls.extend(recorded_calls[len(calls) :])
    if calls:
        out["tool_calls"] = calls
    return out
