"""A server's KV-cache capacity in its own units, read where the server states it, so nobody
converts by hand (``agentx simulate --kv-from``, ``serve-sim --kv-from``).

Sources, in the order they are tried:

* a URL: the server's Prometheus page (``<url>/metrics``): vLLM's ``vllm:cache_config_info``
  gauge carries ``num_gpu_blocks`` and ``block_size`` as labels (serve-sim writes the same);
* a file: a vLLM server log: ``# GPU blocks: N`` (V0), ``GPU KV cache size: N tokens`` or, on
  the CPU build, ``CPU KV cache size: N tokens`` (V1; thousands separators allowed). A log names
  tokens, not blocks; the block size then comes from the caller (``--block-size``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agentx.core.errors import AgentxError, UsageError
from agentx.core.options import Panel, flag
from agentx.metrics.prometheus.parse import parse_prometheus

KV_FROM = flag(
    "--kv-from",
    metavar="URL|FILE",
    panel=Panel.CAPACITY,
    show_default=False,
    help="take the KV capacity (blocks, block size) from a vLLM server: its URL (/metrics "
    "vllm:cache_config_info) or its log file ('# GPU blocks: N', 'KV cache size: N tokens')",
)
_V0_BLOCKS = re.compile(r"# GPU blocks:\s*([\d,]+)")
_V1_TOKENS = re.compile(r"(?:GPU|CPU) KV cache size:\s*([\d,]+)\s*tokens")
_BLOCK_SIZE = re.compile(r"\bblock_size[=:]\s*(\d+)")


@dataclass(frozen=True, slots=True)
class KvCapacity:
    """The KV cache a server has: ``blocks`` of ``block_size`` tokens, or only ``tokens``."""

    tokens: int
    blocks: int | None
    block_size: int | None
    source: str

    def tokens_at(self, block_size: int) -> int:
        """Capacity in tokens for a cache of ``block_size``-token blocks (whole blocks only)."""
        return (self.tokens // block_size) * block_size


def capacity_from_metrics(text: str, source: str) -> KvCapacity | None:
    """The capacity a Prometheus page states (vLLM's ``cache_config_info``), if it states one."""
    for s in parse_prometheus(text, ("vllm:cache_config_info",)):
        labels = s.labels
        blocks = _int(labels.get("num_gpu_blocks"))
        size = _int(labels.get("block_size"))
        if blocks is not None and size:
            return KvCapacity(blocks * size, blocks, size, source)
        tokens = _int(labels.get("kv_cache_size_tokens"))
        if tokens is not None:
            return KvCapacity(tokens, None, size, source)
    return None


def _from_log(text: str, source: str) -> KvCapacity | None:
    size_m = _BLOCK_SIZE.findall(text)
    size = int(size_m[-1]) if size_m else None
    v1 = _V1_TOKENS.findall(text)
    if v1:  # the last start in the log wins
        tokens = int(v1[-1].replace(",", ""))
        return KvCapacity(tokens, tokens // size if size else None, size, source)
    v0 = _V0_BLOCKS.findall(text)
    if v0 and size:
        blocks = int(v0[-1].replace(",", ""))
        return KvCapacity(blocks * size, blocks, size, source)
    return None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "None", "") else None
    except ValueError:
        return None


def metrics_url(url: str) -> str:
    root = url.rstrip("/")
    if root.endswith("/metrics"):
        return root
    return root.removesuffix("/v1") + "/metrics"


def read_kv_capacity(source: str) -> KvCapacity:
    """The capacity stated by a server's ``/metrics`` (URL) or its log (file)."""
    if source.startswith(("http://", "https://")):
        import httpx  # here: the option's declaration above is read by every command line

        url = metrics_url(source)
        try:
            resp = httpx.get(url, timeout=10.0)
            resp.raise_for_status()
        except httpx.HTTPError as exc:
            raise AgentxError(f"--kv-from {url}: {exc}") from None
        found = capacity_from_metrics(resp.text, url)
        what = "no vllm:cache_config_info with num_gpu_blocks and block_size"
    else:
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"--kv-from {source}: {exc.strerror or exc}") from None
        found = _from_log(text, str(path))
        what = "no '# GPU blocks: N' or 'KV cache size: N tokens' line"
    if found is None:
        raise AgentxError(f"--kv-from {source}: {what}")
    return found
