"""The prompts of replay's sends as the engines see them: dense block ids, memoised compactly.

A prompt's ids are mostly a few runs of consecutive ids: :class:`Renumberer` gives the blocks a
request appends the next ids in order, and a prefix shared with earlier requests was numbered
the same way when it was first seen. So a memoised prompt keeps its runs
(:func:`agentx.simulate.runs.id_runs`) and the ids are rebuilt when it is sent: a
100K-token prompt is a few dozen bytes kept between passes, not 8 bytes a block (a 6e9-token
corpus's memo held ~30M ids in its threads' buffers; its runs are ~0.2M).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

import orjson

from agentx.core.models import Exchange, ExchangeMeta
from agentx.prefixcache.hashing import Hasher, IdChainer, salted
from agentx.prefixcache.kvcache.cache import DistinctIds, Hashes
from agentx.prefixcache.theory import hash_only_blocks, hash_only_shape
from agentx.simulate.dense import Renumberer
from agentx.simulate.rowchains import RowChainer
from agentx.simulate.runs import BlockIds, Runs, id_runs, run_facts, run_ids
from agentx.simulate.schedule import Send
from agentx.store.rowids import RowIds
from agentx.workload.build import BuildConfig, SynthCache, ThreadBuilder, marker_salt, max_tokens_of
from agentx.workload.plan import SessionPlan
from agentx.workload.source import RowIdsSource, SessionLoader, TraceSource

LOADERS_KEPT = 64  # sessions whose loader is kept (a session's sends come close together)
LOADERS_PER_LANE = 2  # with lanes known: a lane's session and the next
# threads whose chaining and numbering state is kept (LRU): a forgotten thread's next turn is
# chained and numbered whole, with the same ids. Each holds its last prompt's ids and hashes
# (~0.1 MB for a 100K-token prompt, with the row's ids it compares the next turn with), so with
# lanes known only the threads of the sessions they are in are kept
THREADS_KEPT = 512
MIN_THREADS_KEPT = 64


def threads_kept(lanes: int | None, most_threads: int) -> int:
    """Threads to keep state for: every thread of a lane's session and of the next one, when
    the lanes are known (``most_threads``: the most threads a session has)."""
    if lanes is None:
        return THREADS_KEPT
    return min(THREADS_KEPT, max(MIN_THREADS_KEPT, LOADERS_PER_LANE * lanes * most_threads))


SALT_NONCE = "000000000-"  # replay's is random per run; the marker is 12 hex digits either way


@dataclass(frozen=True, slots=True, eq=False)
class Prompt:
    runs: Runs  # dense ids (1, 2, ...) of the chained block hashes, as runs (:func:`id_runs`)
    prompt_tokens: int
    output_tokens: int
    # found once from the runs, so no pass scans a request's ids for them
    top: int = field(init=False)  # the largest id (0 for none)
    distinct: bool = field(init=False)  # no id occurs twice (chained hashes never repeat)

    def __post_init__(self) -> None:
        top, distinct = run_facts(self.runs)
        object.__setattr__(self, "top", top)
        object.__setattr__(self, "distinct", distinct)

    @property
    def blocks(self) -> BlockIds:
        """The prompt's dense block ids, one per full block (a new array each time)."""
        return run_ids(self.runs)

    def request(self) -> tuple[BlockIds, Hashes]:
        """The ids (a new array), and what an engine is given: them, as :class:`DistinctIds`
        when they are (its cache then neither tests them for repeats nor scans them for their
        largest)."""
        ids = run_ids(self.runs)
        return ids, DistinctIds(ids, self.top) if self.distinct else ids


