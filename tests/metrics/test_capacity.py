"""A server's KV capacity from its /metrics or its log (--kv-from)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentx.core.errors import AgentxError, UsageError
from agentx.metrics.prometheus.capacity import metrics_url, read_kv_capacity
from agentx.serve_sim import SimConfig, SimServer

V1_CPU = "INFO 12-01 [kv_cache_utils.py:2327] CPU KV cache size: 1,048,576 tokens, Maximum ...\n"
V1_GPU = "INFO [kv_cache_utils.py] GPU KV cache size: 12,288 tokens, Maximum concurrency ...\n"
V0 = "INFO [executor_base.py] # GPU blocks: 2048, # CPU blocks: 512\n"


@pytest.mark.parametrize(
    ("text", "tokens", "blocks"),
    [(V1_CPU, 1_048_576, None), (V1_GPU, 12_288, None), (V1_GPU + V1_CPU, 1_048_576, None)],
)
def test_log_lines_in_tokens(tmp_path: Path, text: str, tokens: int, blocks: int | None) -> None:
    log = tmp_path / "vllm.log"
    log.write_text("noise\n" + text)
    kv = read_kv_capacity(str(log))
    assert (kv.tokens, kv.blocks, kv.block_size) == (tokens, blocks, None)
    assert kv.tokens_at(128) == tokens // 128 * 128


def test_v0_log_needs_a_block_size(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(V0)
    with pytest.raises(AgentxError, match="no '# GPU blocks"):
        read_kv_capacity(str(log))
    log.write_text("engine config: block_size=16\n" + V0)
    kv = read_kv_capacity(str(log))
    assert (kv.tokens, kv.blocks, kv.block_size) == (2048 * 16, 2048, 16)


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        read_kv_capacity(str(tmp_path / "nope.log"))


def test_metrics_page_of_serve_sim_names_blocks_and_block_size() -> None:
    with SimServer(SimConfig.of(port=0, block_size=32, kv_tokens=32 * 77, fast=True)) as srv:
        kv = read_kv_capacity(srv.url + "/v1")
    assert (kv.blocks, kv.block_size, kv.tokens) == (77, 32, 77 * 32)
    assert kv.source.endswith("/metrics")


def test_metrics_url() -> None:
    assert metrics_url("http://h:8000/v1") == "http://h:8000/metrics"
    assert metrics_url("http://h:8000/metrics") == "http://h:8000/metrics"
