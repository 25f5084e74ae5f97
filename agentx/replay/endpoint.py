"""Before the run: is the endpoint there, what does it serve, what is it?

One probe of ``/v1/models`` (and of the Prometheus page) answers: the default model, whether
the server honours ``ignore_eos`` (vLLM, SGLang, serve-sim), and its prefix-cache block size
when it publishes one. An unreachable endpoint fails here with one clear line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx
import orjson

from agentx.apis import FAMILIES
from agentx.core.errors import EndpointError
from agentx.core.urls import redact_url, redact_urls_in
from agentx.metrics.prometheus.capacity import capacity_from_metrics
from agentx.metrics.prometheus.parse import parse_prometheus
from agentx.replay.client import classify, default_ca_bundle, tls_problem
from agentx.results.summary.identity import InfoMetric, ServedModel, ServerIdentity

# owned_by of /v1/models -> server kind. These honour ignore_eos / min_tokens.
KNOWN_OWNERS = {"vllm": "vllm", "sglang": "sglang", "agentx": "serve-sim"}
IGNORE_EOS_SERVERS = frozenset({"vllm", "sglang", "serve-sim"})
MAX_INFO_METRICS = 32  # a /metrics page's info gauges kept, at most
MAX_LABEL_CHARS = 200  # a label value longer than this is cut (a path, a JSON config)
VERSION_TIMEOUT_S = 3.0  # /version is optional: a server without it costs no more than this
_BLOCK_SIZE = re.compile(r'^[a-zA-Z_:]*cache_config_info\{[^}]*\bblock_size="(\d+)"', re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ServerInfo:
    models: tuple[str, ...]
    kind: str  # vllm | sglang | serve-sim | unknown
    server_header: str | None
    block_size: int | None  # prefix-cache block size the server publishes
    metrics_text: bool  # the metrics URL answered with Prometheus text
    kv_tokens: int | None = None  # the KV cache it states (vLLM's cache_config_info), in tokens
    version: str | None = None  # what /version answers (vLLM, serve-sim; SGLang's server info)
    served: tuple[ServedModel, ...] = ()  # /v1/models with owner and context length
    info: tuple[InfoMetric, ...] = ()  # the *_info gauges of /metrics: build and config facts

    def identity(self) -> ServerIdentity:
        """The server as ``summary.json`` records it (``server_identity``)."""
        return ServerIdentity(self.kind, self.version, self.server_header, self.served, self.info)


# paths a user may paste whole as --endpoint (a request's own URL): what is before them is the
# base URL; every family's request path, and the two other OpenAI routes people copy
API_PATHS = (
    *sorted({f.serve_path for f in FAMILIES.values() if "{" not in f.serve_path}),
    "/v1/completions",
    "/v1/models",
)


def _api_path(path: str) -> str | None:
    """The API path ``path`` ends with (``/v1/chat/completions``...), if any."""
    return next((p for p in API_PATHS if path.endswith(p)), None)


def split_endpoint(endpoint: str) -> tuple[str, dict[str, str]]:
    """``http://host:8000/v1?api_key=K`` -> (``http://host:8000``, ``{"api_key": "K"}``): the
    root the API paths go under, and the query parameters sent with every request. A request's
    whole URL (``.../v1/chat/completions``) stands for its base URL (:func:`endpoint_note`)."""
    parts = urlsplit(endpoint)
    path = parts.path.rstrip("/")
    suffix = _api_path(path)
    if suffix is not None:
        path = path[: -len(suffix)]
    elif path.endswith("/v1"):
        path = path[: -len("/v1")]
    root = urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    return root, dict(parse_qsl(parts.query, keep_blank_values=True))


def endpoint_note(endpoint: str) -> str | None:
    """What to tell a user who gave a request's whole URL as ``--endpoint``."""
    suffix = _api_path(urlsplit(endpoint).path.rstrip("/"))
    if suffix is None:
        return None
    root = redact_url(split_endpoint(endpoint)[0])
    return (
        f"--endpoint ends in {suffix}: agentx takes the base URL, {root}, and picks each "
        "request's path itself (--api)"
    )


def check_model(info: ServerInfo, model: str, endpoint: str) -> None:
    """Refuse a ``--model`` the server does not list on ``/v1/models`` (when it lists any)."""
    if info.models and model not in info.models:
        listed = ", ".join(info.models[:20]) + (" ..." if len(info.models) > 20 else "")
        raise EndpointError(
            f"{redact_url(endpoint)} does not serve --model {model}: /v1/models lists {listed} "
            "(--no-preflight skips this check, for a gateway that takes other names)"
        )


def base_url(endpoint: str) -> str:
    """``http://host:8000`` and ``http://host:8000/v1`` (with or without a slash) -> the root."""
    return split_endpoint(endpoint)[0]


def default_metrics_url(endpoint: str) -> str:
    return base_url(endpoint) + "/metrics"


def block_size_from_metrics(text: str) -> int | None:
    m = _BLOCK_SIZE.search(text)
    return int(m.group(1)) if m else None


