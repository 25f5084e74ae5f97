"""A packed dataset's ``manifest.json`` (``agentx.dataset/1``) and what ``agentx dataset verify
--json`` prints (``agentx.dataset-verify/1``), as typed values (:mod:`agentx.dataset` builds
them; the layout and the card fields are docs/datasets.md).

The manifest says what a packed directory holds and how to check it: the schema and agentx
versions, the configs with their files and counts, the statistics of the default config (an
``agentx.stats/1`` object and the dataset's own figures), the privacy checks that ran and the
secret scan of the packed files, and the size and sha256 of every other file. The card
(``README.md``) is rendered from it alone, so a verifier that recomputes the figures from the
data can also re-render the card and compare.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.core.percentiles import P
from agentx.results.base import (
    Json,
    bad,
    counts,
    flag,
    integer,
    items,
    need,
    obj,
    p_of,
    schema_obj,
    sub,
    text,
    texts,
)
from agentx.results.stats import Stats

SCHEMA = "agentx.dataset/1"
MANIFEST = "manifest.json"  # its name, at the top of a packed directory
VERIFY_SCHEMA = "agentx.dataset-verify/1"


def _count(d: Mapping[str, Any], key: str) -> int:
    return need(integer(d, key), key)


def _text(d: Mapping[str, Any], key: str) -> str:
    return need(text(d, key), key)


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One packed file: its path in the directory (``/``-separated), size and sha256 (hex)."""

    path: str
    size_bytes: int
    sha256: str

    def to_json(self) -> Json:
        return {"path": self.path, "size_bytes": self.size_bytes, "sha256": self.sha256}

    @classmethod
    def from_json(cls, v: object) -> FileEntry:
        d = obj(v, "files")
        return cls(_text(d, "path"), _count(d, "size_bytes"), _text(d, "sha256"))


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """A config of the dataset (``datasets.load_dataset(DIR, name)``): which rows, in which
    files (Parquet), and how many. ``requests`` counts the model calls, ``rows`` every row;
    ``export``: the same rows as the file other tools read (the Weka and Mooncake configs)."""

    name: str
    description: str
    files: tuple[str, ...]
    rows: int
    sessions: int | None  # None: the format has no sessions (Mooncake lines)
    requests: int
    format: str  # agentx (the trace format), weka or mooncake
    export: str | None = None  # the file the rows were exported as (traces.jsonl, ...)

    def to_json(self) -> Json:
        return {
            "name": self.name,
            "description": self.description,
            "format": self.format,
            "export": self.export,
            "files": list(self.files),
            "rows": self.rows,
            "sessions": self.sessions,
            "requests": self.requests,
        }

    @classmethod
    def from_json(cls, v: object) -> ConfigEntry:
        d = obj(v, "configs")
        return cls(
            name=_text(d, "name"),
            description=_text(d, "description"),
            files=texts(d, "files"),
            rows=_count(d, "rows"),
            sessions=integer(d, "sessions"),
            requests=_count(d, "requests"),
            format=_text(d, "format"),
            export=text(d, "export"),
        )


@dataclass(frozen=True, slots=True)
class TurnHits:
    """The unbounded cache at one turn depth (the k-th request of its thread, from 0): what
    those requests asked for and what it served them."""

    turn: int
    requests: int
    prompt_tokens: int
    hit_tokens: int

    @property
    def hit_rate(self) -> float | None:
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else None

    def to_json(self) -> Json:
        return {
            "turn": self.turn,
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "hit_tokens": self.hit_tokens,
        }

    @classmethod
    def from_json(cls, v: object) -> TurnHits:
        d = obj(v, "hit_rate_by_turn")
        keys = ("turn", "requests", "prompt_tokens", "hit_tokens")
        return cls(*(_count(d, k) for k in keys))


