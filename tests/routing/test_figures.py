"""A routed run's figures: the routing loss is the shared cache's hit rate minus the
replicas' own, token-weighted; imbalance is max/mean and CV of each replica's load."""

from __future__ import annotations

import pytest

from agentx.routing.figures import RoutedRequest, imbalance, routing_figures


def test_loss_and_per_replica_rates() -> None:
    rows = [
        RoutedRequest(0, 100, 0, 0),
        RoutedRequest(1, 100, 80, 0),  # its prefix went to replica 0: lost
        RoutedRequest(0, 200, 160, 160),
    ]
    block, by = routing_figures("round-robin", 3, rows)
    assert block.theoretical_hit_rate == pytest.approx(240 / 400)
    assert block.replica_theoretical_hit_rate == pytest.approx(160 / 400)
    assert block.loss_points == pytest.approx(20.0)
    assert [f.requests for f in block.per_replica] == [2, 1, 0]
    assert [f.theoretical_hit_rate for f in block.per_replica] == [
        pytest.approx(160 / 300),
        0.0,
        None,
    ]
    assert [len(b) for b in by] == [2, 1, 0]
    assert block.to_json()["policy"] == "round-robin"


def test_unknown_hits_give_unknown_loss() -> None:
    block, _ = routing_figures("session", 1, [RoutedRequest(0, 10, None, None)])
    assert block.loss_points is None and block.theoretical_hit_rate is None


def test_imbalance() -> None:
    even = imbalance([5, 5], [100, 100])
    assert (even.requests_max_over_mean, even.requests_cv) == (1.0, 0.0)
    skew = imbalance([3, 1], [300, 100])
    assert skew.requests_max_over_mean == pytest.approx(1.5)
    assert skew.prompt_tokens_cv == pytest.approx(0.5)
    idle = imbalance([0, 0], [0, 0])
    assert idle.requests_max_over_mean is None and idle.prompt_tokens_cv is None