async def probe(
    client: httpx.AsyncClient,
    endpoint: str,
    metrics_url: str | None,
    metrics_client: httpx.AsyncClient | None = None,
    timeout_s: float = 10.0,
) -> ServerInfo:
    """Raises :class:`EndpointError` when the endpoint cannot be reached or refuses us.
    ``metrics_client``: what ``metrics_url`` is read through (default ``client``)."""
    root = base_url(endpoint)
    shown = redact_url(endpoint)
    timeout = httpx.Timeout(timeout_s)
    try:
        resp = await client.get(root + "/v1/models", timeout=timeout)
    except (httpx.HTTPError, OSError) as exc:
        tls = tls_problem(exc)
        if tls is not None:
            raise EndpointError(f"cannot reach {shown}: {_tls_hint(*tls)}") from None
        kind, message = classify(exc, streaming=False)
        why = "connection refused or host unknown" if kind == "connect" else message
        raise EndpointError(f"cannot reach {shown}: {redact_urls_in(why)}") from None
    if resp.status_code in (401, 403):
        raise EndpointError(
            f"{shown} refused the API key (HTTP {resp.status_code}): set --api-key or OPENAI_API_KEY"
        )
    models: tuple[str, ...] = ()
    served: tuple[ServedModel, ...] = ()
    owner: str | None = None
    if resp.status_code == 200:
        try:
            data: Any = orjson.loads(resp.content)
        except orjson.JSONDecodeError:
            data = None
        items = data.get("data") if isinstance(data, dict) else None
        if isinstance(items, list):
            models = tuple(  # an id that is not a non-empty string names no model
                m["id"]
                for m in items
                if isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"]
            )
            owners = [m.get("owned_by") for m in items if isinstance(m, dict)]
            owner = next((str(o) for o in owners if o), None)
            served = served_models(items)
    elif resp.status_code >= 500:
        raise EndpointError(f"{shown} answers HTTP {resp.status_code} on /v1/models")
    server = resp.headers.get("server")
    kind = KNOWN_OWNERS.get((owner or "").lower(), "unknown")
    if kind == "unknown" and server and "sglang" in server.lower():
        kind = "sglang"

    block_size: int | None = None
    kv_tokens: int | None = None
    info: tuple[InfoMetric, ...] = ()
    metrics_ok = False
    if metrics_url:
        try:
            m = await (metrics_client or client).get(metrics_url, timeout=timeout)
            if m.status_code == 200 and b"# TYPE" in m.content[:65536]:
                metrics_ok = True
                block_size = block_size_from_metrics(m.text)
                capacity = capacity_from_metrics(m.text, metrics_url)
                kv_tokens = capacity.tokens if capacity is not None else None
                info = info_metrics(m.text)
        except (httpx.HTTPError, OSError):
            pass
    sglang_info = await _sglang_info(client, root, timeout) if kind == "sglang" else {}
    if block_size is None and kind == "sglang":
        page = sglang_info.get("page_size")
        block_size = page if isinstance(page, int) and page > 0 else None
    version = await _version(client, root)
    if version is None and isinstance(sglang_info.get("version"), str):
        version = sglang_info["version"]
    return ServerInfo(
        models, kind, server, block_size, metrics_ok, kv_tokens, version, served, info
    )


def served_models(items: list[Any]) -> tuple[ServedModel, ...]:
    """The models of a ``/v1/models`` list with what each entry says of itself."""
    out = []
    for m in items:
        if not isinstance(m, dict) or not isinstance(m.get("id"), str) or not m["id"]:
            continue
        owner, limit = m.get("owned_by"), m.get("max_model_len")
        out.append(
            ServedModel(
                m["id"],
                str(owner) if owner else None,
                limit if isinstance(limit, int) and not isinstance(limit, bool) else None,
            )
        )
    return tuple(out)


def info_metrics(text: str) -> tuple[InfoMetric, ...]:
    """The info gauges of a ``/metrics`` page (names ending ``_info``: ``vllm:cache_config_info``,
    SGLang's, ``python_info``), one per name, labels sorted, long values cut."""
    seen: dict[str, InfoMetric] = {}
    for sample in parse_prometheus(text):
        if not sample.name.endswith("_info") or sample.name in seen:
            continue
        labels = tuple(sorted((k, v[:MAX_LABEL_CHARS]) for k, v in sample.labels.items()))
        seen[sample.name] = InfoMetric(sample.name, labels)
        if len(seen) >= MAX_INFO_METRICS:
            break
    return tuple(seen.values())


async def _version(client: httpx.AsyncClient, root: str) -> str | None:
    """What ``/version`` answers (``{"version": "0.32.0"}`` on vLLM), or ``None``."""
    try:
        resp = await client.get(root + "/version", timeout=httpx.Timeout(VERSION_TIMEOUT_S))
        data = orjson.loads(resp.content) if resp.status_code == 200 else None
    except (httpx.HTTPError, OSError, orjson.JSONDecodeError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version[:MAX_LABEL_CHARS] if isinstance(version, str) and version else None


def _tls_hint(words: str, certificate: bool) -> str:
    if not certificate:
        return f"{words}: is it an https server (not http://)?"
    return (
        f"{words}: pass --ca-bundle FILE with the CA that signed it, or --insecure to skip "
        f"verification (trusted by default: {default_ca_bundle()})"
    )


async def _sglang_info(
    client: httpx.AsyncClient, root: str, timeout: httpx.Timeout
) -> dict[str, Any]:
    """SGLang's ``/get_server_info`` (its page size, its version), or nothing."""
    try:
        resp = await client.get(root + "/get_server_info", timeout=timeout)
        data = orjson.loads(resp.content) if resp.status_code == 200 else None
    except (httpx.HTTPError, OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}
