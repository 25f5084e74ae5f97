"""`agentx merge` of shards routed over several replicas, over real sockets: one serve-sim with
``--replicas 2``, the shards of a `replay --endpoint A --endpoint B --route POLICY` split run
one after the other. The merged ``routing`` block is the live run's producer over the merged
rows, each replica's ``/metrics`` counted once from the shards' counters, its theoretical
figures equal to one unsharded run's; shards of other replicas or policies are refused."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest
from replay.factory import T0, chat_session, write
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.errors import UsageError
from agentx.core.models import Exchange
from agentx.core.record import RequestRecord
from agentx.metrics import latency as lat
from agentx.metrics.prometheus.parse import parse_prometheus
from agentx.metrics.replicas import Replicas, replica_routing
from agentx.replay import ReplayOptions, run_replay
from agentx.report.merge import merge_results
from agentx.report.results_dir import load_results
from agentx.results.routing import Routing
from agentx.serve_sim import SimConfig, SimServer

runner = CliRunner()
FAST = {"prefill_tps": 2e6, "decode_tps": 2e4, "overhead_ms": 0.5, "batch_slowdown": 0.0}
SESSIONS = 8  # the session ring puts s0..s7 on both replicas from both shards of 2


def trace(path: Path, sessions: int = SESSIONS, turns: int = 2) -> Path:
    """Sessions that share the system prompt: the shards' replicas share it across shards."""
    exchanges: list[Exchange] = [
        e for i in range(sessions) for e in chat_session(f"s{i}", turns=turns, start_ns=T0 + i)
    ]
    return write(path, exchanges)


def replay(
    srv: SimServer, trace_path: Path, out: Path, route: str, shard: tuple[int, int], **kw: Any
) -> Path:
    values: dict[str, Any] = {
        "endpoint": [srv.replica_url(i) for i in range(2)],
        "route": route,
        "concurrency": 1,
        "time_scale": 0.0,
        "progress": False,
        "salt": False,  # byte-identical prompts: the unsharded run sends what the shards sent
        "preflight": False,  # the shards' /metrics windows hold their own requests only
        "seed": 7,
        **kw,
    }
    run_replay(ReplayOptions.of(trace=trace_path, shard=shard, output_dir=out, **values))
    return out


