"""The digests a compact hasher keeps answer as the values and texts they stand for: equal keys
for values that compare and dump alike, and the windows alike are exactly the cuts through
whose character two texts agree."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.prefixcache.segment_digests import (
    matching_windows,
    rest_digest,
    segment_key,
    window,
)
from agentx.prefixcache.tokens import piece_cuts

_ALPHABET = st.sampled_from(list("ab \n!é"))


@settings(max_examples=200, deadline=None)
@given(
    st.text(_ALPHABET, min_size=0, max_size=300),
    st.text(_ALPHABET, max_size=40),
    st.integers(0, 300),
    st.sampled_from([4, 16, 64]),
)
def test_the_windows_alike_are_the_cuts_both_texts_agree_through(
    old: str, edit: str, at: int, piece_chars: int
) -> None:
    new = old[:at] + edit
    cuts = piece_cuts(old, 0, piece_chars)
    windows = [window(old, cuts, j) for j in range(len(cuts))]
    agree = 0
    while agree < len(cuts) and new[: cuts[agree] + 1] == old[: cuts[agree] + 1]:
        agree += 1
    assert matching_windows(new, cuts, windows) == agree
    whole = agree == len(cuts) and rest_digest(new, cuts) == rest_digest(old, cuts)
    assert whole == (new == old)


def test_segment_keys_tell_apart_what_renders_apart() -> None:
    msg = {"role": "user", "content": "hi", "x": 1}
    assert segment_key(("message", msg)) == segment_key(("message", dict(reversed(msg.items()))))
    assert segment_key(("message", msg)) != segment_key(("message", {**msg, "x": True}))
    assert segment_key(("message", msg)) != segment_key(("message", {**msg, "x": 1.0}))
    assert segment_key(("system", "s")) != segment_key(("message", "s"))
    assert segment_key(("message", {"n": 2**70})) != segment_key(("message", {"n": 2**70 + 1}))
