"""The shared theoretical-hit-rate meter: what it counts and how it reports it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agentx.apis import Api
from agentx.core.errors import UsageError
from agentx.core.flags import FLAG_NON_MODEL as NON_MODEL_FLAG
from agentx.core.models import Exchange, Timing, Usage
from agentx.prefixcache.cache import theoretical_hit_rate
from agentx.prefixcache.hashing import block_hashes
from agentx.prefixcache.theory import HitRateMeter
from agentx.prefixcache.tokens import request_tokens


def _text(i: int, n_turns: int) -> Exchange:
    msgs = [
        {"role": "user", "content": f"turn {k}: look at file_{k}.py " * 8} for k in range(n_turns)
    ]
    body = {"model": "m", "system": "You are an agent. " * 30, "messages": msgs}
    return Exchange(
        request_id=f"t{i}",
        session_id="s",
        thread_id="main",
        api=Api.ANTHROPIC_MESSAGES,
        request=body,
        timing=Timing(start_wall_ns=i),
    )


def test_text_and_hash_rows_each_at_their_own_block_size() -> None:
    texts = [_text(i, i + 1) for i in range(4)]
    hashed = [
        replace(
            texts[0],
            request_id=f"h{i}",
            request=None,
            hash_ids=tuple(range(i + 2)),
            hash_block_size=32,
            usage=Usage(prompt_tokens=32 * (i + 2)),
        )
        for i in range(3)
    ]
    noise = [
        replace(texts[0], request_id="x", api=Api.OTHER),
        replace(texts[0], request_id="y", flags=(NON_MODEL_FLAG,)),
        replace(hashed[0], request_id="z", hash_block_size=None),
    ]
    meter = HitRateMeter(16)
    counted = [meter.observe(ex) for ex in texts + hashed + noise]
    sizes = [int(request_tokens(ex.api, ex.request).size) for ex in texts]
    assert counted == [*sizes, 64, 96, 128, None, None, None]
    assert meter.last_prompt_tokens is None
    text_reqs = [
        (block_hashes(request_tokens(ex.api, ex.request), 16), n)
        for ex, n in zip(texts, sizes, strict=True)
    ]
    per = meter.per_block_size()
    assert list(per) == [16, 32]
    assert per[16].requests == 4 and per[16].prompt_tokens == sum(sizes)
    assert per[16].hit_tokens == round(theoretical_hit_rate(text_reqs, 16) * sum(sizes))
    assert per[32].to_json() == {"requests": 3, "prompt_tokens": 288, "hit_tokens": 64 + 96}
    assert meter.main_block_size == (16 if sum(sizes) > 288 else 32)
    assert meter.hit_rate == meter.hit_tokens / meter.prompt_tokens


def test_nothing_counted_is_unknown() -> None:
    meter = HitRateMeter(16)
    assert (meter.hit_rate, meter.main_block_size, meter.per_block_size()) == (None, 16, {})


def test_hash_only_shape_is_what_hash_only_blocks_counts() -> None:
    """The array-level rule: full blocks only, coarsened by the requested multiple."""
    from agentx.prefixcache.theory import hash_only_shape

    shape = hash_only_shape(10, 16, 150, 32)
    assert (shape.full_ids, shape.group, shape.prompt_tokens, shape.block_size) == (9, 2, 150, 32)
    assert hash_only_shape(10, 16, None, None).prompt_tokens == 160
    with pytest.raises(UsageError, match="multiple of 16"):
        hash_only_shape(10, 16, 150, 24)
