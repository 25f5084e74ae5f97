"""The start-up probe: default model, server kind, block size, clear failures."""

from __future__ import annotations

import pytest

from agentx.core.errors import EndpointError
from agentx.replay.client import make_http_client
from agentx.replay.endpoint import base_url, block_size_from_metrics, probe

from .fault_server import FaultServer

VLLM_METRICS = """# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="128",cache_dtype="auto",enable_prefix_caching="True"} 1.0
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 0.0
"""


@pytest.mark.parametrize(
    "url", ["http://h:8000", "http://h:8000/", "http://h:8000/v1", "http://h:8000/v1/"]
)
def test_base_url(url: str) -> None:
    assert base_url(url) == "http://h:8000"


def test_block_size_from_metrics() -> None:
    assert block_size_from_metrics(VLLM_METRICS) == 128
    assert block_size_from_metrics("# TYPE x counter\nx 1\n") is None


async def test_probe_vllm_like_server() -> None:
    models = [{"id": "tiny", "owned_by": "vllm"}, {"id": "other", "owned_by": "vllm"}]
    with FaultServer(metrics=VLLM_METRICS, models=models) as srv:
        async with make_http_client(srv.url, timeout_s=5, max_connections=2) as client:
            info = await probe(client, srv.url + "/v1", srv.url + "/metrics")
    assert info.models == ("tiny", "other") and info.kind == "vllm"
    assert info.block_size == 128 and info.metrics_text


async def test_probe_without_metrics_and_unknown_server() -> None:
    with FaultServer() as srv:
        async with make_http_client(srv.url, timeout_s=5, max_connections=2) as client:
            info = await probe(client, srv.url, srv.url + "/metrics")
    assert info.kind == "unknown" and info.block_size is None and not info.metrics_text


async def test_probe_rejected_key() -> None:
    with FaultServer(api_key="right") as srv:
        async with make_http_client(srv.url, timeout_s=5, max_connections=2) as client:
            with pytest.raises(EndpointError, match=r"refused the API key .*OPENAI_API_KEY"):
                await probe(client, srv.url, None)
        headers = {"authorization": "Bearer right"}
        async with make_http_client(
            srv.url, timeout_s=5, max_connections=2, headers=headers
        ) as client:
            assert (await probe(client, srv.url, None)).models == ("fault-model",)
