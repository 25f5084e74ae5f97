"""The gate ``agentx dataset pack`` passes every row through before anything is packed.

Three refusals, each naming its reason and the row (input, request id, session):

- **a secret**: every text value of the row (request body, response, error, path, ids, model,
  agent, client, flags, importer fields) is scanned with scrub's own patterns
  (:class:`agentx.scrub.secrets.SecretRedactor`), placeholders excepted;
- **original text** without ``--with-text``: a row whose prompt or answer is text that no
  ``agentx anonymize`` replaced (hash-only rows, and rows whose text was synthesised from hash
  ids, carry none);
- **a row scrub would drop**: the input goes through scrub's own pipeline
  (:class:`agentx.scrub.pipeline.Scrubber`, its rules in :mod:`agentx.scrub.rules`), and any
  exchange it drops (duplicate, error, partial, side call, retry, ...) is refused with the rule.

The same pass learns what the configs need of each session (:class:`SessionFacts`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from agentx.apis.bodies import conversation_key
from agentx.core.errors import AgentxError
from agentx.core.models import JSON, Exchange
from agentx.core.progress import Progress
from agentx.dataset.layout import SessionFacts, agent_name
from agentx.formats import load_exchanges, resolve_trace
from agentx.prefixcache.theory import is_model_call
from agentx.prefixcache.tokens import count_request_tokens
from agentx.scrub.pipeline import Scrubber, ScrubOptions
from agentx.scrub.rules import RULE_BY_NAME, RULES, IdMemo
from agentx.scrub.secrets import PATTERNS, SecretRedactor
from agentx.workload.stats import output_tokens_of

SHOWN = 20  # refusals listed in the error (all are counted)
ANONYMIZED_BY = "anonymized_by"
SCRUBBED_BY = "scrubbed_by"
TEXT_NONE, TEXT_SYNTHETIC, TEXT_ORIGINAL = "none", "synthetic", "original"
# the checks a packed dataset's card lists (privacy.gate of its manifest)
CHECKS = (
    "secret scan of every text value of every row (scrub's patterns: {families})",
    "rows scrub would drop refused (its rules: {rules})",
    "original text refused unless --with-text",
)


def families() -> tuple[str, ...]:
    """The secret families scrub's patterns look for, in pattern order."""
    return tuple(dict.fromkeys(p.family for p in PATTERNS))


def checks() -> tuple[str, ...]:
    drops = ", ".join(r.name for r in RULES if r.action == "dropped")
    return tuple(c.format(families=", ".join(families()), rules=drops) for c in CHECKS)


class GateRefused(AgentxError):
    """Rows the gate refused: the first :data:`SHOWN` with their reasons, and how many."""

    def __init__(self, refusals: Sequence[str], count: int) -> None:
        shown = "\n  ".join(refusals)
        more = f"\n  ... and {count - len(refusals)} more" if count > len(refusals) else ""
        rows = "row" if count == 1 else "rows"
        super().__init__(f"refused to pack {count} {rows}:\n  {shown}{more}")
        self.refusals = tuple(refusals)
        self.count = count


@dataclass(slots=True)
class _Session:
    rows: int = 0
    peak: int = 0
    agents: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class GateResult:
    """What passed: each session's facts (in first-row order), the text the rows carry
    (:data:`TEXT_NONE`, :data:`TEXT_SYNTHETIC` or :data:`TEXT_ORIGINAL`), the scrub and
    anonymize stamps of the inputs' trace metadata (``None`` unless every input has the same),
    and the rows read."""

    sessions: dict[str, SessionFacts]
    text: str
    scrubbed_by: str | None
    anonymized_by: str | None
    rows: int