@dataclass(frozen=True, slots=True)
class Figures:
    """What the card shows beyond ``agentx.stats/1``: turns per thread, requests per session,
    a session's duration (first request's start to last response's end, seconds) and its peak
    context (largest prompt + output of its requests, tokens), the hit rate by turn depth."""

    turns_per_thread: P
    requests_per_session: P
    session_duration_s: P
    peak_context_tokens: P
    hit_rate_by_turn: tuple[TurnHits, ...]

    def to_json(self) -> Json:
        return {
            "turns_per_thread": self.turns_per_thread.to_json(),
            "requests_per_session": self.requests_per_session.to_json(),
            "session_duration_s": self.session_duration_s.to_json(),
            "peak_context_tokens": self.peak_context_tokens.to_json(),
            "hit_rate_by_turn": [t.to_json() for t in self.hit_rate_by_turn],
        }

    @classmethod
    def from_json(cls, v: object) -> Figures:
        d = obj(v, "figures")
        return cls(
            turns_per_thread=p_of(d, "turns_per_thread"),
            requests_per_session=p_of(d, "requests_per_session"),
            session_duration_s=p_of(d, "session_duration_s"),
            peak_context_tokens=p_of(d, "peak_context_tokens"),
            hit_rate_by_turn=tuple(TurnHits.from_json(t) for t in items(d, "hit_rate_by_turn")),
        )


@dataclass(frozen=True, slots=True)
class Captured:
    """What the rows came from: requests per agent (``unknown`` when not recorded) and per
    model, and the UTC dates of the first and last request (``None`` when the trace's clock is
    not a wall clock, as a Weka import's offsets are not)."""

    agents: Mapping[str, int]
    models: Mapping[str, int]
    first_date: str | None
    last_date: str | None

    def to_json(self) -> Json:
        return {
            "agents": dict(self.agents),
            "models": dict(self.models),
            "first_date": self.first_date,
            "last_date": self.last_date,
        }

    @classmethod
    def from_json(cls, v: object) -> Captured:
        d = obj(v, "captured")
        return cls(
            counts(d, "agents"), counts(d, "models"), text(d, "first_date"), text(d, "last_date")
        )


@dataclass(frozen=True, slots=True)
class SecretScan:
    """The secret scan of the packed files with scrub's patterns: the families looked for, the
    files and text values scanned, and what was found (``findings`` lists the first few as
    ``file: where: family``, never the secret)."""

    families: tuple[str, ...]
    files: int
    values: int
    found: int
    findings: tuple[str, ...]

    def to_json(self) -> Json:
        return {
            "families": list(self.families),
            "files": self.files,
            "values": self.values,
            "found": self.found,
            "findings": list(self.findings),
        }

    @classmethod
    def from_json(cls, v: object) -> SecretScan:
        d = obj(v, "secret_scan")
        return cls(
            texts(d, "families"),
            _count(d, "files"),
            _count(d, "values"),
            _count(d, "found"),
            texts(d, "findings"),
        )


@dataclass(frozen=True, slots=True)
class Privacy:
    """What was done to the rows before they were packed: ``text`` is ``none`` (hash-only rows),
    ``synthetic`` (anonymized, or synthesised from hash ids) or ``original`` (packed only with
    ``--with-text``); the stages the input's metadata names (``scrubbed_by``,
    ``anonymized_by``); the gate's checks; the secret scan of the packed files."""

    text: str
    scrubbed_by: str | None
    anonymized_by: str | None
    gate: tuple[str, ...]
    secret_scan: SecretScan

    def to_json(self) -> Json:
        return {
            "text": self.text,
            "scrubbed_by": self.scrubbed_by,
            "anonymized_by": self.anonymized_by,
            "gate": list(self.gate),
            "secret_scan": self.secret_scan.to_json(),
        }

    @classmethod
    def from_json(cls, v: object) -> Privacy:
        d = obj(v, "privacy")
        return cls(
            text=_text(d, "text"),
            scrubbed_by=text(d, "scrubbed_by"),
            anonymized_by=text(d, "anonymized_by"),
            gate=texts(d, "gate"),
            secret_scan=SecretScan.from_json(sub(d, "secret_scan")),
        )