def counters(url: str) -> tuple[float, float]:
    values: dict[str, float] = defaultdict(float)
    for s in parse_prometheus(httpx.get(url + "/metrics").text):
        values[s.name] += s.value
    return values["vllm:prefix_cache_queries_total"], values["vllm:prefix_cache_hits_total"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("routed")
    t = trace(tmp / "t.parquet")
    small = trace(tmp / "small.parquet", sessions=2, turns=1)
    cfg = SimConfig.of(port=0, replicas=2, kv_tokens=1 << 20, **FAST)
    out: dict[str, Any] = {}
    with SimServer(cfg) as srv:
        urls = [srv.replica_url(i) for i in range(2)]
        before = [counters(u) for u in urls]
        for policy in ("round-robin", "session"):
            out[policy] = [replay(srv, t, tmp / f"{policy}-{i}", policy, (i, 2)) for i in (0, 1)]
            if policy == "round-robin":  # nothing else reached the replicas in between
                out["pages"] = [
                    (q1 - q0, h1 - h0)
                    for (q0, h0), (q1, h1) in zip(before, (counters(u) for u in urls), strict=True)
                ]
        before = [counters(u) for u in urls]
        out["router"] = [  # serve-sim's own router in front, each replica's page scraped
            replay(
                srv,
                t,
                tmp / f"router-{i}",
                "session",
                (i, 2),
                endpoint=srv.url,
                replica_metrics=[u + "/metrics" for u in urls],
            )
            for i in (0, 1)
        ]
        out["router_pages"] = [
            (q1 - q0, h1 - h0)
            for (q0, h0), (q1, h1) in zip(before, (counters(u) for u in urls), strict=True)
        ]
        out["whole"] = replay(srv, t, tmp / "whole", "session", (0, 1))
        out["reversed"] = replay(
            srv, small, tmp / "reversed", "round-robin", (1, 2), endpoint=urls[::-1]
        )
        out["one"] = replay(srv, small, tmp / "one", "round-robin", (1, 2), endpoint=urls[0])
        out["urls"] = urls
    return out


def rows(path: Path) -> list[RequestRecord]:
    return lat.measured(load_results(path)[1])


def routing(path: Path) -> Routing:
    r = load_results(path)[0].routing
    assert r is not None
    return r


def test_the_merged_routing_block_is_the_producers_over_the_merged_rows(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    a, b = runs["round-robin"]
    res = merge_results([a, b], tmp_path / "m")
    merged = res.summary.routing
    assert merged is not None and merged.policy == "round-robin"
    assert merged.endpoints == tuple(runs["urls"])
    on_disk = rows(tmp_path / "m")
    # what a live run computes from these rows (the /metrics figures apart: below)
    expected = replica_routing(Replicas("round-robin", tuple(runs["urls"])), on_disk, None)
    unscraped = {"metrics_hit_rate": None, "kv_usage_peak": None}
    assert [{**r.to_json(), **unscraped} for r in merged.per_replica] == [
        {**r.to_json(), **unscraped} for r in expected.per_replica
    ]
    assert {k: v for k, v in merged.to_json().items() if k != "per_replica"} == {
        k: v for k, v in expected.to_json().items() if k != "per_replica"
    }
    # and what each shard's own rows say, added up
    shard_rows = rows(a) + rows(b)
    for f in merged.per_replica:
        mine = [r for r in shard_rows if r.replica == f.replica]
        assert f.requests == len(mine) > 0
        assert f.errors == 0
        prompt = sum(r.prompt_tokens or 0 for r in mine)
        assert f.hit_rate == pytest.approx(sum(r.cached_tokens or 0 for r in mine) / prompt)
    # the shards' system prompt is shared across shards on each replica: the merged
    # theoretical figures hold what the shards alone could not see
    own = sum(r.replica_theoretical_hit_tokens or 0 for r in shard_rows)
    assert sum(r.replica_theoretical_hit_tokens or 0 for r in on_disk) > own
    assert merged.loss_points is not None and merged.loss_points > 0


def test_each_replicas_metrics_hit_rate_is_its_counters_over_both_shards(
    runs: dict[str, Any],
) -> None:
    merged = merge_results(runs["round-robin"]).summary
    routing_block = merged.routing
    assert routing_block is not None
    shards = [routing(d) for d in runs["round-robin"]]
    for f, (queries, hits) in zip(routing_block.per_replica, runs["pages"], strict=True):
        assert queries > 0
        assert f.metrics_hit_rate == pytest.approx(hits / queries)
        # the gauge's samples of both shards pooled: the peak is the larger shard's
        peaks = [s.per_replica[f.replica].kv_usage_peak for s in shards]
        assert f.kv_usage_peak == max(p for p in peaks if p is not None)
    total_q = sum(q for q, _ in runs["pages"])
    total_h = sum(h for _, h in runs["pages"])
    assert merged.cache.server_metrics_hit_rate == pytest.approx(total_h / total_q)
    assert merged.server is not None and merged.server.replicas is not None
    assert len(merged.server.replicas) == 2


def test_behind_a_router_each_replica_has_its_counters_over_both_shards(
    runs: dict[str, Any],
) -> None:
    merged = merge_results(runs["router"]).summary
    block = merged.routing
    assert block is not None and block.policy == "server"
    assert block.endpoints == tuple(u + "/metrics" for u in runs["urls"])
    for f, (queries, hits) in zip(block.per_replica, runs["router_pages"], strict=True):
        assert f.requests is None  # the rows name no replica: only the pages say
        if queries:
            assert f.metrics_hit_rate == pytest.approx(hits / queries)
            assert f.prompt_tokens == queries  # serve-sim counts each prompt token as a query
    assert any(q for q, _ in runs["router_pages"])
    assert block.loss_points is None


def test_the_merged_theory_equals_one_unsharded_run_over_the_same_replicas(
    runs: dict[str, Any],
) -> None:
    merged = merge_results(runs["session"]).summary.routing
    whole = routing(runs["whole"])
    assert merged is not None
    for key in ("theoretical_hit_rate", "replica_theoretical_hit_rate", "loss_points"):
        assert getattr(merged, key) == pytest.approx(getattr(whole, key)), key
    for m, w in zip(merged.per_replica, whole.per_replica, strict=True):
        assert (m.requests, m.prompt_tokens) == (w.requests, w.prompt_tokens)
        assert m.theoretical_hit_rate == pytest.approx(w.theoretical_hit_rate)


def test_the_merged_directory_reads_back_and_merges_again(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    a, b = runs["round-robin"]
    r = runner.invoke(app, ["merge", str(a), str(b), "-o", str(tmp_path / "m"), "--json"])
    assert r.exit_code == 0, r.output
    block = json.loads(r.stdout)["routing"]
    shown = runner.invoke(app, ["report", str(tmp_path / "m"), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["routing"] == block
    text = runner.invoke(app, ["report", str(tmp_path / "m")])
    assert text.exit_code == 0 and "routing round-robin over 2 replicas" in text.stdout
    again = merge_results([tmp_path / "m"]).summary.routing
    assert again is not None and again.to_json() == block
    page = tmp_path / "m.html"
    shown = runner.invoke(app, ["report", str(tmp_path / "m"), "--html", str(page)])
    assert shown.exit_code == 0, shown.output
    html = page.read_text()
    assert "<h2 id='replicas'>Replicas</h2>" in html
    assert "Hit rate per replica (round-robin routing)" in html
    for f in block["per_replica"]:
        assert f"<title>replica {f['replica']} requests: {f['requests']}</title>" in html


def test_shards_without_per_replica_counters_leave_the_metrics_figures_unknown(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    older = []
    for src in runs["round-robin"]:
        dst = shutil.copytree(src, tmp_path / src.name)
        body = json.loads((dst / "summary.json").read_text())
        del body["server"]["replicas"]
        (dst / "summary.json").write_text(json.dumps(body))
        older.append(dst)
    res = merge_results(older)
    assert any("no per-replica /metrics counters" in w for w in res.warnings)
    block = res.summary.routing
    assert block is not None
    assert all(f.metrics_hit_rate is None and f.kv_usage_peak is None for f in block.per_replica)
    assert all(f.hit_rate is not None for f in block.per_replica)  # the rows still say these


def test_shards_over_other_replicas_or_policies_are_refused(runs: dict[str, Any]) -> None:
    a = runs["round-robin"][0]
    urls = runs["urls"]
    with pytest.raises(UsageError) as e:
        merge_results([a, runs["session"][1]])
    assert "routed round-robin over" in str(e.value) and "routed session over" in str(e.value)
    for other, words in (
        (runs["reversed"], f"[{urls[1]}, {urls[0]}]"),
        (runs["one"], f"sent to one endpoint ({urls[0]})"),
    ):
        r = runner.invoke(app, ["merge", str(a), str(other)])
        assert r.exit_code == 2, r.output
        assert "Traceback" not in r.output
        line = r.output.strip()
        assert f"[{urls[0]}, {urls[1]}]" in line and words in line, line
    r = runner.invoke(app, ["merge", str(runs["one"]), str(a)])  # unrouted first: refused too
    assert r.exit_code == 2 and "sent to one endpoint" in r.output
