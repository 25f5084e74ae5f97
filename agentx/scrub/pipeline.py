"""The streaming scrub: read a trace, apply the rules in order, write the clean trace.

One pass, in file order. State kept across exchanges is small and bounded: recent request ids
and fingerprints (duplicates), the last kept request of each thread (retries), the ids of dropped
exchanges (re-parenting), and the memos of per-message work (bounded LRUs). An exchange no rule
touches is written as the very object that was read, so it comes out identical.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from agentx.apis.bodies import system_key
from agentx.apis.provider_fields import has_provider_fields
from agentx.core.errors import UsageError
from agentx.core.flags import (
    FLAG_NON_MODEL,
    FLAG_PROVIDER_FIELDS,
    FLAG_REPAIRED,
    FLAG_SECRET_REDACTED,
    FLAG_SIDE_CALL,
    has,
)
from agentx.core.models import JSON, Exchange, Response
from agentx.core.progress import Progress
from agentx.core.urls import redact_urls_in
from agentx.prefixcache.theory import HitRateMeter
from agentx.prefixcache.tokens import count_request_tokens
from agentx.results.scrub import RuleCount, ScrubReport
from agentx.scrub import toolpairs
from agentx.scrub.rules import (
    RULES,
    IdMemo,
    Rule,
    dumps,
    is_non_model,
    is_side_call,
    kept_flagged,
    response_rule,
)
from agentx.scrub.secrets import SecretRedactor
from agentx.store.codec import conversation_key


@dataclass(frozen=True, slots=True)
class ScrubOptions:
    max_context: int | None = None  # drop requests with more prompt tokens than this
    keep_side_calls: bool = False  # keep title/probe side calls, flagged "side_call"
    keep_non_model: bool = False  # keep count_tokens/models/telemetry rows, flagged "non_model"
    redact_emails: bool = False
    redact_secrets: bool = True
    block_size: int = 16  # for the hit rate in the report
    hit_rate: bool = True  # measure the theoretical hit rate before and after
    window: int = 65536  # duplicates are looked for among this many recent exchanges


def _digest(value: JSON) -> bytes:
    return hashlib.blake2b(dumps(value), digest_size=16).digest()


class Scrubber:
    """Applies the rules to a stream of exchanges; :meth:`report` afterwards says what it did."""

    def __init__(
        self,
        options: ScrubOptions = ScrubOptions(),
        on_drop: Callable[[Exchange, str], None] | None = None,
    ) -> None:
        self.options = options
        self.on_drop = on_drop  # told of each exchange dropped and the rule's name
        self.counts: Counter[str] = Counter()
        self.exchanges_in = 0
        self.exchanges_out = 0
        self.redactor = SecretRedactor(redact_emails=options.redact_emails)
        self._recent_ids: OrderedDict[str, None] = OrderedDict()
        self._recent_fps: OrderedDict[bytes, str] = OrderedDict()
        self._last_kept: dict[tuple[str, str], tuple[bytes, str]] = {}
        self._dropped: dict[str, str | None] = {}  # dropped id -> its nearest kept ancestor
        self._digests: IdMemo[bytes] = IdMemo()
        self._provider: IdMemo[bool] = IdMemo()
        self._redacted: IdMemo[JSON] = IdMemo()
        self.before = HitRateMeter(options.block_size) if options.hit_rate else None
        self.after = HitRateMeter(options.block_size) if options.hit_rate else None

    # -- the pipeline ---------------------------------------------------------------------

    def process(self, exchanges: Iterable[Exchange]) -> Iterator[Exchange]:
        for ex in exchanges:
            self.exchanges_in += 1
            if self.before is not None:
                self.before.observe(ex)
            out = self._one(ex)
            if out is not None:
                self.exchanges_out += 1
                if self.after is not None:
                    self.after.observe(out)
                yield out

    def _drop(self, ex: Exchange, rule: str, ancestor: str | None = None) -> None:
        self.counts[rule] += 1
        if self.on_drop is not None:
            self.on_drop(ex, rule)
        if ancestor == ex.request_id:
            return  # a second copy of a kept exchange: references to its id stay valid
        self._dropped[ex.request_id] = (
            ancestor if ancestor is not None else self._resolve(ex.parent_request_id)
        )

    def _resolve(self, parent: str | None) -> str | None:
        seen = 0
        while parent is not None and parent in self._dropped and seen < 10_000:
            parent = self._dropped[parent]
            seen += 1
        return parent

    def _one(self, ex: Exchange) -> Exchange | None:
        opts = self.options
        body_fp = self._body_digest(ex)
        original = self._duplicate_of(ex, body_fp)
        if original is not None:
            self._drop(ex, "duplicate", original)
            return None
        rule = response_rule(ex)
        if rule is not None:
            self._drop(ex, rule)
            return None
        flags = list(ex.flags)
        if is_non_model(ex):
            if not opts.keep_non_model:
                self._drop(ex, "non_model")
                return None
            self.counts["non_model"] += 1
            if FLAG_NON_MODEL not in flags:
                flags.append(FLAG_NON_MODEL)
        elif is_side_call(ex):
            if not opts.keep_side_calls:
                self._drop(ex, "side_call")
                return None
            self.counts["side_call"] += 1
            if FLAG_SIDE_CALL not in flags:
                flags.append(FLAG_SIDE_CALL)
        thread = (ex.session_id, ex.thread_id)
        last = self._last_kept.get(thread)
        if last is not None and last[0] == body_fp and ex.hash_ids is None:
            self._drop(ex, "retry", last[1])
            return None
        body = ex.request
        key = conversation_key(ex.api, body)
        if key is not None:
            checked = toolpairs.check(ex.api, body[key])
            if not checked.ok:
                if checked.repaired is None:
                    self._drop(ex, "orphan_tools")
                    return None
                body = {**body, key: checked.repaired}
                self.counts["orphan_tools_repaired"] += 1
                if FLAG_REPAIRED not in flags:
                    flags.append(FLAG_REPAIRED)
        if opts.max_context is not None and self._prompt_tokens(ex, body) > opts.max_context:
            self._drop(ex, "over_max_context")
            return None
        if isinstance(body, dict) and self._has_provider_fields(ex.api, body):
            self.counts["provider_fields"] += 1
            if FLAG_PROVIDER_FIELDS not in flags:
                flags.append(FLAG_PROVIDER_FIELDS)
        out = ex
        if opts.redact_secrets:
            out, body, redacted = self._redact(ex, body)
            if redacted:
                self.counts["secrets"] += 1
                if not has(flags, FLAG_SECRET_REDACTED):  # or its old spelling "redacted"
                    flags.append(FLAG_SECRET_REDACTED)
        parent = ex.parent_request_id
        if parent is not None and parent in self._dropped:
            parent = self._resolve(parent)
            self.counts["reparented"] += 1
        if body is not ex.request or tuple(flags) != ex.flags or parent != ex.parent_request_id:
            out = replace(out, request=body, flags=tuple(flags), parent_request_id=parent)
        self._remember(ex, body_fp)
        return out

    # -- state for duplicates and retries --------------------------------------------------

    def _duplicate_of(self, ex: Exchange, body_fp: bytes) -> str | None:
        if ex.request_id in self._recent_ids:
            return self._dropped.get(ex.request_id, ex.request_id)
        fp = self._exchange_fp(ex, body_fp)
        return self._recent_fps.get(fp)

    def _remember(self, ex: Exchange, body_fp: bytes) -> None:
        self._recent_ids[ex.request_id] = None
        self._recent_fps[self._exchange_fp(ex, body_fp)] = ex.request_id
        for recent in (self._recent_ids, self._recent_fps):
            while len(recent) > self.options.window:
                recent.popitem(last=False)
        self._last_kept[(ex.session_id, ex.thread_id)] = (body_fp, ex.request_id)

    def _exchange_fp(self, ex: Exchange, body_fp: bytes) -> bytes:
        r = ex.response
        tail = dumps(
            [
                ex.session_id,
                ex.thread_id,
                ex.timing.start_wall_ns,
                ex.status,
                r.text,
                r.reasoning,
                list(r.tool_calls),
                r.stop_reason,
            ]
        )
        return hashlib.blake2b(body_fp + tail, digest_size=16).digest()

    def _body_digest(self, ex: Exchange) -> bytes:
        """A digest of the request body; per-message digests are memoised by identity."""
        body = ex.request
        h = hashlib.blake2b(ex.api.encode() + b"\0", digest_size=16)
        if ex.hash_ids is not None:
            h.update(dumps([list(ex.hash_ids), ex.usage.prompt_tokens]))
        if not isinstance(body, dict):
            h.update(dumps(body))
            return h.digest()
        key = conversation_key(ex.api, body)
        skey = system_key(ex.api)
        for k, v in body.items():
            h.update(dumps(k))
            if k == key:
                for m in v:
                    h.update(self._digests.get(m, _digest))
            elif k in ("tools", skey):
                h.update(self._digests.get(v, _digest))
            else:
                h.update(dumps(v))
        return h.digest()

    # -- per-exchange measurements and rewrites ---------------------------------------------

    def _prompt_tokens(self, ex: Exchange, body: JSON) -> int:
        if ex.usage.prompt_tokens is not None:
            return ex.usage.prompt_tokens
        if (
            self.before is not None
            and self.before.last_prompt_tokens is not None
            and body is ex.request
        ):
            return self.before.last_prompt_tokens
        return count_request_tokens(ex.api, body)

    def _has_provider_fields(self, api: str, body: dict[str, JSON]) -> bool:
        key = conversation_key(api, body)
        for k, v in body.items():
            if k == key:
                if any(self._provider.get(m, has_provider_fields) for m in v):
                    return True
            elif isinstance(v, (dict, list)) and self._provider.get(v, has_provider_fields):
                return True
        return False

    def _redact(self, ex: Exchange, body: JSON) -> tuple[Exchange, JSON, bool]:
        red = self.redactor
        changed = False
        if isinstance(body, dict):
            key = conversation_key(ex.api, body)
            new: dict[str, JSON] = {}
            for k, v in body.items():
                if k == key:
                    items = [self._redacted.get(m, red.json) for m in v]
                    nv: JSON = v if all(a is b for a, b in zip(items, v, strict=True)) else items
                elif isinstance(v, (dict, list)):
                    nv = self._redacted.get(v, red.json)
                else:
                    nv = red.json(v)
                new[k] = nv
                changed = changed or nv is not v
            if changed:
                body = new
        elif body is not None:
            nb = red.json(body)
            changed = nb is not body
            body = nb
        r = ex.response
        resp = Response(
            text=red.text(r.text) if r.text is not None else None,
            reasoning=red.text(r.reasoning) if r.reasoning is not None else None,
            tool_calls=tuple(red.json(list(r.tool_calls))),
            stop_reason=r.stop_reason,
            message=red.json(r.message),
        )
        resp_changed = (
            resp.text is not r.text
            or resp.reasoning is not r.reasoning
            or resp.message is not r.message
            or any(a is not b for a, b in zip(resp.tool_calls, r.tool_calls, strict=True))
        )
        error = red.text(ex.error) if ex.error is not None else None
        path = red.text(ex.path)
        out = ex
        if resp_changed or error is not ex.error or path is not ex.path:
            out = replace(ex, response=resp if resp_changed else r, error=error, path=path)
            changed = True
        return out, body, changed

    # -- the result ----------------------------------------------------------------------------

    def rules(self) -> tuple[RuleCount, ...]:
        rows: list[RuleCount] = []
        for rule in RULES:
            r: Rule = rule
            if rule.name == "non_model" and self.options.keep_non_model:
                r = kept_flagged("non_model")
            if rule.name == "side_call" and self.options.keep_side_calls:
                r = kept_flagged("side_call")
            rows.append(RuleCount(r.name, r.action, r.reason, self.counts.get(r.name, 0)))
        return tuple(rows)

    def report(self, input_path: str = "", output_path: str = "") -> ScrubReport:
        return ScrubReport(
            input=input_path,
            output=output_path,
            exchanges_in=self.exchanges_in,
            exchanges_out=self.exchanges_out,
            rules=self.rules(),
            secrets=dict(self.redactor.replaced),
            secrets_distinct=self.redactor.distinct,
            block_size=self.options.block_size,
            hit_rate_before=self.before.hit_rate if self.before is not None else None,
            hit_rate_after=self.after.hit_rate if self.after is not None else None,
        )


def scrub_exchanges(
    exchanges: Iterable[Exchange], options: ScrubOptions = ScrubOptions()
) -> tuple[list[Exchange], ScrubReport]:
    """Scrub an in-memory sequence (tests, small traces)."""
    s = Scrubber(options)
    out = list(s.process(exchanges))
    return out, s.report()


def scrub_trace(
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    options: ScrubOptions = ScrubOptions(),
    *,
    dataset: bool = False,
    progress: Progress | None = None,
    force: bool = False,
) -> ScrubReport:
    """Stream ``input_path`` (a trace file or dataset) through the rules into ``output_path``
    (never the same file; an existing one only with ``force``, and only once the new one is
    complete): one file, or a dataset directory with ``dataset``. ``progress`` follows the
    reading, in rows."""
    from agentx.store import iter_exchanges, open_trace
    from agentx.store.dataset import open_writer

    src, dst = Path(input_path), Path(output_path)
    if dst.exists() and src.exists() and src.resolve() == dst.resolve():
        raise UsageError("scrub never modifies its input: give -o another path")
    info = open_trace(src)
    prog = progress or Progress()
    prog.phase("scrubbing", total=info.num_rows, unit="rows")
    scrubber = Scrubber(options)
    # a trace captured before URLs were redacted may carry a key in its metadata (upstream)
    metadata = {k: redact_urls_in(str(v)) for k, v in info.metadata.items()}
    metadata["scrubbed_by"] = "agentx.scrub/1"
    exchanges = iter_exchanges(src, shared=True, progress=prog)
    trace_id = info.trace_id or None
    with open_writer(dst, dataset=dataset, force=force, trace_id=trace_id, metadata=metadata) as w:
        for ex in scrubber.process(exchanges):
            w.append(ex)
    return scrubber.report(str(src), str(dst))
