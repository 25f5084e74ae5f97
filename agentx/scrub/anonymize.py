"""``agentx anonymize``: the same load with none of the original text.

A request renders (:mod:`agentx.prefixcache.tokens`) as segments: tools, system, one per message. Each
segment is rewritten so that

- its rendering has exactly as many cl100k tokens as the original's;
- its synthetic token ``i`` is a keyed function of the original segment's tokens ``0..i``
  wherever the position holds content: two segments that share ``k`` leading tokens still share
  exactly ``k``, and identical segments come out identical.

Token counts per request and the block-hash prefix structure (hence the theoretical hit rate at
any block size) are therefore preserved. The JSON structure stays: roles, block types, tool ids
and names, tool schemas' shape; tool-call arguments stay valid JSON.

How a segment is rewritten: its leaves (:mod:`agentx.scrub.leaves`) are replaced by markers and
the segment is rendered again, which locates every leaf in the original rendering. Counting the
original tokens that start before each leaf gives the token position where the leaf's words must
begin; leaf ``j`` then gets as many words as the original has tokens up to the next leaf, less
the framing between them. Words never merge with each other or with the framing (see
:mod:`agentx.prefixcache.synth`), so the count is exact. A segment whose layout defeats this (it never
happened on the captures we have) falls back to per-leaf counts plus a correction, and is
counted in the report as ``inexact``.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from agentx.apis import MODEL_APIS
from agentx.apis.bodies import conversation_key, system_key
from agentx.core.errors import UsageError
from agentx.core.models import JSON, Exchange, Response
from agentx.core.progress import Progress
from agentx.prefixcache.synth import PrefixWords
from agentx.prefixcache.tokens import (
    DEFAULT_ENCODING,
    count_tokens,
    encode,
    get_encoding,
    render_message,
    render_segments,
)
from agentx.scrub.leaves import Leaf, collect, escaped, pseudonym, substitute
from agentx.scrub.rules import IdMemo

PSEUDONYM_PARAMS = frozenset(
    {"metadata", "user", "prompt_cache_key", "safety_identifier", "previous_response_id"}
)
_MARK = re.compile("\ue000(\\d+)\ue001")
_LEAF_DOMAIN = b"leaf"


@dataclass(frozen=True, slots=True)
class AnonymizeOptions:
    key: bytes | None = None  # None: a random key, never stored (the output is not reproducible)
    keep_tools: bool = False  # leave tool schemas as they are
    encoding: str = DEFAULT_ENCODING


@dataclass(frozen=True, slots=True)
class AnonymizeReport:
    input: str
    output: str
    exchanges: int
    segments: int  # distinct segments rewritten
    leaves: int
    inexact_segments: int  # token count or alignment could not be kept exactly

    def to_json(self) -> dict[str, object]:
        return {
            "schema": "agentx.anonymize/1",
            "input": self.input,
            "output": self.output,
            "exchanges": self.exchanges,
            "segments": self.segments,
            "leaves": self.leaves,
            "inexact_segments": self.inexact_segments,
        }


Render = Callable[[JSON], str]


class Anonymizer:
    """Rewrites exchanges; deterministic for a given key."""

    def __init__(self, options: AnonymizeOptions = AnonymizeOptions()) -> None:
        self.options = options
        key = options.key if options.key is not None else os.urandom(32)
        self.words = PrefixWords(key, options.encoding)
        self._key = self.words.key
        self._enc = get_encoding(options.encoding)
        self._memos: dict[tuple[str, str], IdMemo[JSON]] = {}
        self.counts: Counter[str] = Counter()

    # -- exchanges --------------------------------------------------------------------------

    def exchange(self, ex: Exchange) -> Exchange:
        self.counts["exchanges"] += 1
        body = self.body(ex.api, ex.request)
        r = ex.response
        resp = Response(
            text=self.text(r.text),
            reasoning=self.text(r.reasoning),
            tool_calls=tuple(self._standalone(list(r.tool_calls))),
            stop_reason=r.stop_reason,
            message=self.segment(r.message, ex.api, "message")
            if isinstance(r.message, dict)
            else self._standalone(r.message),
        )
        return replace(
            ex, request=body, response=resp, error=None if ex.error is None else "[anonymized]"
        )

    def body(self, api: str, body: JSON) -> JSON:
        if not isinstance(body, dict):
            return self._standalone(body)
        if api not in MODEL_APIS:
            return {k: v if k == "model" else self._standalone(v) for k, v in body.items()}
        skey = system_key(api)
        ckey = conversation_key(api)
        out: dict[str, JSON] = {}
        for k, v in body.items():
            if k == "tools":
                out[k] = v if self.options.keep_tools else self.segment(v, api, "tools")
            elif k == skey:
                out[k] = self.segment(v, api, skey)
            elif k == ckey and isinstance(v, list):
                out[k] = [self.segment(m, api, "message") for m in v]
            elif k == ckey and isinstance(v, str):
                out[k] = self.segment(v, api, "input")
            elif k in PSEUDONYM_PARAMS:
                out[k] = self._pseudonymise(v)
            else:
                out[k] = v
        return out

    def text(self, value: str | None) -> str | None:
        """A free text outside any request (response text): same token count on its own."""
        if value is None or not value:
            return value
        toks = encode(value, self.options.encoding).tolist()
        return self.words.text_for(toks, len(toks), _LEAF_DOMAIN)

    # -- segments ---------------------------------------------------------------------------

    def segment(self, value: JSON, api: str, kind: str) -> JSON:
        """``value`` (the tools, the system prompt, a message, a bare input string) rewritten so
        that its rendering keeps the token count and the prefixes."""
        if value is None or isinstance(value, (bool, int, float)):
            return value
        memo = self._memos.get((api, kind))
        if memo is None:
            memo = self._memos[(api, kind)] = IdMemo(8192 if kind == "message" else 256)
        render = _render(api, kind)
        return memo.get(value, lambda v: self._segment(v, render))

    def _segment(self, value: JSON, render: Render) -> JSON:
        leaves = collect(value)
        if not leaves:
            return substitute(value, [], self._opaque)
        self.counts["segments"] += 1
        self.counts["leaves"] += len(leaves)
        original = render(value)
        texts = self._aligned(value, leaves, original, render)
        if texts is None:
            texts = [self.text(leaf.text) or "" for leaf in leaves]
        out = substitute(value, texts, self._opaque)
        if not self._fix_count(value, out, texts, render, original):
            self.counts["inexact_segments"] += 1
        return substitute(value, texts, self._opaque)

    def _aligned(
        self, value: JSON, leaves: list[Leaf], original: str, render: Render
    ) -> list[str] | None:
        if "\ue000" in original or "\ue001" in original:
            return None
        skeleton = render(
            substitute(value, [f"\ue000{i}\ue001" for i in range(len(leaves))], self._opaque)
        )
        parts = _MARK.split(skeleton)
        frames, order = parts[0::2], [int(x) for x in parts[1::2]]
        if len(set(order)) != len(order):
            return None
        spans: dict[int, int] = {}  # leaf index -> char start in the original rendering
        pos = 0
        for j, idx in enumerate(order):
            if not original.startswith(frames[j], pos):
                return None
            pos += len(frames[j])
            nxt = frames[j + 1]
            last = j == len(order) - 1
            for form in escaped(leaves[idx].text, leaves[idx].depth):
                end = pos + len(form)
                if original.startswith(form, pos) and (
                    original[end:] == nxt if last else original.startswith(nxt, end)
                ):
                    spans[idx] = pos
                    pos = end
                    break
            else:
                return None
        tokens = encode(original, self.options.encoding).tolist()
        text, offsets = self._enc.decode_with_offsets(tokens)
        if text != original:
            return None
        chain = self.words.chain(tokens)
        vocab = self.words.vocab
        enc = self.options.encoding
        texts = [
            self.text(leaf.text) or "" if i not in spans else "" for i, leaf in enumerate(leaves)
        ]
        s = count_tokens(frames[0], enc)
        for j, idx in enumerate(order):
            framing = count_tokens(frames[j + 1], enc)
            target = (
                bisect_left(offsets, spans[order[j + 1]]) if j + 1 < len(order) else len(tokens)
            )
            n = max(1, target - s - framing)
            picks = [chain[p] if p < len(chain) else chain[-1] ^ p for p in range(s, s + n)]
            texts[idx] = vocab.text(i % vocab.size for i in picks)
            s += n + framing
        return texts

    def _fix_count(
        self, value: JSON, out: JSON, texts: list[str], render: Render, original: str
    ) -> bool:
        """Make the rendering of ``out`` exactly as long as the original; True when it is."""
        want = count_tokens(original, self.options.encoding)
        for _ in range(3):
            got = count_tokens(render(out), self.options.encoding)
            if got == want:
                return True
            longest = max(range(len(texts)), key=lambda i: len(texts[i]))
            words = _words(texts[longest])
            n = max(1, len(words) + want - got)
            if n > len(words):
                extra = self.words.text_for([len(texts[longest])], n - len(words), b"pad")
                texts[longest] = texts[longest] + extra
            else:
                texts[longest] = "".join(words[:n])
            out = substitute(value, texts, self._opaque)
        return count_tokens(render(out), self.options.encoding) == want

    # -- everything else ------------------------------------------------------------------

    def _standalone(self, value: JSON) -> JSON:
        """Every leaf replaced by words of its own token count (no rendering to align with)."""
        if value is None or isinstance(value, (bool, int, float)):
            return value
        leaves = collect(value)
        return substitute(value, [self.text(leaf.text) or "" for leaf in leaves], self._opaque)

    def _opaque(self, text: str) -> str:
        return pseudonym(self._key, text)

    def _pseudonymise(self, value: JSON) -> JSON:
        if isinstance(value, str):
            return pseudonym(self._key, value)[:24] if value else value
        if isinstance(value, list):
            return [self._pseudonymise(v) for v in value]
        if isinstance(value, dict):
            return {k: self._pseudonymise(v) for k, v in value.items()}
        return value


def _words(text: str) -> list[str]:
    return re.findall(r" [a-z]+", text)


def _render(api: str, kind: str) -> Render:
    """How ``agentx.prefixcache.tokens`` renders one part of a body of ``api``, on its own."""
    if kind == "message":
        return render_message
    if kind == "input":
        return lambda value: render_message({"role": "user", "content": value})
    return lambda value: "".join(render_segments(api, {kind: value}))


def anonymize_exchanges(
    exchanges: Iterable[Exchange], options: AnonymizeOptions = AnonymizeOptions()
) -> Iterator[Exchange]:
    a = Anonymizer(options)
    for ex in exchanges:
        yield a.exchange(ex)


def anonymize_trace(
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    options: AnonymizeOptions = AnonymizeOptions(),
    *,
    dataset: bool = False,
    progress: Progress | None = None,
    force: bool = False,
) -> AnonymizeReport:
    """Stream ``input_path`` (a trace file or dataset) into ``output_path`` with its text
    replaced: one file, or a dataset directory with ``dataset`` (an existing file is replaced
    only with ``force``). ``progress`` follows the reading, in rows."""
    from agentx.store import iter_exchanges, open_trace
    from agentx.store.dataset import open_writer

    src, dst = Path(input_path), Path(output_path)
    if dst.exists() and src.exists() and src.resolve() == dst.resolve():
        raise UsageError("anonymize never modifies its input: give -o another path")
    info = open_trace(src)
    prog = progress or Progress()
    prog.phase("anonymizing", total=info.num_rows, unit="rows")
    a = Anonymizer(options)
    metadata = {
        k: v for k, v in info.metadata.items() if k.startswith("agentx.") or k == "scrubbed_by"
    }
    metadata["anonymized_by"] = "agentx.anonymize/1"
    trace_id = info.trace_id or None
    with open_writer(
        dst, dataset=dataset, force=force, trace_id=trace_id, metadata=metadata
    ) as writer:
        for ex in iter_exchanges(src, shared=True, progress=prog):
            writer.append(a.exchange(ex))
    c = a.counts
    return AnonymizeReport(
        str(src), str(dst), c["exchanges"], c["segments"], c["leaves"], c["inexact_segments"]
    )
