"""``agentx dataset pack``: the layout, read by the real ``datasets`` library, config by config;
the card and manifest describe what is there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentx.core.flags import FLAG_SUBAGENT
from agentx.dataset.card import STATS_BEGIN, STATS_END, render_card, stats_block
from agentx.dataset.layout import DEFAULT_CONFIG, MOONCAKE_FILE, WEKA_FILE
from agentx.dataset.pack import packed_paths, sha256_of
from agentx.results.dataset import MANIFEST, Manifest
from agentx.store import iter_exchanges
from agentx.workload.stats import compute_stats


def manifest_of(directory: Path) -> Manifest:
    return Manifest.from_json(json.loads((directory / MANIFEST).read_text()))


def test_the_layout_and_every_file_in_the_manifest(packed: Path) -> None:
    m = manifest_of(packed)
    names = {c.name for c in m.configs}
    assert {"all", "main", "context-256k", "weka", "mooncake"} <= names
    assert {"agent-claude-code", "agent-codex", "agent-opencode"} <= names  # several agents
    assert (packed / WEKA_FILE).is_file() and (packed / MOONCAKE_FILE).is_file()
    assert m.config("all").files == ("data/all/train-00000-of-00001.parquet",)
    listed = {f.path: f for f in m.files}
    assert set(listed) == set(packed_paths(packed))  # every file but the manifest itself
    for name, entry in listed.items():
        assert sha256_of(packed / name) == entry.sha256
        assert (packed / name).stat().st_size == entry.size_bytes
    assert all((packed / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in m.plots)
    assert len(m.plots) == 5


def test_datasets_loads_the_directory_and_each_config(packed: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    m = manifest_of(packed)
    whole = datasets.load_dataset(str(packed), cache_dir=str(tmp_path / "cache"))
    assert whole["train"].num_rows == m.config(DEFAULT_CONFIG).rows  # the default config
    assert set(datasets.get_dataset_config_names(str(packed))) == {c.name for c in m.configs}
    for cfg in m.configs:
        rows = datasets.load_dataset(
            str(packed), cfg.name, split="train", cache_dir=str(tmp_path / "cache")
        )
        assert rows.num_rows == cfg.rows, cfg.name
    cache = str(tmp_path / "c")
    weka = datasets.load_dataset(str(packed), "weka", split="train", cache_dir=cache)
    assert {"id", "requests", "block_size", "hash_id_scope"} <= set(weka.column_names)
    # the weka config's rows are what datasets itself makes of traces.jsonl (its requests
    # mix records and subagent entries: JSON each), so a hub loader gets either the same
    lines = datasets.load_dataset(
        "json", data_files=str(packed / WEKA_FILE), split="train", cache_dir=cache
    )
    assert weka.features == lines.features
    assert weka.to_list() == lines.to_list()


def test_configs_hold_the_rows_they_say(packed: Path) -> None:
    m = manifest_of(packed)
    rows = {c.name: list(iter_exchanges(packed / "data" / c.name)) for c in m.configs[:6]}
    everything = rows["all"]
    assert any(FLAG_SUBAGENT in ex.flags for ex in everything)
    assert [ex.request_id for ex in rows["main"]] == [
        ex.request_id for ex in everything if FLAG_SUBAGENT not in ex.flags
    ]
    assert {ex.agent for ex in rows["agent-codex"]} == {"codex"}
    assert len(rows["context-256k"]) == len(everything)  # the example's contexts are small
    for name, exs in rows.items():
        cfg = m.config(name)
        assert cfg is not None and cfg.rows == len(exs)
        assert cfg.sessions == len({ex.session_id for ex in exs})


def test_a_small_context_limit_keeps_whole_sessions(shareable: Path, tmp_path: Path) -> None:
    from agentx.dataset.options import PackOptions
    from agentx.dataset.pack import pack

    m = pack([shareable], tmp_path / "d", PackOptions(context_configs=(6000,), plots=False))
    kept = list(iter_exchanges(tmp_path / "d" / "data" / "context-6000"))
    every = list(iter_exchanges(tmp_path / "d" / "data" / "all"))
    sessions = {ex.session_id for ex in kept}
    assert 0 < len(sessions) < len({ex.session_id for ex in every})
    assert [ex.request_id for ex in kept] == [
        ex.request_id for ex in every if ex.session_id in sessions
    ]
    assert m.plots == () and not (tmp_path / "d" / "plots").exists()


def test_the_card_is_the_manifest_rendered(packed: Path) -> None:
    m = manifest_of(packed)
    card = (packed / "README.md").read_text()
    assert card == render_card(m)
    assert card.startswith('---\nlicense: "apache-2.0"\npretty_name: "agentx example"\n')
    for key in ("task_categories:", "tags:", "size_categories:", "configs:", "default: true"):
        assert key in card.split("\n---\n", 1)[0]
    block = card[card.index(STATS_BEGIN) : card.index(STATS_END) + len(STATS_END)] + "\n"
    assert block == stats_block(m)
    for heading in ("## Schema", "## Privacy", "## Replay", "## Citation", "## Plots"):
        assert heading in card
    assert "milliseconds" in card and "**seconds**" in card and "nanoseconds" in card


def test_the_statistics_are_agentx_stats_of_the_default_config(packed: Path) -> None:
    m = manifest_of(packed)
    direct = compute_stats(packed / "data" / "all").to_json()
    via_dir = compute_stats(packed).to_json()  # the packed directory reads as its default config
    for got in (direct, via_dir):
        got.pop("trace")
        assert got.pop("format") == "agentx"
        assert got == m.stats.to_json()
    assert m.privacy.text == "synthetic" and m.privacy.anonymized_by == "agentx.anonymize/1"
    assert m.privacy.secret_scan.found == 0 and m.privacy.secret_scan.files >= 7
    assert m.figures.hit_rate_by_turn[0].turn == 0
    assert sum(t.requests for t in m.figures.hit_rate_by_turn) == m.stats.requests


def test_an_output_that_is_not_free_is_refused(shareable: Path, packed: Path) -> None:
    from agentx.core.errors import UsageError
    from agentx.dataset.pack import pack

    with pytest.raises(UsageError, match="--force"):
        pack([shareable], packed)
    with pytest.raises(UsageError, match="no packed dataset"):
        pack([shareable], shareable.parent)


def test_context_config_names_say_their_limit() -> None:
    from agentx.dataset.layout import tokens_label
    from agentx.dataset.options import parse_context_list

    assert parse_context_list("256Ki,1Mi") == (262_144, 1_048_576)
    assert parse_context_list("none") == ()
    assert [tokens_label(n) for n in (262_144, 1_048_576, 131_072)] == ["256k", "1m", "128k"]
    assert tokens_label(256_000) == "256000"  # 250 x 1024: never labelled 250k or 256k