@dataclass(frozen=True, slots=True)
class CardFields:
    """What the card says that the packer chooses (``--name``, ``--license``,
    ``--description``, ``--repo``: the repository its commands name); the rest is generated."""

    pretty_name: str
    license: str
    description: str | None
    repo: str | None
    tags: tuple[str, ...]
    task_categories: tuple[str, ...]

    def to_json(self) -> Json:
        return {
            "pretty_name": self.pretty_name,
            "license": self.license,
            "description": self.description,
            "repo": self.repo,
            "tags": list(self.tags),
            "task_categories": list(self.task_categories),
        }

    @classmethod
    def from_json(cls, v: object) -> CardFields:
        d = obj(v, "card")
        return cls(
            pretty_name=_text(d, "pretty_name"),
            license=_text(d, "license"),
            description=text(d, "description"),
            repo=text(d, "repo"),
            tags=texts(d, "tags"),
            task_categories=texts(d, "task_categories"),
        )


@dataclass(frozen=True, slots=True)
class Manifest:
    """``manifest.json``: every key a reader or a verifier needs, the files last."""

    agentx_version: str
    trace_format: str
    created_at: str
    card: CardFields
    default_config: str
    split: str
    configs: tuple[ConfigEntry, ...]
    stats: Stats  # the default config's agentx.stats/1 object (no trace path)
    figures: Figures
    captured: Captured
    privacy: Privacy
    plots: tuple[str, ...]
    files: tuple[FileEntry, ...]  # every file but the manifest itself

    def config(self, name: str) -> ConfigEntry | None:
        return next((c for c in self.configs if c.name == name), None)

    def to_json(self) -> Json:
        s = self.stats
        return {
            "schema": SCHEMA,
            "agentx_version": self.agentx_version,
            "trace_format": self.trace_format,
            "created_at": self.created_at,
            "card": self.card.to_json(),
            "default_config": self.default_config,
            "split": self.split,
            "sessions": s.sessions,
            "requests": s.requests,
            "theoretical_hit_rate": s.theoretical_hit_rate,
            "block_size": s.block_size,
            "configs": [c.to_json() for c in self.configs],
            "stats": s.to_json(),
            "figures": self.figures.to_json(),
            "captured": self.captured.to_json(),
            "privacy": self.privacy.to_json(),
            "plots": list(self.plots),
            "files": [f.to_json() for f in self.files],
        }

    @classmethod
    def from_json(cls, v: object) -> Manifest:
        d = schema_obj(v, SCHEMA)
        stats = Stats.from_json(sub(d, "stats"))
        for key, value in (
            ("sessions", stats.sessions),
            ("requests", stats.requests),
            ("block_size", stats.block_size),
        ):
            if integer(d, key) != value:
                raise bad(key, f"the stats' {value}", d.get(key))
        return cls(
            agentx_version=_text(d, "agentx_version"),
            trace_format=_text(d, "trace_format"),
            created_at=_text(d, "created_at"),
            card=CardFields.from_json(sub(d, "card")),
            default_config=_text(d, "default_config"),
            split=_text(d, "split"),
            configs=tuple(ConfigEntry.from_json(c) for c in items(d, "configs")),
            stats=stats,
            figures=Figures.from_json(sub(d, "figures")),
            captured=Captured.from_json(sub(d, "captured")),
            privacy=Privacy.from_json(sub(d, "privacy")),
            plots=texts(d, "plots"),
            files=tuple(FileEntry.from_json(f) for f in items(d, "files")),
        )


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """``agentx dataset verify --json``: what was checked and every difference found (none:
    the dataset is what its manifest and card say). ``revision``: the hub commit verified."""

    dataset: str
    revision: str | None
    files_checked: int
    rows_checked: int
    differences: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.differences

    def to_json(self) -> Json:
        return {
            "schema": VERIFY_SCHEMA,
            "dataset": self.dataset,
            "revision": self.revision,
            "ok": self.ok,
            "files_checked": self.files_checked,
            "rows_checked": self.rows_checked,
            "differences": list(self.differences),
        }

    @classmethod
    def from_json(cls, v: object) -> VerifyReport:
        d = schema_obj(v, VERIFY_SCHEMA)
        report = cls(
            dataset=_text(d, "dataset"),
            revision=text(d, "revision"),
            files_checked=_count(d, "files_checked"),
            rows_checked=_count(d, "rows_checked"),
            differences=texts(d, "differences"),
        )
        if flag(d, "ok") not in (None, report.ok):
            raise bad("ok", "agree with differences", d.get("ok"))
        return report
