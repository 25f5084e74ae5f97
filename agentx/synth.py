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
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from agentx.tokens import DEFAULT_ENCODING, TokenArray, get_encoding

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


class Vocabulary:
    """The word tokens of an encoding, by id, with their text."""

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        enc = get_encoding(encoding)
        ids: list[int] = []
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
                ids.append(i)
        self.encoding = encoding
        self.ids: npt.NDArray[np.int64] = np.asarray(ids, dtype=np.int64)
        self.words: tuple[str, ...] = tuple(enc.decode([i]) for i in ids)
        self.size = len(ids)

    def text(self, indices: Iterable[int]) -> str:
        words = self.words
        return "".join(words[i] for i in indices)


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


def _stream(seed: int, n: int, vocab: Vocabulary) -> TokenArray:
    with np.errstate(over="ignore"):
        counters = np.uint64(seed) + np.arange(n, dtype=np.uint64) * np.uint64(0xD1B54A32D192ED03)
    picks = _splitmix(counters) % np.uint64(vocab.size)
    out: TokenArray = vocab.ids[picks.astype(np.int64)]
    return out


@lru_cache(maxsize=65536)
def block_tokens(
    hash_id: int, block_size: int, namespace: str = "", encoding: str = DEFAULT_ENCODING
) -> TokenArray:
    """The token block of a hash id: ``block_size`` word tokens, a function of the id alone."""
    seed = _u64(
        _BLOCK_DOMAIN
        + namespace.encode()
        + b"\0"
        + int(hash_id).to_bytes(16, "little", signed=True)
    )
    arr = _stream(seed, block_size, vocabulary(encoding))
    arr.setflags(write=False)
    return arr


def tail_tokens(
    prefix_ids: Sequence[int], n: int, namespace: str = "", encoding: str = DEFAULT_ENCODING
) -> TokenArray:
    """Tokens after the last full block: a function of the blocks before them (and ``n``)."""
    h = hashlib.blake2b(_TAIL_DOMAIN + namespace.encode() + b"\0", digest_size=8)
    for i in prefix_ids:
        h.update(int(i).to_bytes(16, "little", signed=True))
    return _stream(int.from_bytes(h.digest(), "little"), n, vocabulary(encoding))


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
