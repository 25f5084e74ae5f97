"""Deterministic synthetic text that is token-exact in cl100k_base.

Synthetic text is a run of *words*: tokens whose text is a space followed by lowercase ASCII
letters (`` the``, `` model``). cl100k's pre-tokenizer cuts text before every space-led letter run,
and each word is a single token on its own, so any concatenation of words tokenizes back into
exactly those words: ``n`` words are ``n`` tokens, and a block of words never merges with the block
beside it. Only frequent tokens (low ids) are used, which most other tokenizers also keep whole,
so the replayed load stays close under a server's own tokenizer too.

Two generators:

- :class:`PrefixWords` (anonymize) picks word ``i`` with a keyed hash of the original tokens
  ``0..i``: texts sharing ``k`` leading tokens share ``k`` leading words and nothing else.
- :func:`block_tokens` (hash-only imports) builds the block of a hash id from the id alone:
  an identical id gives an identical block wherever it appears.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from agentx.core.examples import DATA_DIR
from agentx.prefixcache.tokens import DEFAULT_ENCODING, TokenArray, get_encoding

_WORD = re.compile(r" [a-z]{3,12}")
_MAX_WORD_ID = 50_000  # frequent tokens only
# Words a shared dataset should not be full of by chance.
_BLOCKED = frozenset(
    [
        "anal",
        "boobs",
        "bitch",
        "cock",
        "crap",
        "cunt",
        "damn",
        "dick",
        "fag",
        "fuck",
        "fucked",
        "fucking",
        "gay",
        "hell",
        "homosex",
        "homosexual",
        "jew",
        "nazi",
        "penis",
        "piss",
        "porn",
        "porno",
        "pornography",
        "pornos",
        "puta",
        "putas",
        "pussy",
        "rape",
        "raped",
        "sex",
        "sexe",
        "sexo",
        "sext",
        "sexual",
        "sexually",
        "sexuality",
        "sexy",
        "shit",
        "slut",
        "tits",
        "vagina",
        "whore",
    ]
)
_BLOCK_DOMAIN = b"agentx.synth.block/1"
_TAIL_DOMAIN = b"agentx.synth.tail/1"


# The words of an encoding are a table shipped with agentx (``agentx/data/<encoding>.words``,
# one ``id word`` a line, written by ``scripts/synth_words.py``): reading it costs ~1 MB, where
# the tiktoken encoding the scan below needs holds ~45 MB for the whole process's life (a
# replay's hash-only requests need the words, never the encoding). Without the table (another
# encoding) the words are found by that scan.
WORDS_SUFFIX = ".words"


def encoding_words(encoding: str = DEFAULT_ENCODING) -> list[tuple[int, str]]:
    """The word tokens of ``encoding`` (id, text), by id: found by scanning its vocabulary."""
    enc = get_encoding(encoding)
    out: list[tuple[int, str]] = []
    for i in range(min(_MAX_WORD_ID, enc.n_vocab)):
        try:
            raw = enc.decode_single_token_bytes(i)
        except KeyError:
            continue
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            continue
        if _WORD.fullmatch(text) and text[1:] not in _BLOCKED and enc.encode(text) == [i]:
            out.append((i, text))
    return out


def words_path(encoding: str = DEFAULT_ENCODING) -> Path:
    return DATA_DIR / f"{encoding}{WORDS_SUFFIX}"


def format_words(words: Iterable[tuple[int, str]]) -> str:
    """The table's text: ``id word`` a line, the word without its leading space."""
    return "".join(f"{i} {text[1:]}\n" for i, text in words)


def parse_words(text: str) -> list[tuple[int, str]]:
    out = []
    for line in text.splitlines():
        i, word = line.split(" ")
        out.append((int(i), " " + word))
    return out


def word_table(encoding: str = DEFAULT_ENCODING) -> list[tuple[int, str]]:
    """The word tokens of ``encoding``: the shipped table when there is one, else the scan."""
    path = words_path(encoding)
    if path.exists():
        return parse_words(path.read_text(encoding="ascii"))
    return encoding_words(encoding)


