"""simulate --replicas N --route P: one engine per replica on replay's timeline, each request
where the policy (replay's own, agentx.routing) sends it; the routing loss from the theory's
per-replica caches."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.errors import UsageError
from agentx.core.examples import example_path
from agentx.prefixcache.engine import EngineParams
from agentx.prefixcache.hashing import make_hasher
from agentx.results.simulate import ReplaySimulation
from agentx.routing import Route, make_router
from agentx.schedule import ScheduleOptions
from agentx.simulate import SimulateOptions, run_simulate
from agentx.simulate.prompts import PromptSource
from agentx.simulate.replayed import run_engine
from agentx.simulate.schedule import SharedSchedule
from agentx.workload.build import BuildConfig
from agentx.workload.plan import build_plan
from agentx.workload.source import open_source

EXAMPLE = example_path("example")
runner = CliRunner()
SCHEDULE = ScheduleOptions(concurrency=4, time_scale=0)


def _source() -> tuple[PromptSource, object]:
    plan = build_plan(open_source(EXAMPLE))
    src = PromptSource(
        BuildConfig("chat", "m", {}, True, False), make_hasher(None, 16), plan.source
    )
    return src, plan


def _run(route: Route | None, replicas: int, kv_tokens: int = 12_000):  # type: ignore[no-untyped-def]
    src, plan = _source()
    sched = SharedSchedule(plan.sessions, SCHEDULE)  # type: ignore[attr-defined]
    router = None if route is None else make_router(route, replicas)
    return run_engine(sched, src, EngineParams(block_size=16, kv_tokens=kv_tokens), router=router)


def test_one_replica_behind_a_router_is_the_engine_alone() -> None:
    alone = _run(None, 1)
    routed = _run(Route.PREFIX, 1)
    key = [
        (r.seq, r.sent_s, r.first_token_s, r.end_s, r.gpu_hit_tokens, r.theoretical_hit_tokens)
        for r in alone.records
    ]
    assert key == [
        (r.seq, r.sent_s, r.first_token_s, r.end_s, r.gpu_hit_tokens, r.theoretical_hit_tokens)
        for r in routed.records
    ]
    assert all(r.replica_theoretical_hit_tokens == r.theoretical_hit_tokens for r in routed.records)


@pytest.mark.parametrize("route", list(Route))
def test_each_replica_has_its_own_cache_and_theory(route: Route) -> None:
    run = _run(route, 2, kv_tokens=1 << 40)
    assert run.replicas == 2 and {r.replica for r in run.records} == {0, 1}
    # unbounded caches: what each replica served is what its own theoretical cache held
    assert all(r.cached_tokens == r.replica_theoretical_hit_tokens for r in run.records)
    assert all(
        r.replica_theoretical_hit_tokens is not None
        and r.replica_theoretical_hit_tokens <= r.theoretical_hit_tokens
        for r in run.records
    )


def test_session_routing_keeps_a_tree_on_one_replica() -> None:
    run = _run(Route.SESSION, 3)
    home: dict[str, int] = {}
    for r in run.records:
        assert home.setdefault(r.session_id, r.replica) == r.replica


def test_a_seeded_random_route_is_reproducible() -> None:
    a, b = _run(Route.RANDOM, 2), _run(Route.RANDOM, 2)
    assert {r.seq: r.replica for r in a.records} == {r.seq: r.replica for r in b.records}


def _simulate(route: Route, replicas: int) -> ReplaySimulation:
    o = SimulateOptions.of(
        trace=EXAMPLE, replicas=replicas, route=route, kv_blocks=(800,), concurrency=4
    )
    data = run_simulate(o).data
    assert isinstance(data, ReplaySimulation)
    return data


def test_routing_loss_by_policy_session_beats_round_robin() -> None:
    rr = _simulate(Route.ROUND_ROBIN, 2)
    session = _simulate(Route.SESSION, 2)
    for d in (rr, session):
        assert d.routing is not None and d.routing.replicas == 2
        assert d.routing.theoretical_hit_rate == pytest.approx(d.theoretical_hit_rate)
        assert d.routing.loss_points is not None and d.routing.loss_points >= 0
        assert sum(r.requests for r in d.routing.per_replica) == d.requests
        point = d.points[0]
        assert point.run is not None and len(point.run.replicas) == 2
        assert point.run.ttft_p50_s is not None and point.run.ttft_p50_s > 0
    assert rr.routing is not None and session.routing is not None
    assert rr.routing.loss_points is not None and session.routing.loss_points is not None
    assert session.routing.loss_points < rr.routing.loss_points
    assert session.points[0].hit_rate > rr.points[0].hit_rate


def test_one_replica_writes_no_routing_keys() -> None:
    d = _simulate(Route.SESSION, 1)
    out = d.to_json()
    assert "routing" not in out
    assert not {"replicas", "ttft_p50_s"} & set(out["points"][0])


def test_replicas_need_the_replay_timeline() -> None:
    with pytest.raises(UsageError, match="--replicas"):
        SimulateOptions.of(trace=EXAMPLE, replicas=2, timeline="recorded")
    with pytest.raises(UsageError, match="at least 1"):
        SimulateOptions.of(trace=EXAMPLE, replicas=0)


def test_cli_replicas_and_route() -> None:
    res = runner.invoke(
        app,
        ["simulate", str(EXAMPLE), "--replicas", "2", "--route", "prefix", "--kv-blocks", "800"],
    )
    assert res.exit_code == 0, res.output
    assert "routing loss" in res.output and "prefix over 2 replicas" in res.output
    res = runner.invoke(
        app,
        ["simulate", str(EXAMPLE), "--replicas", "2", "--route", "sticky", "--json"],
    )
    assert res.exit_code == 2
    res = runner.invoke(
        app,
        ["simulate", str(EXAMPLE), "--replicas", "2", "--kv-blocks", "800", "--json"],
    )
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["routing"]["policy"] == "session"  # the default: keep a tree together
