"""The chain detection and classification of flat parallel agents (agentx/formats/weka/chains.py,
flat.py), rule by rule on small request lists (the real traces are in test_weka_flat.py)."""

from __future__ import annotations

from collections.abc import Sequence

from agentx.formats.weka.chains import ChainRequest, block_ids, detect, worker_groups
from agentx.formats.weka.flat import ChainKind, split_flat, split_preamble

OPUS, HAIKU = "opus", "haiku"


def req(
    pos: int,
    t: float,
    ids: Sequence[int],
    *,
    api: float | None = 1.0,
    model: str = OPUS,
    n_in: int | None = None,
    n_out: int = 500,
) -> ChainRequest:
    n = n_in if n_in is not None else 64 * len(ids)
    return ChainRequest(pos, t, api, model, n, n_out, block_ids(ids))


def grow(n: int, start: int = 0) -> list[int]:
    return list(range(start, start + n))


def chains_of(reqs: Sequence[ChainRequest]) -> list[list[int]]:
    d = detect(reqs)
    live = [d.main, *d.workers]
    return [[r.position for r in d.chains[i].requests] for i in live]


def test_a_growing_conversation_is_one_chain() -> None:
    reqs = [req(k, 10.0 * k, grow(10 + k)) for k in range(5)]
    d = detect(reqs)
    assert (chains_of(reqs), d.seams, d.empty) == ([[0, 1, 2, 3, 4]], 0, 0)
    assert split_flat(reqs) is None


def test_rehashed_trailing_blocks_are_a_seam_not_an_agent() -> None:
    a = grow(20)
    b = [*a[:19], 900, 901]  # the last block re-hashed, then growth
    c = [*b, 902]
    reqs = [req(0, 0, a), req(1, 10, b), req(2, 20, c)]
    d = detect(reqs)
    assert chains_of(reqs) == [[0, 1, 2]]
    assert d.seams == 1


def test_a_fork_while_the_tail_runs_is_a_spawned_agent() -> None:
    a = grow(20)
    main_next = [*a, 21]
    agent = [*a, 500, 501]
    # the agent starts at 10.5, before the main request (10 s of server time) ended
    reqs = [req(0, 0, a, api=11.0), req(1, 10.5, agent), req(2, 30, main_next)]
    assert chains_of(reqs) == [[0, 2], [1]]
    d = detect(reqs)
    fork = d.chains[d.workers[0]].fork
    assert fork is not None and (fork.parent, fork.position, fork.depth) == (d.main, 0, 20)


def test_another_model_never_extends_a_chain() -> None:
    a = grow(20)
    reqs = [req(0, 0, a), req(1, 10, [*a, 1], model=HAIKU), req(2, 20, [*a, 2])]
    assert chains_of(reqs) == [[0, 2], [1]]


def test_a_late_low_overlap_restart_is_a_new_session_a_prompt_one_a_seam() -> None:
    a = grow(100)
    restart = [*a[:10], *grow(30, 1000)]  # keeps 10 % of the tail
    for gap, chains in ((10.0, [[0, 1]]), (4000.0, [[0], [1]])):
        reqs = [req(0, 0, a), req(1, 1.0 + gap, restart)]
        assert chains_of(reqs) == chains
    kept = [*a[:90], *grow(5, 2000)]  # 90 %: a verbatim resume, however late
    assert chains_of([req(0, 0, a), req(1, 5000, kept)]) == [[0, 1]]


def test_requests_without_ids_stay_on_the_main_chain() -> None:
    a = grow(10)
    reqs = [req(0, 0, a), req(1, 5, []), req(2, 10, [*a, 1])]
    d = detect(reqs)
    assert (chains_of(reqs), d.empty) == ([[0, 1, 2]], 1)


def test_three_concurrent_forks_off_one_request_are_a_worker_group() -> None:
    base = grow(200)
    main = [*base, *grow(300, 5000)]  # the main agent's long context
    workers = [[*base, *grow(20, 10_000 * (w + 1))] for w in range(3)]
    reqs = [req(0, 0, main, api=5)]
    reqs += [req(1 + w, 2.0 + w, ids, api=20) for w, ids in enumerate(workers)]
    reqs += [req(4 + w, 30.0 + w, [*ids, 1], api=20) for w, ids in enumerate(workers)]
    reqs.append(req(7, 100, [*main, 1]))
    d = detect(reqs)
    groups = worker_groups(d, group_min=3)
    assert sorted(groups.values()) == [(0, 0), (0, 1), (0, 2)]
    assert worker_groups(d, group_min=4) == {}
    split = split_flat(reqs)
    assert split is not None
    assert [(c.name, c.kind) for c in split.chains] == [
        ("wg:000_000", ChainKind.WORKER),
        ("wg:000_001", ChainKind.WORKER),
        ("wg:000_002", ChainKind.WORKER),
    ]
    assert split.main == (0, 7)
    assert [c.positions for c in split.chains] == [(1, 4), (2, 5), (3, 6)]


def test_one_shots_are_sidecars_or_reductions_the_others_agents() -> None:
    main = grow(2000)  # 128K tokens
    reqs = [
        req(0, 0, main, api=5),
        req(1, 2, [*main, 1], api=5, n_out=300),  # large in, short out: a reduction
        req(2, 3, grow(50, 9000), model=HAIKU, n_in=3200),  # fresh, another model: a sidecar
        req(3, 4, [*main, 2], n_out=5000),  # a long answer: an agent
        req(4, 6, [*main, 2, 3]),
        req(5, 20, [*main, 7]),
    ]
    split = split_flat(reqs)
    assert split is not None
    assert [(c.name, c.kind, c.positions) for c in split.chains] == [
        ("aux:000", ChainKind.REDUCTION, (1,)),
        ("aux:001", ChainKind.SIDECAR, (2,)),
        ("fa:002", ChainKind.AGENT, (3, 4)),
    ]


def test_a_disjoint_title_request_first_is_a_preamble_kept_on_main() -> None:
    title = req(0, 0, grow(5, 7000), model=HAIKU, n_out=20)
    a = grow(30)
    reqs = [title, req(1, 1, a, api=3), req(2, 2, [*a, 9]), req(3, 10, [*a, 1])]
    pre, rest = split_preamble(reqs)
    assert (pre, [r.position for r in rest]) == ([title], [1, 2, 3])
    split = split_flat(reqs)
    assert split is not None
    assert split.main == (0, 1, 3)  # the preamble back on the main chain, in time order
    assert [c.positions for c in split.chains] == [(2,)]
    long_answer = req(0, 0, grow(5, 7000), model=HAIKU, n_out=200)
    assert split_preamble([long_answer, req(1, 1, [7000, *a])])[0] == []  # its block recurs