class Vocabulary:
    """The word tokens of an encoding, by id, with their text."""

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        table = word_table(encoding)
        self.encoding = encoding
        self.ids: npt.NDArray[np.int64] = np.asarray([i for i, _ in table], dtype=np.int64)
        self.words: tuple[str, ...] = tuple(text for _, text in table)
        self.size = len(table)
        # the words as rows of ASCII bytes padded to one width, and their lengths: text for many
        # picks at once is one fancy index and one mask (see :meth:`join_rows`)
        width = max((len(w) for w in self.words), default=1)
        self._lengths = np.asarray([len(w) for w in self.words], dtype=np.int64)
        self._table = np.zeros((max(self.size, 1), width), dtype=np.uint8)
        for i, w in enumerate(self.words):
            self._table[i, : len(w)] = np.frombuffer(w.encode("ascii"), dtype=np.uint8)
        self._columns = np.arange(width)

    def text(self, indices: Iterable[int]) -> str:
        words = self.words
        return "".join(words[i] for i in indices)

    def join_rows(self, picks: npt.NDArray[np.int64]) -> list[str]:
        """The text of each row of ``picks`` (word indices): the rows' words joined."""
        if picks.size == 0:
            return ["" for _ in range(picks.shape[0])]
        lengths = self._lengths[picks]
        flat = self._table[picks][self._columns < lengths[..., None]].tobytes().decode("ascii")
        ends = np.cumsum(lengths.sum(axis=1)).tolist()
        return [flat[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


@lru_cache(maxsize=4)
def vocabulary(encoding: str = DEFAULT_ENCODING) -> Vocabulary:
    return Vocabulary(encoding)


def _u64(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


class PrefixWords:
    """Word ``i`` of a text is a keyed function of the original tokens ``0..i``.

    Without the key the words say nothing about the original tokens; with the same key, equal
    token prefixes give equal word prefixes, and the first differing token gives a different word
    (unless two hashes meet in the vocabulary, a 1-in-``size`` chance).
    """

    def __init__(self, key: bytes, encoding: str = DEFAULT_ENCODING) -> None:
        self.key = hashlib.blake2b(key, digest_size=32).digest()
        self.vocab = vocabulary(encoding)

    def chain(self, tokens: Sequence[int], domain: bytes = b"") -> list[int]:
        """Word indices for every position of ``tokens``."""
        size = self.vocab.size
        state = hashlib.blake2b(domain, key=self.key, digest_size=16).digest()
        out: list[int] = []
        for t in tokens:
            state = hashlib.blake2b(
                state + int(t).to_bytes(8, "little", signed=True), key=self.key, digest_size=16
            ).digest()
            out.append(int.from_bytes(state[:8], "little") % size)
        return out

    def text_for(self, tokens: Sequence[int], n: int, domain: bytes = b"") -> str:
        """``n`` words keyed by ``tokens`` (extended past its end by position when ``n`` is larger)."""
        idx = self.chain(tokens[:n], domain)
        while len(idx) < n:
            idx.append(_u64(self.key + domain + len(idx).to_bytes(8, "little")) % self.vocab.size)
        return self.vocab.text(idx)


def _splitmix(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


_STEP = np.uint64(0xD1B54A32D192ED03)


def _picks(seeds: npt.NDArray[np.uint64], n: int, size: int) -> npt.NDArray[np.int64]:
    """Vocabulary indices: row ``i`` is the ``n``-word stream of ``seeds[i]``."""
    with np.errstate(over="ignore"):
        counters = seeds[:, None] + np.arange(n, dtype=np.uint64)[None, :] * _STEP
    return (_splitmix(counters) % np.uint64(size)).astype(np.int64)


def _stream(seed: int, n: int, vocab: Vocabulary) -> TokenArray:
    picks = _picks(np.asarray([seed], dtype=np.uint64), n, vocab.size)[0]
    out: TokenArray = vocab.ids[picks]
    return out


def _block_seed(hash_id: int, namespace: bytes) -> int:
    return _u64(
        _BLOCK_DOMAIN + namespace + b"\0" + int(hash_id).to_bytes(16, "little", signed=True)
    )


def _tail_seed(prefix_ids: Sequence[int], namespace: bytes) -> int:
    ids = np.asarray(prefix_ids, dtype=np.int64).reshape(-1, 1)
    wide = np.hstack([ids, np.where(ids < 0, -1, 0)]).astype("<i8")  # 16-byte little-endian ids
    h = hashlib.blake2b(_TAIL_DOMAIN + namespace + b"\0", digest_size=8)
    h.update(wide.tobytes())
    return int.from_bytes(h.digest(), "little")


@lru_cache(maxsize=65536)
def block_tokens(
    hash_id: int, block_size: int, namespace: str = "", encoding: str = DEFAULT_ENCODING
) -> TokenArray:
    """The token block of a hash id: ``block_size`` word tokens, a function of the id alone."""
    arr = _stream(_block_seed(hash_id, namespace.encode()), block_size, vocabulary(encoding))
    arr.setflags(write=False)
    return arr


def tail_tokens(
    prefix_ids: Sequence[int], n: int, namespace: str = "", encoding: str = DEFAULT_ENCODING
) -> TokenArray:
    """Tokens after the last full block: a function of the blocks before them (and ``n``)."""
    return _stream(_tail_seed(prefix_ids, namespace.encode()), n, vocabulary(encoding))


def hash_id_tokens(
    hash_ids: Sequence[int],
    block_size: int,
    prompt_tokens: int,
    namespace: str = "",
    encoding: str = DEFAULT_ENCODING,
) -> TokenArray:
    """Exactly ``prompt_tokens`` tokens laid out block by block from ``hash_ids``.

    ``hash_ids`` may cover the prompt with full blocks and leave a tail (Weka: ``floor(n / bs)``
    ids; the tail is derived from the ids before it) or end with a partial block (Mooncake:
    ``ceil(n / bs)`` ids; the last block is cut). Ids beyond the prompt are ignored.
    """
    if prompt_tokens <= 0:
        return np.zeros(0, dtype=np.int64)
    n_full = min(len(hash_ids), prompt_tokens // block_size)
    parts = [block_tokens(int(h), block_size, namespace, encoding) for h in hash_ids[:n_full]]
    rest = prompt_tokens - n_full * block_size
    if rest:
        if len(hash_ids) > n_full:  # a partial last block with its own id
            parts.append(
                block_tokens(int(hash_ids[n_full]), block_size, namespace, encoding)[:rest]
            )
        else:
            parts.append(tail_tokens(hash_ids[:n_full], rest, namespace, encoding))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def hash_id_text(
    hash_ids: Sequence[int],
    block_size: int,
    prompt_tokens: int,
    namespace: str = "",
    encoding: str = DEFAULT_ENCODING,
) -> str:
    """The text of :func:`hash_id_tokens`; ``tokens.encode`` of it gives those tokens back."""
    tokens = hash_id_tokens(hash_ids, block_size, prompt_tokens, namespace, encoding)
    return get_encoding(encoding).decode(tokens.tolist()) if tokens.size else ""


class BlockTexts:
    """The text of hash-id blocks (:func:`block_tokens` as text), made in bulk and cached.

    Blocks missing from the cache are generated together (one vectorised pass), and kept in an
    LRU bounded by ``max_bytes`` of text, so blocks shared by the threads and sessions of a run
    (a system prompt, a subagent's inherited context) are made once.
    """

    def __init__(
        self,
        block_size: int,
        namespace: str = "",
        encoding: str = DEFAULT_ENCODING,
        max_bytes: int = 64 << 20,
    ) -> None:
        if block_size < 1:
            raise ValueError("block_size must be >= 1")
        self.block_size = block_size
        self.max_bytes = max_bytes
        self.bytes = 0
        self._namespace = namespace.encode()
        self._vocab = vocabulary(encoding)
        self._cache: OrderedDict[int, str] = OrderedDict()

    def __len__(self) -> int:
        return len(self._cache)

    def _text(self, picks: npt.NDArray[np.int64]) -> str:
        return self._vocab.join_rows(picks[None, :])[0]

    def texts(self, hash_ids: Sequence[int]) -> list[str]:
        """The text of each block, in order."""
        cache = self._cache
        out: list[str | None] = []
        missing: dict[int, list[int]] = {}  # id -> positions in out
        for pos, h in enumerate(hash_ids):
            text = cache.get(h)
            if text is None:
                missing.setdefault(h, []).append(pos)
            else:
                cache.move_to_end(h)
            out.append(text)
        if missing:
            ids = list(missing)
            seeds = np.fromiter(
                (_block_seed(h, self._namespace) for h in ids), dtype=np.uint64, count=len(ids)
            )
            rows = self._vocab.join_rows(_picks(seeds, self.block_size, self._vocab.size))
            for h, text in zip(ids, rows, strict=True):
                for pos in missing[h]:
                    out[pos] = text
                cache[h] = text
                self.bytes += len(text)
            while self.bytes > self.max_bytes and len(cache) > 1:
                _, old = cache.popitem(last=False)
                self.bytes -= len(old)
        return [t for t in out if t is not None]

    def partial(self, hash_id: int, n: int) -> str:
        """The first ``n`` words of a block (Mooncake's partial last block)."""
        seed = np.asarray([_block_seed(hash_id, self._namespace)], dtype=np.uint64)
        return self._text(_picks(seed, self.block_size, self._vocab.size)[0][:n])

    def tail(self, prefix_ids: Sequence[int], n: int) -> str:
        """The ``n`` words after the last full block (:func:`tail_tokens` as text)."""
        seed = np.asarray([_tail_seed(prefix_ids, self._namespace)], dtype=np.uint64)
        return self._text(_picks(seed, n, self._vocab.size)[0])


class ThreadText:
    """The synthetic prompts of one thread's successive hash-only requests, incrementally.

    :meth:`text` returns exactly :func:`hash_id_text` of its arguments, but keeps the text of the
    previous request's full blocks: a turn that extends the previous one (the usual case) makes
    only its new blocks and its tail; one that rewrites history (a compaction) keeps the blocks
    before the first changed one.
    """

    def __init__(self, blocks: BlockTexts) -> None:
        self.blocks = blocks
        self._ids: list[int] = []  # full-block ids of the previous text
        # character offset where each of those blocks ends (8 bytes each, not an int object)
        self._ends: array[int] = array("q")
        self._body = ""  # their text (unless held in a sent body: :meth:`hold_in`)
        self._held: tuple[bytes, int] | None = None  # (a body, where their text starts in it)

    def _head(self, n: int) -> str:
        """The first ``n`` characters of the previous full blocks' text."""
        if self._held is None:
            return self._body if n == len(self._body) else self._body[:n]
        buf, start = self._held
        return str(memoryview(buf)[start : start + n], "ascii")

    def hold_in(self, buf: bytes, start: int) -> bool:
        """Keep the previous text as its span of ``buf`` from ``start`` (the body it was sent
        in, which the run holds anyway as its thread's previous body), not as a copy of its own;
        ``False`` (and the text kept) when ``buf`` does not hold it there."""
        if self._held is not None or not self._body:
            return False
        if not buf.startswith(self._body.encode("ascii"), start):
            return False
        self._held, self._body = (buf, start), ""
        return True

    def _common(self, ids: list[int]) -> int:
        prev = self._ids
        n = min(len(prev), len(ids))
        if prev[:n] == ids[:n]:
            return n
        a = np.asarray(prev[:n], dtype=np.int64)
        b = np.asarray(ids[:n], dtype=np.int64)
        return int(np.argmin(a == b))

    def text(self, hash_ids: Sequence[int], prompt_tokens: int) -> str:
        """Exactly ``prompt_tokens`` tokens laid out block by block from ``hash_ids``."""
        if prompt_tokens <= 0:
            return ""
        bs = self.blocks.block_size
        n_full = min(len(hash_ids), prompt_tokens // bs)
        ids = [int(h) for h in hash_ids[:n_full]]
        keep = self._common(ids)
        new = self.blocks.texts(ids[keep:])
        ends = self._ends[:keep]
        offset = ends[-1] if ends else 0
        for t in new:
            offset += len(t)
            ends.append(offset)
        head = self._head(ends[keep - 1] if keep else 0)
        body = head + "".join(new) if new else head
        self._ids, self._ends, self._body, self._held = ids, ends, body, None
        rest = prompt_tokens - n_full * bs
        if not rest:
            return body
        if len(hash_ids) > n_full:  # a partial last block with its own id
            return body + self.blocks.partial(int(hash_ids[n_full]), rest)
        return body + self.blocks.tail(ids, rest)
