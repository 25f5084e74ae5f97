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
import ctypes
import ctypes.util
import heapq
import itertools
import os
import pickle
import signal
import sys
import time
import zlib
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import orjson

from agentx.core.procs import die_with_parent, name_process
from agentx.core.progress import Progress
from agentx.prefixcache.hashing import HashArray, Hasher, make_hasher
from agentx.prefixcache.theory import HitRateMeter, TheoryRow
from agentx.prefixcache.tokenizer import Cl100kTokenizer, Tokenizer
from agentx.prefixcache.tokens import drop_vocabulary_copy, set_encode_memo_tokens
from agentx.replay.spawned import Counter, Link, Spawned


@dataclass(frozen=True, slots=True)
class SentBody:
    request_id: str
    api: str
    sent_ns: int
    thread: str  # session copy + thread: consecutive requests of one thread share a prefix
    body: bytes
    replica: int | None = None  # the endpoint it was routed to (None: one endpoint)
    last: bool = False  # the thread's last request: nothing later builds on its state


LAST_BODIES_BYTES = 128 << 20  # previous bodies a writer keeps to spool deltas against


class LastBodies:
    """The last body of each thread, least recently used first out past ``max_bytes``: the log's
    writer's (a thread evicted is spooled whole next time; the reader needs no bound)."""

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

    def drop(self, thread: str) -> None:
        """Forget the thread (its last request was sent): the bodies held are the live threads'."""
        prev = self._bodies.pop(thread, None)
        if prev is not None:
            self._bytes -= len(prev)


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
    number of leading bytes it shares with its thread's previous body plus the rest. A thread's
    last request is marked: the writer and every reader then forget the thread."""

    def __init__(self, path: Path, max_bytes: int = LAST_BODIES_BYTES) -> None:
        self.path = path
        self._file: BinaryIO | None = open(path, "wb")  # noqa: SIM115 - lives for the run
        self._last = LastBodies(max_bytes)
        self.count = 0
        self.spooled_bytes = 0
        self.error: str | None = None

    def add(
        self,
        request_id: str,
        api: str,
        sent_ns: int,
        thread: str,
        body: bytes,
        replica: int | None = None,
        last: bool = False,
    ) -> None:
        if self._file is None:
            return
        prev = self._last.swap(thread, body)
        if last:
            self._last.drop(thread)
        keep = common_prefix(prev, body) if prev is not None else 0
        rest = body[keep:]
        try:
            header: list[object] = [request_id, api, sent_ns, thread, keep, len(rest)]
            if replica is not None or last:  # a routed run's: one more field; a last: two
                header.append(replica)
            if last:
                header.append(1)
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


FOLLOW_S = 0.05  # how long a reader following a log being written waits for more


def sent_log_path(tmp: Path, worker: int) -> Path:
    """Where process ``worker`` of a run spools the bodies it sent."""
    return tmp / f"sent-{worker}.log"


class _Bodies:
    """Where each live thread's last body lies in a log being read: the file ranges it is made
    of (the part it shared with its thread's previous body, then what it added), so the reader
    holds a few offsets per thread, not the bodies (a 64-lane run's are tens of MB), and reads
    the shared part back from the file (the page cache) when the next body needs it."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._ranges: dict[str, list[tuple[int, int]]] = {}

    def body(self, thread: str, keep: int, at: int, rest: bytes) -> bytes | None:
        """The body of a record of ``thread`` that shares ``keep`` bytes with the thread's
        previous one and adds ``rest``, written at offset ``at``; ``None`` if the thread's
        previous body is not known (cannot happen with the writer's own log)."""
        prev = self._ranges.get(thread, []) if keep else []
        ranges: list[tuple[int, int]] = []
        need = keep
        for off, size in prev:
            if need <= 0:
                break
            take = min(size, need)
            ranges.append((off, take))
            need -= take
        if need > 0:
            return None
        parts = [os.pread(self._fd, size, off) for off, size in ranges]
        if any(len(part) != size for part, (_, size) in zip(parts, ranges, strict=True)):
            return None
        if rest:
            ranges.append((at, len(rest)))
        self._ranges[thread] = ranges
        return b"".join((*parts, rest))

    def drop(self, thread: str) -> None:
        self._ranges.pop(thread, None)


def read_log(path: Path, follow: Callable[[], bool] | None = None) -> Iterator[SentBody]:
    """The bodies of one log, in send order. With ``follow`` the log is still being written
    until ``follow()`` says it is complete: the reader waits for the file and for each record's
    end instead of stopping at the end of what was written so far."""
    if follow is not None:
        while not path.exists():
            if follow() and not path.exists():
                return
            time.sleep(FOLLOW_S)
    ended = False
    with open(path, "rb") as f:
        bodies = _Bodies(f.fileno())
        while True:
            pos = f.tell()
            header = f.readline()
            rest = b""
            at = 0
            whole = header.endswith(b"\n")
            if whole:
                try:
                    request_id, api, sent_ns, thread, keep, size, *more = orjson.loads(header)
                    replica = int(more[0]) if more and more[0] is not None else None
                    last = len(more) > 1 and bool(more[1])
                except (orjson.JSONDecodeError, ValueError, TypeError):
                    return  # a log cut short (disk full): what came before still counts
                at = f.tell()
                rest = f.read(size)
                whole = len(rest) == size
            if not whole:
                if follow is None or ended:
                    return
                ended = follow()  # all was written before it said so: one more look, then stop
                f.seek(pos)
                if not ended:
                    time.sleep(FOLLOW_S)
                continue
            body = bodies.body(thread, keep, at, rest)
            if body is None:
                return  # cannot happen with the writer's own log
            if last:
                bodies.drop(thread)
            yield SentBody(request_id, api, sent_ns, thread, body, replica, last)


def merged(paths: Iterable[Path], follow: Callable[[], bool] | None = None) -> Iterator[SentBody]:
    """Several processes' logs as one stream in send order (perf_counter is system-wide); with
    ``follow``, logs still being written (:func:`read_log`)."""
    streams = [read_log(p, follow=follow) for p in paths if follow is not None or p.exists()]
    return heapq.merge(*streams, key=lambda s: s.sent_ns)


PASS_PROCESS_NAME = "agentx-theory"  # the child's name in /proc/PID/comm
# The child's encoding memo (tokens held). Each thread's hasher keeps its own pieces' tokens, so
# the memo only serves text shared across threads, a subagent's inherited context soon after its
# parent's turn: a replay's trees are salted apart. The default 8M ids (~120 MB with their texts)
# saved no CPU over a 64-lane replay of the weka corpus; 256K (~4 MB) keep the recent pieces.
PASS_MEMO_TOKENS = 1 << 18
CLOSE_S = 5.0  # the child ends within this once terminated (or is killed)
STALL_S = 120.0  # the child hashed nothing for this long at the end: stopped or stuck; hash here


class TheoryPass:
    """The theoretical pass beside the lanes, so the run's end does not wait for it: a child
    process follows the processes' sent logs as they are written and hashes each body into the
    unbounded cache (:func:`theoretical`); when the lanes are done, :meth:`result` waits for the
    requests it has not reached yet. The same rows as :func:`theoretical` over the closed logs.

    The child is a fresh interpreter (:class:`agentx.replay.spawned.Spawned`: no
    ``multiprocessing`` resource tracker beside it) and a batch job to the scheduler
    (``SCHED_BATCH``): a lane woken by its socket preempts it, and it keeps a full share of the
    CPU for the end. Not niced: a niced child would starve on a busy machine just when the run
    waits for it."""

    def __init__(self, logs: list[Path], out: Path, block_size: int, max_threads: int) -> None:
        self.out = out
        args = (logs, out, block_size, max_threads, Link.DONE, Link.COUNTER, os.getpid())
        # after the fingerprint's child, if it still runs: the pass follows the logs from
        # their start whenever it starts, and the two are not at their peaks together
        self._proc = Spawned(__name__, "_pass_child", args, deferred=True)

    def result(
        self, progress: Progress | None = None, stall_s: float = STALL_S
    ) -> dict[str, TheoryRow] | None:
        """Once every log is closed: the rows; ``None`` when the child failed, or hashed nothing
        for ``stall_s`` (stopped, stuck: the wait is bounded), and was ended (the caller then
        runs :func:`theoretical` itself)."""
        self._proc.set_done()
        prog = progress or Progress()
        prog.phase("theoretical hit rate", unit="requests")
        seen, since = self._proc.count, time.monotonic()
        while self._proc.is_alive():
            self._proc.join(0.1)
            count = self._proc.count
            prog.advance(count - prog.done)
            if count != seen:
                seen, since = count, time.monotonic()
            elif time.monotonic() - since > stall_s:
                self.close()
                return None
        if self._proc.exitcode != 0:
            return None
        try:
            rows = load_rows(self.out)
        except (OSError, pickle.UnpicklingError):
            return None
        finally:
            remove_quietly(self.out)
        return rows

    def close(self) -> None:
        """Stop the child if it still runs (the run failed or was stopped). Every wait bounded:
        a stopped child does not answer SIGTERM."""
        self._proc.end(CLOSE_S, terminate=True)
        remove_quietly(self.out)


class _SharedCount(Progress):
    def __init__(self, count: Counter) -> None:
        super().__init__()
        self._count = count

    def advance(self, n: float = 1) -> None:
        self._count.value += int(n)


def _pass_child(
    logs: list[Path],
    out: Path,
    block_size: int,
    max_threads: int,
    complete: Callable[[], bool],
    count: Counter,
    parent_pid: int,
) -> None:
    # a SIGKILLed parent runs no clean-up: the pass must not follow its logs forever
    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C: the parent ends it
    name_process(PASS_PROCESS_NAME)  # apart from the workers
    with contextlib.suppress(OSError, AttributeError):  # Linux: a CPU-bound batch job
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    set_encode_memo_tokens(PASS_MEMO_TOKENS)
    map_big_blocks()
    drop_vocabulary_copy()
    sent = merged(logs, follow=complete)
    rows = theory_rows(sent, block_size, max_threads=max_threads, progress=_SharedCount(count))
    part = out.with_name(out.name + ".part")
    write_rows(part, rows)
    os.replace(part, out)


MMAP_THRESHOLD_BYTES = 64 << 10
M_MMAP_THRESHOLD = -3  # <malloc.h>


def map_big_blocks(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Have glibc's malloc map every block of ``threshold`` bytes or more on its own, so it goes
    back to the system when freed. By default the threshold rises to the largest block freed
    (up to 32 MB), after which the pass's bodies and parsed prompts, hundreds of KB each, come
    from the heaps, whose freed holes are kept: 35 MB more at 500 requests of a 64-lane replay.
    Whether it took (glibc only)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, threshold))
    except (OSError, AttributeError):
        return False


ROWS_BATCH = 1024  # rows the child writes at a time


def write_rows(path: Path, rows: Iterable[TheoryRow], batch: int = ROWS_BATCH) -> None:
    """Write ``rows`` to ``path`` ``batch`` at a time, as they come: none is held to the end."""
    with open(path, "wb") as f:
        for some in itertools.batched(rows, batch):
            pickle.dump(some, f, protocol=pickle.HIGHEST_PROTOCOL)


def load_rows(path: Path) -> dict[str, TheoryRow]:
    """The rows the child wrote to ``path``, by request id, in send order."""
    rows: dict[str, TheoryRow] = {}
    with open(path, "rb") as f:
        while True:
            try:
                batch: tuple[TheoryRow, ...] = pickle.load(f)
            except EOFError:
                return rows
            rows.update((r.request_id, r) for r in batch)


def theoretical(
    sent: Iterable[SentBody],
    block_size: int,
    tokenizer: Tokenizer | None = None,
    max_threads: int = 4096,
    *,
    workers: int | None = None,
    progress: Progress | None = None,
) -> dict[str, TheoryRow]:
    """What each request sent did to an unbounded prefix cache (:func:`theory_rows`), by request
    id, in send order (the dict keeps it)."""
    rows = theory_rows(sent, block_size, tokenizer, max_threads, workers=workers, progress=progress)
    return {r.request_id: r for r in rows}


def theory_rows(
    sent: Iterable[SentBody],
    block_size: int,
    tokenizer: Tokenizer | None = None,
    max_threads: int = 4096,
    *,
    workers: int | None = None,
    progress: Progress | None = None,
) -> Iterator[TheoryRow]:
    """What each request sent did to an unbounded prefix cache (its prompt tokens, hit tokens and
    new blocks: :meth:`agentx.prefixcache.theory.HitRateMeter.row`), in send order, counted by
    ``tokenizer`` (default: agentx's cl100k rendering); a body that is not JSON has no row.

    With the default tokenizer bodies are hashed incrementally per thread
    (:class:`agentx.prefixcache.hashing.RequestHasher`), so a session of n turns costs O(its unique
    content) rather than O(n^2). Each body is parsed afresh, so the hashers are compact: a
    thread's state is digests of its last prompt's segments and the prefix sums where hashing
    can resume, not the prompt parsed (a few KB and its block hashes, ~0.1 MB for a 100K-token
    prompt); it goes at its request marked ``last``; ``max_threads``
    bounds the threads kept besides: the threads in flight together. One forgotten and seen again
    is hashed from scratch, with the same result.

    Threads are independent until their blocks meet in the cache, so they are hashed on
    ``workers`` threads (default: one per usable core, at most :data:`MAX_HASH_WORKERS`), each
    thread always on the same one, in its own order; tiktoken encodes with the GIL released.
    The cache takes the results in send order, at most a few per worker ahead: the same figures
    as one thread, whatever ``workers``.
    """
    prog = progress or Progress()
    prog.phase("theoretical hit rate", unit="requests")
    meter = HitRateMeter(block_size, max_threads=max_threads, tokenizer=tokenizer)
    n = workers if workers is not None else hash_workers(tokenizer)
    if n <= 1:
        hasher = make_hasher(tokenizer, block_size, max_threads=max_threads, compact=True)
        for s in sent:
            hashed = _hash(hasher, s)
            prog.advance()
            if hashed is not None:
                yield meter.row(s.request_id, s.sent_ns, *hashed, s.replica)
        return
    hashers = [
        make_hasher(tokenizer, block_size, max_threads=max_threads, compact=True) for _ in range(n)
    ]
    pools = [ThreadPoolExecutor(1, thread_name_prefix="agentx-theory") for _ in range(n)]
    pending: deque[tuple[SentBody, Future[tuple[HashArray, int] | None]]] = deque()

    def take() -> TheoryRow | None:
        s, future = pending.popleft()
        hashed = future.result()
        prog.advance()
        return None if hashed is None else meter.row(s.request_id, s.sent_ns, *hashed, s.replica)

    try:
        for s in sent:
            k = zlib.crc32(s.thread.encode()) % n  # a thread's requests stay in order on one
            pending.append((s, pools[k].submit(_hash, hashers[k], s)))
            if len(pending) >= HASH_AHEAD * n and (row := take()) is not None:
                yield row
        while pending:
            if (row := take()) is not None:
                yield row
    finally:
        for pool in pools:
            pool.shutdown(cancel_futures=True)


def theory_threads(lanes: int) -> int:
    """The threads whose hashing state the pass keeps: those in flight together, a few per lane
    (a session's subagents run beside it)."""
    return 2 * lanes + 16


MAX_HASH_WORKERS = 8
HASH_AHEAD = 2  # bodies in flight per hashing thread: bounds the bodies held


def hash_workers(tokenizer: Tokenizer | None) -> int:
    """Threads hashing sent bodies: one per usable core for agentx's cl100k rendering (tiktoken
    releases the GIL), one for other tokenizers (a server's, a chat template's)."""
    if tokenizer is not None and not isinstance(tokenizer, Cl100kTokenizer):
        return 1
    return max(1, min(len(os.sched_getaffinity(0)), MAX_HASH_WORKERS))


def _hash(hasher: Hasher, s: SentBody) -> tuple[HashArray, int] | None:
    try:
        body = orjson.loads(s.body)
    except orjson.JSONDecodeError:
        body = None
    try:
        return None if body is None else hasher.hash_request(s.api, body, s.thread)
    finally:
        if s.last:
            hasher.forget(s.thread)


def remove_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
