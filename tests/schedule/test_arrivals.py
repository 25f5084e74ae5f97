"""Open-loop arrivals: the processes' statistics (fixed seeds), and the schedule's open loop on a
virtual clock (exact times)."""

from __future__ import annotations

import itertools
import statistics

import pytest

from agentx.schedule.arrivals import ArrivalError, Arrivals, gaps_s, times_s

from .helpers import chain, play

N = 20_000


def sample(a: Arrivals, n: int = N) -> list[float]:
    return list(itertools.islice(gaps_s(a), n))


# -- the processes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "burstiness", "cv"),
    [("poisson", 1.0, 1.0), ("gamma", 0.25, 2.0), ("gamma", 1.0, 1.0), ("gamma", 4.0, 0.5)],
)
@pytest.mark.parametrize("seed", [0, 7])
def test_mean_gap_is_one_over_the_rate_and_cv_follows_burstiness(
    kind: str, burstiness: float, cv: float, seed: int
) -> None:
    gaps = sample(Arrivals(5.0, kind, burstiness, seed))
    mean = statistics.fmean(gaps)
    # 20,000 gaps: the mean's relative standard error is cv / sqrt(N) <= 1.4 %
    assert mean == pytest.approx(0.2, rel=0.05)
    assert statistics.pstdev(gaps) / mean == pytest.approx(cv, rel=0.08)
    assert min(gaps) >= 0


def test_constant_arrivals_are_evenly_spaced() -> None:
    assert set(sample(Arrivals(4.0, "constant"), 100)) == {0.25}
    assert list(itertools.islice(times_s(Arrivals(4.0, "constant")), 3)) == [0.25, 0.5, 0.75]


def test_poisson_counts_per_window_have_variance_equal_to_mean() -> None:
    """Arrivals of a Poisson process in unit windows: mean = variance = rate."""
    counts = [0] * 400
    for t in times_s(Arrivals(10.0, seed=3)):
        if t >= len(counts):
            break
        counts[int(t)] += 1
    assert statistics.fmean(counts) == pytest.approx(10, rel=0.05)
    assert statistics.pvariance(counts) == pytest.approx(10, rel=0.2)


def test_seeded_and_reproducible() -> None:
    a = Arrivals(3.0, seed=11)
    assert sample(a, 50) == sample(a, 50)
    assert sample(a, 50) != sample(Arrivals(3.0, seed=12), 50)


def test_shares_split_the_rate_with_distinct_seeds() -> None:
    whole = Arrivals(12.0, "gamma", 0.5, seed=1)
    parts = [whole.share(i, 3) for i in range(3)]
    assert sum(p.rate_per_s for p in parts) == pytest.approx(12.0)
    assert len({p.seed for p in parts}) == 3
    assert all(p.kind == "gamma" and p.burstiness == 0.5 for p in parts)
    assert whole.share(0, 1) is whole


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rate_per_s": 0.0}, "positive"),
        ({"rate_per_s": float("inf")}, "positive"),
        ({"rate_per_s": 1.0, "kind": "uniform"}, "--arrival"),
        ({"rate_per_s": 1.0, "kind": "gamma", "burstiness": 0.0}, "--burstiness"),
        ({"rate_per_s": 1.0, "burstiness": 2.0}, "--arrival gamma"),
    ],
)
def test_bad_processes_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ArrivalError, match=message):
        Arrivals(**kwargs)  # type: ignore[arg-type]


# -- the schedule's open loop (virtual clock) --------------------------------------------------


def test_trees_start_at_their_arrival_times() -> None:
    """Constant arrivals every 0.5 s; each tree is two turns 1 s apart (each takes 0.2 s)."""
    trees = [chain(f"t{i}", [0, 1], api_s=0.2) for i in range(4)]
    schedule, played = play(trees, lanes=(0, 1, 2, 3), arrivals=Arrivals(2.0, "constant"))
    firsts = sorted(p.sent_s for p in played if p.send.turn == 0)
    assert firsts == pytest.approx([0.5, 1.0, 1.5, 2.0])
    seconds = sorted(p.sent_s for p in played if p.send.turn == 1)
    assert seconds == pytest.approx([1.5, 2.0, 2.5, 3.0])  # recorded think time after each
    log = schedule.arrival_log()
    assert log is not None and log.start_s == log.due_s and log.waited == 0
    assert len(log.start_s) / (log.window_end_s - log.window_start_s) == pytest.approx(2.0)


def test_the_poisson_rate_is_achieved_with_room() -> None:
    trees = [chain(f"t{i}", [0], api_s=0.1) for i in range(500)]
    schedule, played = play(trees, lanes=tuple(range(64)), arrivals=Arrivals(20.0, seed=9))
    log = schedule.arrival_log()
    assert log is not None and len(played) == 500 and log.waited == 0
    achieved = len(log.start_s) / (log.window_end_s - log.window_start_s)
    assert achieved == pytest.approx(20.0, rel=0.15)  # 500 arrivals: ~4.5 % standard error


def test_a_full_cap_makes_arrivals_wait_first_come_first_served() -> None:
    """Arrivals every 0.1 s, trees of 1 s, one lane: each waits for the previous tree."""
    trees = [chain(f"t{i}", [0], api_s=1.0) for i in range(4)]
    schedule, played = play(trees, lanes=(0,), arrivals=Arrivals(10.0, "constant"))
    assert [round(p.sent_s, 6) for p in played] == [0.1, 1.1, 2.1, 3.1]
    assert [p.send.tree for p in played] == [0, 1, 2, 3]
    log = schedule.arrival_log()
    assert log is not None and log.waited == 3
    assert log.due_s == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert log.start_s == pytest.approx([0.1, 1.1, 2.1, 3.1])


def test_duration_ends_the_arrivals_and_counts_the_ones_left_waiting() -> None:
    trees = [chain("t", [0], api_s=1.0)]
    schedule, played = play(
        trees, lanes=(0,), recycle=True, duration_s=2.05, arrivals=Arrivals(10.0, "constant")
    )
    log = schedule.arrival_log()
    assert log is not None
    assert [round(p.sent_s, 6) for p in played] == [0.1, 1.1]  # the lane is busy otherwise
    assert log.window_end_s == pytest.approx(2.05)
    # arrivals at 0.2 .. 2.0 found the lane busy; 0.2 got it at 1.1, the 18 others never did
    assert log.waited == 19 and log.missed == 18 and len(log.start_s) == 2


def test_closed_loop_has_no_arrival_log() -> None:
    schedule, _ = play([chain("t", [0])])
    assert schedule.arrival_log() is None


def test_open_loop_refuses_a_snapshot_start_or_a_warm_up() -> None:
    with pytest.raises(ValueError, match="first request"):
        play([chain("t", [0, 1])], warmup=2, arrivals=Arrivals(1.0))
