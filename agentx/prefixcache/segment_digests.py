"""What a compact :class:`agentx.prefixcache.hashing.RequestHasher` keeps of a thread's last
prompt instead of the prompt: digests that answer the two questions the next request asks.

- Is segment ``i`` the same? :func:`segment_key`: a digest of its kind and canonical JSON, equal
  exactly when the values are the hasher's equal ones (so they render alike).
- Up to which piece cut does the last segment's text still agree
  (:func:`agentx.prefixcache.tokens.piece_cuts`: a cut depends only on the text through its
  character)? :func:`window` digests the text from one cut through the next cut's character;
  the windows alike from the first (:func:`matching_windows`) are the cuts both texts agree
  through, and with :func:`rest_digest` (from the last cut on) the whole text.
"""

from __future__ import annotations

import hashlib

import orjson

from agentx.core.models import JSON
from agentx.prefixcache import tokens


def canonical(value: JSON) -> bytes:
    """A value's JSON with sorted keys: equal for values that render alike."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return tokens._dump(value).encode()


def digest(data: bytes) -> bytes:
    # SHA-1 (not as a security measure): 160 bits, and with the CPU's SHA instructions twice
    # BLAKE2b's speed here; two different segments meeting is not a practical concern
    return hashlib.sha1(data, usedforsecurity=False).digest()


def segment_key(source: tokens.Source) -> bytes:
    """A segment's kind and value, digested: equal keys mean equal canonical JSON of one kind."""
    kind, value = source
    return digest(kind.encode() + b"\0" + canonical(value))


def text_digest(text: str) -> bytes:
    return digest(text.encode("utf-8", "surrogatepass"))


def window(text: str, cuts: list[int], j: int) -> bytes:
    """The digest of ``text`` from cut ``j - 1`` (0 for the first) through the character at
    cut ``j``: windows ``0..j`` equal in two texts mean the texts equal through cut ``j``'s
    character, which is what resuming the encoding at that cut needs."""
    start = cuts[j - 1] if j else 0
    return text_digest(text[start : cuts[j] + 1])


def rest_digest(text: str, cuts: list[int]) -> bytes:
    """The digest of ``text`` from its last cut on: with its windows, the whole text's."""
    return text_digest(text[cuts[-1] :] if cuts else text)


def matching_windows(text: str, cuts: list[int], windows: list[bytes]) -> int:
    """How many of a previous text's ``windows`` (at its ``cuts``) ``text`` has alike, from
    the first: the previous text's cuts through whose character ``text`` agrees with it."""
    for j, cut in enumerate(cuts):
        if cut >= len(text) or window(text, cuts, j) != windows[j]:
            return j
    return len(cuts)
