"""The theoretical hit rate of exactly the requests sent, in the order they were sent.

During the run the hot path only appends each body to a spool file (one buffered write), as a
delta over the previous body of its thread (the bytes they share at the start are not written
again: a turn that re-sends a 100K-token conversation spools what it added); tokenisation happens
after the run, so it never delays a dispatch. The bodies are then
rendered with :func:`agentx.prefixcache.tokens.request_tokens` and looked up in an unbounded prefix cache
(:class:`agentx.prefixcache.theory.HitRateMeter`) at the server's block size. Warm-up requests
count in the cache state (they warmed the server's cache too). Each request's *new* blocks (from
its hit on) are kept for ``theory.parquet``, from which ``agentx merge`` replays the cache of
several shards' requests as one (:mod:`agentx.prefixcache.theory`).
"""

from __future__ import annotations

import contextlib
import heapq
import os
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import orjson

from agentx.prefixcache.theory import HitRateMeter, TheoryRow
from agentx.prefixcache.tokenizer import Tokenizer


@dataclass(frozen=True, slots=True)
class SentBody:
    request_id: str
    api: str
    sent_ns: int
    thread: str  # session copy + thread: consecutive requests of one thread share a prefix
    body: bytes


LAST_BODIES_BYTES = 128 << 20  # previous bodies kept per process to spool deltas against


class LastBodies:
    """The last body of each thread, least recently used first out past ``max_bytes``. The log's
    writer and reader keep one each, fed the same sequence, so they always agree on the base."""

    def __init__(self, max_bytes: int = LAST_BODIES_BYTES) -> None:
        self.max_bytes = max_bytes
        self._bodies: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0

    def get(self, thread: str) -> bytes | None:
        return self._bodies.get(thread)

    def swap(self, thread: str, body: bytes) -> bytes | None:
        """The thread's previous body (``None`` if unknown); ``body`` replaces it."""
        prev = self._bodies.pop(thread, None)
        if prev is not None:
            self._bytes -= len(prev)
        self._bodies[thread] = body
        self._bytes += len(body)
        while self._bytes > self.max_bytes and len(self._bodies) > 1:
            _, old = self._bodies.popitem(last=False)
            self._bytes -= len(old)
        return prev


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix of two byte strings (vectorised)."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    x, y = np.frombuffer(a, np.uint8, n), np.frombuffer(b, np.uint8, n)
    diff = np.flatnonzero(x != y)
    return int(diff[0]) if diff.size else n


class SentLog:
    """Append-only spool of the bodies sent by one process, in send order, each stored as the
    number of leading bytes it shares with its thread's previous body plus the rest."""

    def __init__(self, path: Path, max_bytes: int = LAST_BODIES_BYTES) -> None:
        self.path = path
        self._file: BinaryIO | None = open(path, "wb")  # noqa: SIM115 - lives for the run
        self._last = LastBodies(max_bytes)
        self.count = 0
        self.spooled_bytes = 0
        self.error: str | None = None

    def add(self, request_id: str, api: str, sent_ns: int, thread: str, body: bytes) -> None:
        if self._file is None:
            return
        prev = self._last.swap(thread, body)
        keep = common_prefix(prev, body) if prev is not None else 0
        rest = body[keep:]
        try:
            header = [request_id, api, sent_ns, thread, keep, len(rest)]
            self._file.write(orjson.dumps(header) + b"\n")
            self._file.write(rest)
            self.spooled_bytes += len(rest)
        except OSError as exc:  # disk full: the run goes on, without theoretical figures
            self.error = (
                f"cannot spool sent bodies ({exc.strerror or exc}): theoretical hit rate incomplete"
            )
            self.close()
            return
        self.count += 1

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._last = LastBodies(0)  # the bodies are no longer needed


def read_log(path: Path, max_bytes: int = LAST_BODIES_BYTES) -> Iterator[SentBody]:
    last = LastBodies(max_bytes)
    with open(path, "rb") as f:
        while header := f.readline():
            try:
                request_id, api, sent_ns, thread, keep, size = orjson.loads(header)
            except (orjson.JSONDecodeError, ValueError):
                return  # a log cut short (disk full): what came before still counts
            rest = f.read(size)
            if len(rest) < size:
                return
            prev = last.get(thread) if keep else b""
            if prev is None or len(prev) < keep:
                return  # cannot happen with the writer's own log
            body = prev[:keep] + rest
            last.swap(thread, body)
            yield SentBody(request_id, api, sent_ns, thread, body)


def merged(paths: Iterable[Path]) -> Iterator[SentBody]:
    """Several processes' logs as one stream in send order (perf_counter is system-wide)."""
    streams = [read_log(p) for p in paths if p.exists()]
    return heapq.merge(*streams, key=lambda s: s.sent_ns)


def theoretical(
    sent: Iterable[SentBody],
    block_size: int,
    tokenizer: Tokenizer | None = None,
    max_threads: int = 4096,
) -> dict[str, TheoryRow]:
    """What each request sent did to an unbounded prefix cache (its prompt tokens, hit tokens and
    new blocks: :meth:`agentx.prefixcache.theory.HitRateMeter.row`), in send order (the dict
    keeps it), counted by ``tokenizer`` (default: agentx's cl100k rendering).

    With the default tokenizer bodies are hashed incrementally per thread
    (:class:`agentx.prefixcache.hashing.RequestHasher`), so a session of n turns costs O(its unique
    content) rather than O(n^2). ``max_threads`` bounds the threads whose state is kept (~2 MB
    each for 100K-token prompts): the threads in flight together; one forgotten and seen again is
    hashed from scratch, with the same result.
    """
    meter = HitRateMeter(block_size, max_threads=max_threads, tokenizer=tokenizer)
    out: dict[str, TheoryRow] = {}
    for s in sent:
        try:
            body = orjson.loads(s.body)
        except orjson.JSONDecodeError:
            continue
        hashes, n = meter.hash_body(s.api, body, s.thread)
        out[s.request_id] = meter.row(s.request_id, s.sent_ns, hashes, n)
    return out


def remove_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
