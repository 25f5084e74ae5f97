"""The gate: a planted secret, original text without --with-text and rows scrub would drop are
refused, each with its reason and row, and nothing is written."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from agentx.core.examples import example_path
from agentx.dataset.gate import GateRefused
from agentx.dataset.options import PackOptions
from agentx.dataset.pack import pack
from agentx.scrub.secrets import SecretRedactor
from agentx.store import read_trace, write_trace

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def test_a_planted_secret_is_refused_with_its_row(shareable: Path, tmp_path: Path) -> None:
    rows = read_trace(shareable)
    victim = rows[7]
    body = dict(victim.request)
    messages = list(body["messages"])
    messages[-1] = {**messages[-1], "content": f"deploy with {GITHUB_TOKEN} please"}
    rows[7] = replace(victim, request={**body, "messages": messages})
    planted = tmp_path / "planted.parquet"
    write_trace(planted, rows, metadata={"anonymized_by": "agentx.anonymize/1"})
    out = tmp_path / "out"
    with pytest.raises(GateRefused) as refused:
        pack([planted], out)
    message = str(refused.value)
    assert f"request {victim.request_id}" in message
    assert "a secret (github_token) in request.messages[" in message
    assert GITHUB_TOKEN not in message and GITHUB_TOKEN[4:] not in message
    assert refused.value.count >= 1
    assert not out.exists() and not any(p.name.startswith(".out") for p in tmp_path.iterdir())


def test_original_text_needs_with_text(scrubbed: Path, tmp_path: Path) -> None:
    with pytest.raises(GateRefused, match=r"original text \(pack it only with --with-text"):
        pack([scrubbed], tmp_path / "refused")
    m = pack([scrubbed], tmp_path / "ok", PackOptions(with_text=True, plots=False))
    assert m.privacy.text == "original" and m.privacy.scrubbed_by == "agentx.scrub/1"


def test_rows_scrub_would_drop_are_refused_with_the_rule(tmp_path: Path) -> None:
    with pytest.raises(GateRefused) as refused:
        pack([example_path("example")], tmp_path / "out", PackOptions(with_text=True))
    assert "request S1/title-00 (session S1): scrub would drop it (side_call:" in str(refused.value)
    assert "original text" not in str(refused.value)  # --with-text given


def test_hash_only_rows_pass_without_with_text(tmp_path: Path) -> None:
    m = pack([example_path("weka")], tmp_path / "weka", PackOptions(plots=False))
    assert m.privacy.text == "none"
    assert m.captured.first_date is None  # Weka's t is an offset, not a date


def test_find_names_secrets_and_never_a_placeholder() -> None:
    r = SecretRedactor()
    text = f"a {GITHUB_TOKEN} b"
    ((family, start, end),) = r.find(text)
    assert family == "github_token" and text[start:end] == GITHUB_TOKEN[4:]
    assert r.find(r.text(text)) == []  # what scrub leaves is no finding
