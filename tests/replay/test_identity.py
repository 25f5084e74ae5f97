"""What makes runs comparable, as a replay records it: labels, the server's identity (its
``/version``, its models, the info gauges of ``/metrics``), the client host, the trace's
fingerprint."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from agentx.core.errors import UsageError
from agentx.replay import ReplayOptions, run_replay
from agentx.replay.endpoint import info_metrics, served_models
from agentx.replay.options import parse_labels
from agentx.results.summary import Summary
from agentx.results.summary.identity import InfoMetric, ServedModel
from agentx.serve_sim import SimConfig, SimServer
from agentx.store.fingerprint import rows_sha256

from .factory import T0, chat_session, write


def test_labels_parsed_sorted_and_refused_when_malformed() -> None:
    assert parse_labels(["offload=dram", "engine=vllm-0.32"]) == (
        ("engine", "vllm-0.32"),
        ("offload", "dram"),
    )
    assert parse_labels("cfg = a=b ") == (("cfg", "a=b"),)
    for bad in (["engine"], ["=x"], ["a=1", "a=2"], ["a="], ["bad name=1"]):
        with pytest.raises(ValueError):
            parse_labels(bad)
    with pytest.raises(UsageError, match="--label"):
        ReplayOptions.of(trace=Path("t"), endpoint="http://127.0.0.1:1", labels=("x",))


def test_info_gauges_and_models_read_as_the_server_says() -> None:
    text = (
        '# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size="16",'
        'cache_dtype="auto"} 1.0\npython_info{version="3.12.1"} 1.0\n'
        'vllm:cache_config_info{block_size="32"} 1.0\nvllm:num_requests_running 0\n'
    )
    assert info_metrics(text) == (
        InfoMetric("vllm:cache_config_info", (("block_size", "16"), ("cache_dtype", "auto"))),
        InfoMetric("python_info", (("version", "3.12.1"),)),
    )
    items = [{"id": "m", "owned_by": "vllm", "max_model_len": 4096}, {"id": ""}, "x", {"id": "n"}]
    assert served_models(items) == (ServedModel("m", "vllm", 4096), ServedModel("n"))


def test_a_replay_records_what_makes_it_comparable(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.parquet", chat_session("s0", turns=2, start_ns=T0))
    with SimServer(SimConfig.of(port=0, fast=True)) as sim:
        result = run_replay(
            ReplayOptions.of(
                trace=trace,
                endpoint=sim.url,
                time_scale=0.0,
                output_dir=tmp_path / "out",
                progress=False,
                labels=("engine=sim", "offload=none"),
            )
        )
    written = orjson.loads((tmp_path / "out" / "summary.json").read_bytes())
    assert written["labels"] == {"engine": "sim", "offload": "none"}
    assert "labels" not in written["config"]  # the run's own key, not an option among others
    assert written["trace_fingerprint"] == rows_sha256(trace)
    ident = written["server_identity"]
    assert ident["kind"] == "serve-sim" and ident["version"]
    assert ident["models"][0]["max_model_len"] > 0
    assert any(i["name"] == "vllm:cache_config_info" for i in ident["info"])
    assert written["client_host"]["cpus"] >= 1 and written["client_host"]["python"]
    assert Summary.from_json(written) == result.summary
