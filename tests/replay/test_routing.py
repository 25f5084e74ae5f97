"""replay over several endpoints (client-side routing), over real sockets: one serve-sim with
``--replicas N``, each replica its own ``/replicas/I`` endpoint, engine, cache and
``/metrics``. Every policy routes as declared, each row names its replica, the per-replica
figures equal each replica's own counters, and the routing loss is what the theory says."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.errors import UsageError
from agentx.core.examples import example_path
from agentx.core.models import Exchange
from agentx.core.record import RequestRecord
from agentx.metrics.prometheus.parse import parse_prometheus
from agentx.replay import ReplayOptions, run_replay
from agentx.replay.finish import ReplayResult
from agentx.results.summary import Summary
from agentx.routing import Route
from agentx.routing.ring import HashRing
from agentx.serve_sim import SimConfig, SimServer

from .factory import chat_session, write

EXAMPLE = example_path("example")
FAST = {"prefill_tps": 2e6, "decode_tps": 2e4, "overhead_ms": 0.5, "batch_slowdown": 0.0}


def disjoint_trace(tmp_path: Path, sessions: int = 6, turns: int = 4) -> Path:
    """Sessions that share nothing, not even the system prompt: each leads with its own id."""
    exchanges: list[Exchange] = []
    for i in range(sessions):
        sid = f"s{i}"
        for ex in chat_session(sid, turns=turns, start_ns=1_700_000_000_000_000_000 + i):
            assert isinstance(ex.request, dict)
            messages = [dict(m) for m in ex.request["messages"]]
            messages[0]["content"] = f"session {sid} alone. " + str(messages[0]["content"])
            exchanges.append(dataclasses.replace(ex, request={**ex.request, "messages": messages}))
    return write(tmp_path / "disjoint.parquet", exchanges)


def replay(
    tmp_path: Path,
    srv: SimServer,
    replicas: int,
    route: str,
    trace: Path,
    name: str,
    **kw: Any,
) -> ReplayResult:
    values: dict[str, Any] = {
        "concurrency": 1,
        "time_scale": 0.0,
        "progress": False,
        "seed": 7,
        **kw,
    }
    return run_replay(
        ReplayOptions.of(
            trace=trace,
            endpoint=[srv.replica_url(i) for i in range(replicas)],
            route=route,
            output_dir=tmp_path / name,
            **values,
        )
    )


def sent(result: ReplayResult) -> list[RequestRecord]:
    return sorted((r for r in result.records if not r.warmup), key=lambda r: r.sent_ns)


@pytest.fixture(scope="module")
def three() -> Any:
    cfg = SimConfig.of(port=0, replicas=3, kv_tokens=1 << 20, **FAST)
    with SimServer(cfg) as srv:
        yield srv


def test_round_robin_alternates_per_request_and_loses_what_session_keeps(
    tmp_path: Path, three: SimServer
) -> None:
    trace = disjoint_trace(tmp_path)
    rr = replay(tmp_path, three, 2, "round-robin", trace, "rr")
    replicas = [r.replica for r in sent(rr)]
    assert replicas == [i % 2 for i in range(len(replicas))]
    rr_routing = rr.summary.routing
    assert rr_routing is not None and rr_routing.loss_points is not None
    assert rr_routing.loss_points > 5  # each turn lands where its conversation is not

    session = replay(tmp_path, three, 2, "session", trace, "session")
    routing = session.summary.routing
    assert routing is not None
    assert routing.loss_points == 0  # trees that share nothing lose nothing kept together
    assert routing.theoretical_hit_rate == routing.replica_theoretical_hit_rate
    assert routing.policy == "session" and routing.replicas == 2


def test_session_keeps_a_tree_on_its_ring_replica_and_a_new_replica_takes_only_moved_trees(
    tmp_path: Path, three: SimServer
) -> None:
    trace = disjoint_trace(tmp_path, sessions=12, turns=2)
    placed: dict[int, dict[str, int]] = {}
    for n in (2, 3):
        result = replay(tmp_path, three, n, "session", trace, f"session-{n}")
        trees: dict[str, set[int | None]] = defaultdict(set)
        for r in sent(result):
            trees[r.session_id].add(r.replica)
        assert all(len(v) == 1 for v in trees.values())  # one replica per tree
        placed[n] = {t: next(iter(v)) or 0 for t, v in trees.items()}
        ring = HashRing(n)
        assert placed[n] == {t: ring.replica_of(t) for t in trees}
    moved = [t for t in placed[2] if placed[2][t] != placed[3][t]]
    assert all(placed[3][t] == 2 for t in moved)  # to the new replica, nowhere else


def test_random_is_reproducible_by_seed(tmp_path: Path, three: SimServer) -> None:
    trace = disjoint_trace(tmp_path)
    a = [r.replica for r in sent(replay(tmp_path, three, 3, "random", trace, "ra"))]
    b = [r.replica for r in sent(replay(tmp_path, three, 3, "random", trace, "rb"))]
    c = [r.replica for r in sent(replay(tmp_path, three, 3, "random", trace, "rc", seed=8))]
    assert a == b
    assert a != c
    assert set(a) == {0, 1, 2}


def test_least_loaded_spreads_what_is_in_flight(tmp_path: Path, three: SimServer) -> None:
    trace = disjoint_trace(tmp_path)
    result = replay(tmp_path, three, 2, "least-loaded", trace, "ll", concurrency=4)
    routing = result.summary.routing
    assert routing is not None
    counts = [f.requests or 0 for f in routing.per_replica]
    assert min(counts) > 0 and sum(counts) == len(sent(result))


def test_prefix_sends_a_turn_where_its_conversation_went(tmp_path: Path, three: SimServer) -> None:
    trace = disjoint_trace(tmp_path)
    result = replay(tmp_path, three, 2, "prefix", trace, "prefix")
    trees: dict[str, set[int | None]] = defaultdict(set)
    for r in sent(result):
        trees[r.session_id].add(r.replica)
    assert all(len(v) == 1 for v in trees.values())
    assert {next(iter(v)) for v in trees.values()} == {0, 1}  # new trees spread
    routing = result.summary.routing
    assert routing is not None and routing.loss_points == 0


def _counters(url: str) -> tuple[float, float]:
    text = httpx.get(url + "/metrics").text
    samples = parse_prometheus(text)
    values: dict[str, float] = defaultdict(float)
    for s in samples:
        values[s.name] += s.value
    return values["vllm:prefix_cache_queries_total"], values["vllm:prefix_cache_hits_total"]


def test_per_replica_metrics_hit_rate_is_each_replicas_own_counters(tmp_path: Path) -> None:
    trace = disjoint_trace(tmp_path)
    cfg = SimConfig.of(port=0, replicas=2, kv_tokens=1 << 20, **FAST)
    with SimServer(cfg) as srv:  # fresh: its counters are this run's alone (no preflight)
        result = replay(tmp_path, srv, 2, "round-robin", trace, "metrics", preflight=False)
        pages = [_counters(srv.replica_url(i)) for i in range(2)]
        urls = [srv.replica_url(i) for i in range(2)]
    routing = result.summary.routing
    assert routing is not None
    for figures, (queries, hits) in zip(routing.per_replica, pages, strict=True):
        assert queries > 0
        assert figures.metrics_hit_rate == pytest.approx(hits / queries)
        assert figures.hit_rate == pytest.approx(figures.metrics_hit_rate)
        assert figures.endpoint == urls[figures.replica]
    assert result.summary.cache.server_metrics_hit_rate == pytest.approx(
        sum(h for _, h in pages) / sum(q for q, _ in pages)
    )


def test_rows_name_their_replica_and_the_summary_reads_back(
    tmp_path: Path, three: SimServer
) -> None:
    trace = disjoint_trace(tmp_path)
    result = replay(tmp_path, three, 2, "session", trace, "rows")
    assert all(r.replica in (0, 1) for r in result.records)
    assert all(r.replica_theoretical_hit_tokens is not None for r in result.records)
    on_disk = Summary.from_json(
        __import__("orjson").loads((tmp_path / "rows" / "summary.json").read_bytes())
    )
    assert on_disk.routing == result.summary.routing
    assert on_disk.to_json()["routing"]["per_replica"][0].keys() >= {
        "replica",
        "endpoint",
        "requests",
        "hit_rate",
        "metrics_hit_rate",
        "theoretical_hit_rate",
        "eviction_loss_points",
        "kv_usage_peak",
    }


def test_one_endpoint_has_no_routing_block_nor_new_config_keys(
    tmp_path: Path, three: SimServer
) -> None:
    trace = disjoint_trace(tmp_path, sessions=2, turns=2)
    result = run_replay(
        ReplayOptions.of(
            trace=trace,
            endpoint=three.replica_url(0),
            time_scale=0.0,
            progress=False,
            output_dir=tmp_path / "one",
        )
    )
    body = result.summary.to_json()
    assert "routing" not in body
    assert not {"endpoints", "route", "replica_metrics"} & set(body["config"])
    assert all(r.replica is None for r in result.records)


def test_several_endpoints_take_no_metrics_url() -> None:
    with pytest.raises(UsageError, match="--metrics-url names one server"):
        ReplayOptions.of(
            trace=Path("t.parquet"),
            endpoint=["http://127.0.0.1:1", "http://127.0.0.1:2"],
            metrics_url="http://127.0.0.1:3/metrics",
        )
    with pytest.raises(UsageError, match="given twice"):
        ReplayOptions.of(trace=Path("t.parquet"), endpoint=["http://a:1", "http://a:1"])


def test_reset_cache_resets_every_replica(tmp_path: Path) -> None:
    """Three runs of the same trace (no marker): each one with --reset-cache starts both
    replicas cold, so each replica hits what it did the first time; without the reset the
    second replica finds the previous run's blocks."""
    trace = disjoint_trace(tmp_path, sessions=4, turns=2)
    cfg = SimConfig.of(port=0, replicas=2, kv_tokens=1 << 20, **FAST)
    runs: dict[str, list[float | None]] = {}
    with SimServer(cfg) as srv:
        for name, reset in (("cold", True), ("reset", True), ("warm", False)):
            result = replay(
                tmp_path, srv, 2, "round-robin", trace, name, salt=False, reset_cache=reset
            )
            routing = result.summary.routing
            assert routing is not None
            runs[name] = [f.hit_rate for f in routing.per_replica]
            assert result.summary.config.get("cache_reset") == (
                "/reset_prefix_cache" if reset else None
            )
            assert not any("reset" in w for w in result.warnings)
    assert runs["reset"] == runs["cold"]
    assert all(
        w is not None and c is not None and w > c
        for w, c in zip(runs["warm"], runs["cold"], strict=True)
    )


