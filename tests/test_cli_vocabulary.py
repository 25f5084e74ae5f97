"""One vocabulary across commands: every command that writes takes ``-o``/``--output`` (and
``--out``), a concept has one spelling everywhere (``--host``, ``--tokenizer-url``), the names
people know from other tools work (``--url``, ``--target``), every token count takes suffixes,
and each renamed flag keeps its old spelling as a hidden alias that still fills it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

import agentx.capture.runner
import agentx.demo.run
import agentx.serve_sim
from agentx.cli import app
from agentx.core.errors import AgentxError
from agentx.replay.sweep import default_sweep_dir

runner = CliRunner()
COMMANDS = typer.main.get_command(app).commands  # type: ignore[attr-defined]
DEAD = "http://127.0.0.1:9"  # nothing listens there

WRITERS = ["capture", "scrub", "anonymize", "convert", "replay", "sweep", "report", "merge", "demo"]


def _options(command: str) -> list[Any]:
    return [p for p in COMMANDS[command].params if p.param_type_name == "option"]


def _spellings(command: str, *, hidden: bool) -> set[str]:
    return {
        n for p in _options(command) if p.hidden == hidden for n in (*p.opts, *p.secondary_opts)
    }


@pytest.mark.parametrize("command", WRITERS)
def test_every_command_that_writes_takes_o_output_and_out(command: str) -> None:
    (shown,) = [p for p in _options(command) if "-o" in p.opts]
    assert set(shown.opts) == {"-o", "--output"} and not shown.hidden
    assert "--out" in _spellings(command, hidden=True)


# (command, the one spelling shown, an old or borrowed spelling still read, hidden)
ALIASES = [
    ("replay", "--endpoint", "--url"),
    ("replay", "--endpoint", "--target"),
    ("sweep", "--endpoint", "--url"),
    ("capture", "--host", "--listen-host"),
    ("serve-sim", "--host", "--listen-host"),
    ("demo", "--output", "--workdir"),
    ("stats", "--tokenizer-url", "--endpoint"),
    ("simulate", "--tokenizer-url", "--endpoint"),
]


@pytest.mark.parametrize(("command", "name", "alias"), ALIASES)
def test_one_spelling_is_shown_and_the_other_is_a_hidden_alias(
    command: str, name: str, alias: str
) -> None:
    assert name in _spellings(command, hidden=False)
    assert alias in _spellings(command, hidden=True)
    assert alias not in _spellings(command, hidden=False)


@pytest.mark.parametrize("alias", ["--endpoint", "--url", "--target"])
def test_replay_takes_the_server_as_url_and_target(alias: str) -> None:
    r = runner.invoke(app, ["replay", "example", alias, DEAD, "--max-requests", "1"])
    assert r.exit_code == 1 and f"cannot reach {DEAD}" in r.stderr, r.output


def test_replay_without_any_spelling_of_the_endpoint_is_a_usage_error() -> None:
    r = runner.invoke(app, ["replay", "example", "--max-requests", "1"])
    assert r.exit_code == 2 and "Missing option '--endpoint'" in r.output


def test_the_shown_spelling_wins_over_an_alias() -> None:
    r = runner.invoke(app, ["replay", "example", "--url", "ftp://x", "--endpoint", DEAD])
    assert r.exit_code == 1 and f"cannot reach {DEAD}" in r.stderr, r.output


def test_serve_sim_token_counts_take_suffixes_and_listen_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    served: list[agentx.serve_sim.SimConfig] = []
    monkeypatch.setattr(agentx.serve_sim, "serve", lambda config, ready: served.append(config))
    args = ["--kv-tokens", "1M", "--offload-tokens", "2Mi", "--max-model-len", "128Ki"]
    r = runner.invoke(
        app, ["serve-sim", *args, "--default-max-tokens", "1K", "--listen-host", "::"]
    )
    assert r.exit_code == 0, r.output
    (config,) = served
    assert (config.engine.kv_tokens, config.engine.offload_tokens) == (1_000_000, 2 * 2**20)
    assert (config.max_model_len, config.default_max_tokens) == (128 * 1024, 1000)
    assert config.host == "::"


def test_a_bad_token_count_is_one_line_naming_its_flag() -> None:
    r = runner.invoke(app, ["serve-sim", "--kv-tokens", "1X"])
    assert r.exit_code == 2
    assert r.stderr == (
        "agentx: error: --kv-tokens: '1X' is not a token count (e.g. 160000, 64K, 1.5M, 64Ki)\n"
    )


def test_scrub_max_context_and_out(tmp_path: Path) -> None:
    out = tmp_path / "clean.parquet"
    r = runner.invoke(app, ["scrub", "example", "--out", str(out), "--max-context", "2K", "--json"])
    assert r.exit_code == 0 and out.is_file(), r.output
    assert '"over_max_context"' in r.stdout


@pytest.mark.parametrize("spelling", ["--tokenizer-url", "--endpoint"])
def test_stats_takes_the_tokenizer_server_as_tokenizer_url(spelling: str) -> None:
    r = runner.invoke(app, ["stats", "example", "--tokenizer", "server", spelling, DEAD])
    assert r.exit_code == 1 and f"{DEAD}/v1/models" in r.stderr, r.output
    r = runner.invoke(app, ["stats", "example", "--tokenizer", "server"])
    assert r.exit_code == 2 and "pass --tokenizer-url URL" in r.stderr


@pytest.mark.parametrize("spelling", ["--host", "--listen-host"])
def test_capture_listens_where_host_says(monkeypatch: pytest.MonkeyPatch, spelling: str) -> None:
    seen: list[Any] = []

    def run_capture(config: Any, console: Any) -> None:
        seen.append(config)
        raise AgentxError("stopped here")

    monkeypatch.setattr(agentx.capture.runner, "run_capture", run_capture)
    r = runner.invoke(app, ["capture", "--out", "t.parquet", spelling, "0.0.0.0"])
    assert r.exit_code == 1 and "stopped here" in r.stderr, r.output
    assert seen[0].listen_host == "0.0.0.0" and seen[0].out == Path("t.parquet")


@pytest.mark.parametrize("spelling", ["-o", "--output", "--out", "--workdir"])
def test_demo_writes_where_o_says(monkeypatch: pytest.MonkeyPatch, spelling: str) -> None:
    seen: list[Path] = []

    def run_demo(workdir: Path, **kwargs: Any) -> None:
        seen.append(workdir)
        raise AgentxError("stopped here")

    monkeypatch.setattr(agentx.demo.run, "run_demo", run_demo)
    r = runner.invoke(app, ["demo", spelling, "somewhere"])
    assert r.exit_code == 1 and seen == [Path("somewhere")], r.output


def test_sweep_without_o_writes_under_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    first = default_sweep_dir()
    assert first.parent == Path("results") and first.name.startswith("sweep-")
    first.mkdir(parents=True)
    assert default_sweep_dir() != first  # an existing one gets a -2 suffix
    r = runner.invoke(app, ["sweep", "example", "--endpoint", DEAD, "--concurrency", "1"])
    assert r.exit_code == 1 and f"cannot reach {DEAD}" in r.stderr, r.output
