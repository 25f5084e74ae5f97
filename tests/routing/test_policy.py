"""The routing policies: each one's rule, from the one implementation every driver uses."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentx.core.errors import UsageError
from agentx.prefixcache.hashing import block_hashes
from agentx.routing import (
    PrefixRouter,
    PrefixThresholds,
    Route,
    RouteRequest,
    make_router,
    parse_routes,
)
from agentx.routing.ring import HashRing


def test_round_robin_goes_replica_after_replica() -> None:
    r = make_router(Route.ROUND_ROBIN, 3)
    assert [r.route_one(RouteRequest("t")) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]


def test_session_keeps_a_tree_on_one_replica_and_spreads_trees() -> None:
    r = make_router(Route.SESSION, 4)
    picks = {f"tree-{i}": r.route_one(RouteRequest(f"tree-{i}")) for i in range(400)}
    for key, replica in list(picks.items())[:50]:
        assert all(r.route_one(RouteRequest(key)) == replica for _ in range(3))
    shares = np.bincount(list(picks.values()), minlength=4) / 400
    assert shares.min() > 0.15 and shares.max() < 0.35  # 160 points a replica: within ~10%


def test_session_ring_moves_about_one_in_n_plus_one_trees_all_to_the_new_replica() -> None:
    keys = [f"session-{i}#0" for i in range(4000)]
    for n in (2, 4, 7):
        before = HashRing(n)
        after = HashRing(n + 1)
        moved = [k for k in keys if before.replica_of(k) != after.replica_of(k)]
        assert all(after.replica_of(k) == n for k in moved)
        assert abs(len(moved) / len(keys) - 1 / (n + 1)) < 0.05


def test_session_without_a_key_goes_round_robin() -> None:
    r = make_router(Route.SESSION, 2)
    assert [r.route_one(RouteRequest("")) for _ in range(4)] == [0, 1, 0, 1]


def test_least_loaded_takes_the_fewest_in_flight_then_the_least_prompt() -> None:
    r = make_router(Route.LEAST_LOADED, 3)
    big, small = RouteRequest("a", size=1000), RouteRequest("b", size=10)
    assert r.route_one(big) == 0
    assert r.route_one(small) == 1
    assert r.route_one(small) == 2
    # one in flight each: the least prompt in flight wins
    assert r.pick(small) in (1, 2)
    r.finished(0, big)
    assert r.pick(big) == 0


def test_random_is_seeded_and_uniform() -> None:
    a = [make_router(Route.RANDOM, 4, seed=3).route_one(RouteRequest("t")) for _ in range(1)]
    r1, r2 = make_router(Route.RANDOM, 4, seed=3), make_router(Route.RANDOM, 4, seed=3)
    s1 = [r1.route_one(RouteRequest("t")) for _ in range(400)]
    s2 = [r2.route_one(RouteRequest("t")) for _ in range(400)]
    assert s1 == s2 and s1[:1] == a
    r3 = make_router(Route.RANDOM, 4, seed=4)
    assert [r3.route_one(RouteRequest("t")) for _ in range(400)] != s1
    counts = np.bincount(s1, minlength=4)
    assert counts.min() > 70


def _blocks(prefix: int, n: int) -> np.ndarray:
    return block_hashes([prefix] * 4 + list(range(4 * n)), 4)


def test_prefix_follows_the_replica_holding_the_longest_prefix() -> None:
    r = PrefixRouter(2)
    first = RouteRequest("a", blocks=_blocks(1, 8))
    home = r.route_one(first)
    r.finished(home, first)
    other = r.route_one(RouteRequest("b", blocks=_blocks(2, 8)))  # a new tree: the emptier
    assert other != home
    grown = RouteRequest("a", blocks=_blocks(1, 12))
    assert r.pick(grown) == home


def test_prefix_escapes_to_the_least_loaded_when_imbalanced() -> None:
    r = PrefixRouter(2, PrefixThresholds(balance_abs=2, balance_rel=1.5))
    req = RouteRequest("a", blocks=_blocks(1, 8))
    home = r.route_one(req)
    for _ in range(2):
        assert r.route_one(req) == home  # held there, and within the balance
    assert r.imbalanced()
    assert r.route_one(req) != home


def test_prefix_below_the_cache_threshold_spreads_new_trees() -> None:
    r = PrefixRouter(2, PrefixThresholds(cache_threshold=0.9))
    a = RouteRequest("a", blocks=_blocks(1, 8))
    home = r.route_one(a)
    r.finished(home, a)
    # shares 9 of 20 blocks: under the threshold, so the emptier replica takes it
    shared = RouteRequest("c", blocks=np.concatenate([_blocks(1, 8), _blocks(9, 10)]))
    assert r.pick(shared) != home


def test_every_route_has_its_router() -> None:
    for route in Route:
        assert make_router(route, 2).route is route
    with pytest.raises(ValueError):
        make_router(Route.SESSION, 0)


@given(
    st.lists(st.sampled_from(list(Route)), min_size=1, unique=True),
    st.sampled_from([",", ", ", " , "]),
)
def test_parse_routes_reads_back_any_list_of_policies(routes: list[Route], sep: str) -> None:
    assert parse_routes(sep.join(routes)) == tuple(routes)  # the order given, each once
    assert parse_routes(",".join(routes) + ",") == tuple(routes)  # a trailing comma is nothing


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("session,session", "session appears twice"),
        ("round-robin,nearest", "'nearest' is not a policy"),
        ("", "give at least one policy"),
        (" , ", "give at least one policy"),
        ("Session", "'Session' is not a policy"),  # the names as the help spells them
    ],
)
def test_parse_routes_refuses(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_routes(text)