def _page(url: str) -> dict[str, float]:
    values: dict[str, float] = defaultdict(float)
    for s in parse_prometheus(httpx.get(url).text):
        values[s.name] += s.value
    return values


def test_replica_metrics_behind_the_router_are_each_replicas_own(tmp_path: Path) -> None:
    """One endpoint, serve-sim's session router over two replicas, the vllm-router preset's
    X-Session-ID on every request: the summary's per-replica /metrics figures are each
    replica's own counters, and each replica served the trees the router's ring gives it."""
    cfg = SimConfig.of(port=0, replicas=2, router=Route.SESSION, kv_tokens=1 << 20, **FAST)
    with SimServer(cfg) as srv:  # fresh: its counters are this run's alone (no preflight)
        pages = [srv.replica_url(i) + "/metrics" for i in range(2)]
        result = run_replay(
            ReplayOptions.of(
                trace=EXAMPLE,
                endpoint=srv.url,
                session_header="vllm-router",
                replica_metrics=pages,
                concurrency=2,
                time_scale=0.0,
                preflight=False,
                progress=False,
                output_dir=tmp_path / "behind",
            )
        )
        counters = [_page(url) for url in pages]
    routing = result.summary.routing
    assert routing is not None and routing.policy == "server" and routing.replicas == 2
    assert routing.loss_points is None  # the rows name no replica: unknown, not 0
    assert all(r.replica is None for r in result.records)
    ring = HashRing(2)
    served = [0, 0]
    for r in result.records:
        served[ring.replica_of(r.session_id)] += 1
    for figures, page, url, n in zip(routing.per_replica, counters, pages, served, strict=True):
        queries, hits = (
            page["vllm:prefix_cache_queries_total"],
            page["vllm:prefix_cache_hits_total"],
        )
        assert queries > 0
        assert figures.metrics_hit_rate == pytest.approx(hits / queries)
        assert figures.prompt_tokens == page["vllm:prompt_tokens_total"]
        assert figures.endpoint == url and figures.requests is None
        assert page["vllm:request_success_total"] == n  # the trees the ring sent there
    assert min(served) > 0 and sum(served) == len(result.records)
    prompts = [p["vllm:prompt_tokens_total"] for p in counters]
    assert routing.imbalance.prompt_tokens_max_over_mean == pytest.approx(
        max(prompts) / (sum(prompts) / 2)
    )
    assert routing.imbalance.requests_max_over_mean is None  # the router's choice is not seen
    total_q = sum(p["vllm:prefix_cache_queries_total"] for p in counters)
    total_h = sum(p["vllm:prefix_cache_hits_total"] for p in counters)
    assert result.summary.cache.server_metrics_hit_rate == pytest.approx(total_h / total_q)
    on_disk = orjson.loads((tmp_path / "behind" / "summary.json").read_bytes())
    assert on_disk["config"]["replica_metrics"] == pages
    assert on_disk["routing"]["endpoints"] == pages


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--endpoint", "http://127.0.0.1:2", "--replica-metrics", "http://127.0.0.1:3/metrics"],
            "--replica-metrics is for one --endpoint that is a server-side router",
        ),
        (["--replica-metrics", "127.0.0.1:3/metrics"], "--replica-metrics"),
        (["--replica-metrics", "ftp://127.0.0.1:3/metrics"], "--replica-metrics"),
        (["--replica-metrics", "http://user:pw@127.0.0.1:3/metrics"], "credentials in a URL"),
    ],
)
def test_replica_metrics_refusals_are_one_line(
    extra: list[str], message: str, tmp_path: Path
) -> None:
    res = CliRunner().invoke(
        app,
        [
            "replay",
            str(EXAMPLE),
            "--endpoint",
            "http://127.0.0.1:1",
            "-o",
            str(tmp_path / "o"),
            *extra,
        ],
    )
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    assert message in out and "Traceback" not in out and "pw" not in out
    assert len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