def _strings(value: JSON, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{where}.{k}")


def has_text(ex: Exchange) -> bool:
    """Whether a row carries text of its own: a prompt or an answer (a hash-only row's prompt
    is its block ids; text synthesised from them keeps the ids on the row)."""
    if ex.hash_ids is not None:
        return False
    r = ex.response
    return bool(ex.request) or bool(r.text or r.reasoning or r.tool_calls or r.message)


class Gate:
    """The checks, row by row (:meth:`check`); :meth:`result` once every input is read."""

    def __init__(self, with_text: bool) -> None:
        self.with_text = with_text
        self.refusals: list[str] = []
        self.count = 0
        self.rows = 0
        self.texts: set[str] = set()
        self._secrets = SecretRedactor()
        self._memo: IdMemo[list[tuple[str, str]]] = IdMemo()
        self._where = ""  # the input being read
        self._anonymized = False
        self._stamps: dict[str, set[str | None]] = {SCRUBBED_BY: set(), ANONYMIZED_BY: set()}
        self._sessions: dict[str, _Session] = {}
        self.scrubber = Scrubber(ScrubOptions(hit_rate=False, redact_secrets=False), self._drop)

    def refuse(self, ex: Exchange, reason: str) -> None:
        self.count += 1
        if len(self.refusals) < SHOWN:
            self.refusals.append(
                f"{self._where}: request {ex.request_id} (session {ex.session_id}): {reason}"
            )

    def _drop(self, ex: Exchange, rule: str) -> None:
        self.refuse(ex, f"scrub would drop it ({rule}: {RULE_BY_NAME[rule].reason})")

    def start(self, where: str, metadata: dict[str, str] | None) -> None:
        """The next input: its name in messages, its trace metadata (``None``: not agentx)."""
        self._where = where
        meta = metadata or {}
        for key, seen in self._stamps.items():
            seen.add(meta.get(key))
        self._anonymized = ANONYMIZED_BY in meta

    def _found(self, value: JSON, where: str) -> list[tuple[str, str]]:
        return [(w, fam) for w, s in _strings(value, where) for fam, _, _ in self._secrets.find(s)]

    def secrets(self, ex: Exchange) -> list[tuple[str, str]]:
        """``(where, family)`` of every secret in the row's text values."""
        found: list[tuple[str, str]] = []
        body = ex.request
        key = conversation_key(ex.api)
        if isinstance(body, dict):
            for k, v in body.items():
                if k == key and isinstance(v, list):
                    for i, m in enumerate(v):  # messages repeat across rows: scanned once
                        hits = self._memo.get(m, lambda m: self._found(m, ""))
                        found += [(f"request.{k}[{i}]{w}", fam) for w, fam in hits]
                else:
                    found += self._found(v, f"request.{k}")
        else:
            found += self._found(body, "request")
        r = ex.response
        fields: list[tuple[str, JSON]] = [
            ("response.text", r.text),
            ("response.reasoning", r.reasoning),
            ("response.tool_calls", list(r.tool_calls)),
            ("response.message", r.message),
            ("error", ex.error),
            ("path", ex.path),
            ("request_id", ex.request_id),
            ("session_id", ex.session_id),
            ("thread_id", ex.thread_id),
            ("parent_request_id", ex.parent_request_id),
            ("model", ex.model),
            ("agent", ex.agent),
            ("client", ex.client),
            ("flags", list(ex.flags)),
            ("import_fields", ex.import_fields),
        ]
        for where, value in fields:
            found += self._found(value, where)
        return found

    def check(self, ex: Exchange) -> None:
        self.rows += 1
        found = self.secrets(ex)
        if found:
            where, fam = found[0]
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            self.refuse(ex, f"a secret ({fam}) in {where}{more}")
        if has_text(ex):
            kind = TEXT_SYNTHETIC if self._anonymized else TEXT_ORIGINAL
            self.texts.add(kind)
            if kind == TEXT_ORIGINAL and not self.with_text:
                self.refuse(ex, "original text (pack it only with --with-text, or anonymize it)")
        s = self._sessions.get(ex.session_id)
        if s is None:
            s = self._sessions[ex.session_id] = _Session()
        s.rows += 1
        s.agents.add(agent_name(ex))
        if is_model_call(ex):
            prompt = ex.usage.prompt_tokens
            if prompt is None:
                prompt = count_request_tokens(ex.api, ex.request) if ex.hash_ids is None else 0
            s.peak = max(s.peak, prompt + (output_tokens_of(ex) or 0))

    def result(self) -> GateResult:
        if self.count:
            raise GateRefused(self.refusals, self.count)
        text = (
            TEXT_ORIGINAL
            if TEXT_ORIGINAL in self.texts
            else TEXT_SYNTHETIC
            if self.texts
            else TEXT_NONE
        )

        def stamp(key: str) -> str | None:
            seen = self._stamps[key]
            return next(iter(seen)) if len(seen) == 1 else None

        sessions = {
            sid: SessionFacts(s.rows, s.peak, frozenset(s.agents))
            for sid, s in self._sessions.items()
        }
        return GateResult(sessions, text, stamp(SCRUBBED_BY), stamp(ANONYMIZED_BY), self.rows)


def input_metadata(path: str | os.PathLike[str]) -> dict[str, str] | None:
    """An agentx input's trace metadata (``None`` for the other formats)."""
    fmt, local = resolve_trace(path)
    if fmt != "agentx":
        return None
    from agentx.store import open_trace

    return dict(open_trace(local).metadata)


def run_gate(
    inputs: Sequence[str | os.PathLike[str]], with_text: bool, progress: Progress | None = None
) -> GateResult:
    """Every row of every input through the gate; raises :class:`GateRefused`."""
    gate = Gate(with_text)
    prog = progress or Progress()
    prog.phase("checking", unit="rows")

    def checked(exchanges: Iterator[Exchange]) -> Iterator[Exchange]:
        for ex in exchanges:
            gate.check(ex)
            prog.advance(1)
            yield ex

    for path in inputs:
        gate.start(os.fspath(path), input_metadata(path))
        for _kept in gate.scrubber.process(checked(load_exchanges(path, shared=True))):
            pass  # what scrub keeps is packed as read; what it drops was refused
    return gate.result()