class PromptSource:
    """The prompt of each send, built as replay builds it, hashed with one tokenizer, its
    blocks renumbered densely (:class:`agentx.simulate.dense.Renumberer`: ids shared along
    a thread). Memoised by (tree instance, session, thread, turn, answer length), as runs, so
    every pass after the first (one per capacity) reads, builds and hashes nothing: the
    engines name blocks by these ids (``KVCache(dense_ids=True)``) and never look a hash up.
    Rows are read from ``trace`` as replay's lanes read them (a few sessions' loaders kept).

    With ``hash_block_size``, a hash-only row (Weka, Mooncake) is not built as text: its
    prompt is its own block ids at that block size (a multiple of the row's), salted per tree
    instance as replay's marker salts the text, and its token count is the trace's. Replay's
    synthetic text gives equal ids equal text, so this is the prefix structure a server sees,
    without building and tokenising ~100K-token bodies."""

    def __init__(
        self,
        build: BuildConfig,
        hasher: Hasher,
        trace: TraceSource,
        *,
        salt: bool = True,
        hash_block_size: int | None = None,
        loaders_kept: int = LOADERS_KEPT,
        threads: int = THREADS_KEPT,
    ) -> None:
        self.build = build
        self.hasher = hasher
        self.trace = trace
        self.salt = salt
        self.hash_block_size = hash_block_size
        self.hashed_prompts = 0  # prompts taken from block ids
        self.synth = SynthCache()
        self.numbers = Renumberer(threads, first_id=1)  # id 0 is the cache's "no block"
        self._chainer = IdChainer(threads)
        self._rows = RowChainer(threads)
        self._id_source = trace if isinstance(trace, RowIdsSource) else None
        self._ids: OrderedDict[int, Mapping[int, RowIds]] = OrderedDict()
        self._builders: dict[tuple[int, int], ThreadBuilder] = {}
        self._memo: dict[tuple[int, int, int, int, int | None], Prompt] = {}
        self._loaders: OrderedDict[int, SessionLoader] = OrderedDict()
        # a loader holds its session's rows decoded (their block ids as tuples): the lanes'
        # sessions are enough, since each row is read once (memoised), not once per pass
        self._loaders_kept = loaders_kept

    @property
    def distinct_blocks(self) -> int:
        """Distinct blocks named so far: the largest id."""
        return self.numbers.index.size

    def _exchange(self, session: SessionPlan, meta: ExchangeMeta) -> Exchange:
        loader = self._loaders.get(session.index)
        if loader is None:
            loader = self._loaders[session.index] = self.trace.load_session(session.source)
            while len(self._loaders) > self._loaders_kept:
                self._loaders.popitem(last=False)
        else:
            self._loaders.move_to_end(session.index)
        return loader.exchange(meta)

    def _row_ids(self, session: SessionPlan) -> Mapping[int, RowIds] | None:
        """The stored ids of a session's rows, when the trace gives them (else ``None``)."""
        if self._id_source is None:
            return None
        found = self._ids.get(session.index)
        if found is None:
            found = self._ids[session.index] = self._id_source.session_ids(session.source)
            while len(self._ids) > self._loaders_kept:
                self._ids.popitem(last=False)
        else:
            self._ids.move_to_end(session.index)
        return found

    def _stored(
        self,
        send: Send,
        meta: ExchangeMeta,
        rows: Mapping[int, RowIds],
        thread: str,
        output_tokens: int,
    ) -> Prompt:
        """A hash-only row's prompt from its stored ids (:func:`hash_only_blocks`' rule, on
        the row's counts), chained per (session copy, thread) from its base's chain."""
        assert self.hash_block_size is not None
        row = rows[meta.locator]
        chained = self._rows.chain((meta.session_id, meta.thread_id), meta.locator, rows)
        shape = hash_only_shape(row.size, row.block_size, meta.prompt_tokens, self.hash_block_size)
        chained = chained[: shape.full_ids]
        if shape.group > 1:
            chained = chained[shape.group - 1 :: shape.group]
        hashes = salted(chained, send.instance) if self.salt else chained
        self.hashed_prompts += 1
        ids = id_runs(self.numbers.ids(hashes, thread))
        return Prompt(ids, shape.prompt_tokens, output_tokens)

    def prompt(self, send: Send) -> Prompt:
        key = (send.instance, send.session.index, send.thread, send.turn, send.max_tokens)
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = self._make(send)
        return got

    def _make(self, send: Send) -> Prompt:
        th = send.session.threads[send.thread]
        meta = th.turns[send.turn].meta
        thread = f"{send.instance}\x1f{send.session.index}\x1f{send.thread}"
        if self.hash_block_size is not None and meta.hash_only:
            rows = self._row_ids(send.session)
            out = send.max_tokens
            if out is None and meta.completion_tokens is not None and meta.completion_tokens > 0:
                out = meta.completion_tokens  # as max_tokens_of reads the row
            if rows is not None and out is not None:
                return self._stored(send, meta, rows, thread, out)
            ex = self._exchange(send.session, meta)
            # chained per (session copy, thread): a turn chains only the ids it appended
            chained, n, _ = hash_only_blocks(ex, self.hash_block_size, self._chainer)
            hashes = salted(chained, send.instance) if self.salt else chained
            self.hashed_prompts += 1
            out = max_tokens_of(ex) if send.max_tokens is None else send.max_tokens
            return Prompt(id_runs(self.numbers.ids(hashes, thread)), n, out)
        builder = self._builders.get((send.instance, send.thread))
        if builder is None:
            builder = self._builders[(send.instance, send.thread)] = ThreadBuilder(
                self.build, th.turns[0].meta.api, self.synth
            )
        salt = marker_salt(SALT_NONCE, send.instance) if self.salt else None
        ex = self._exchange(send.session, meta)
        built = builder.build(ex, salt, max_tokens=send.max_tokens)
        hashed, n = self.hasher.hash_request(
            built.api, orjson.loads(built.body), f"{send.session_id}\x1f{th.thread_id}"
        )
        return Prompt(id_runs(self.numbers.ids(hashed, thread)), n, built.max_tokens)
