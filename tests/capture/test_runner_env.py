"""What a launched agent is given: base URLs per upstream, gemini-cli's settings, and no CA
(nor any file in the home directory) in reverse mode."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentx.capture.runner import Capture, CaptureConfig, agent_env
from agentx.capture.runner import agent_config as ac


def _env(upstream: str | None) -> dict[str, str]:
    cfg = CaptureConfig(out=Path("t.parquet"), upstream=upstream)
    return agent_env(cfg, "http://127.0.0.1:9", Path("/nowhere"), base={})


def test_base_urls_per_upstream() -> None:
    names = ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL")
    assert [n in _env(None) for n in names] == [True, False, False]
    assert [n in _env("openai") for n in names] == [False, True, False]
    gemini = _env("gemini")
    assert [n in gemini for n in names] == [False, False, True]
    assert gemini["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:9"
    url = _env("http://127.0.0.1:5/prefix")
    assert url["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:9/prefix"
    assert url["OPENAI_BASE_URL"] == "http://127.0.0.1:9/prefix/v1"


def test_reverse_mode_leaves_no_ca_in_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    cap = Capture(CaptureConfig(out=tmp_path / "t.parquet", upstream="http://127.0.0.1:9", port=0))
    cap.start()
    confdir = cap.confdir
    assert confdir.is_dir() and not confdir.is_relative_to(home)
    cap.close()
    assert not confdir.exists()
    assert list(home.iterdir()) == []
    # forward mode keeps agentx's CA under ~/.config/agentx/mitmproxy
    fwd = Capture(CaptureConfig(out=tmp_path / "f.parquet", mode="forward", port=0))
    assert fwd.confdir == home / ".config" / "agentx" / "mitmproxy"


def test_gemini_cli_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ac.runs_gemini_cli(["gemini", "-p", "x"])
    assert ac.runs_gemini_cli(["sh", "-c", "exec /x/node_modules/.bin/gemini --yolo"])
    assert not ac.runs_gemini_cli(["claude", "-p", "gemini is a model"])
    assert not ac.runs_gemini_cli(["sh", "-c", "claude -p gemini"])
    monkeypatch.setattr(ac, "GEMINI_SYSTEM_DEFAULTS", tmp_path / "absent.json")
    monkeypatch.setattr(ac.Path, "home", lambda: tmp_path / "home")
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    state = tmp_path / "state"
    env = {"XDG_RUNTIME_DIR": str(run), "XDG_STATE_HOME": str(state)}
    assert ac.state_dir(env) == state / "agentx"
    # under /tmp (writable by others, not root's): gemini-cli would skip the file, so none is
    # written, and the user is told why and what to do
    warnings: list[str] = []
    cfg = ac.AgentConfig(warnings.append)
    if not ac._secure_dir(run):
        assert cfg.gemini_env(env) == {}
        cfg.cleanup()
        assert list(run.iterdir()) == [] and not (tmp_path / "home" / ".cache" / "agentx").exists()
        assert not (state / "agentx").exists()
        (warning,) = warnings
        assert "Invalid auth method selected." in warning and str(state / "agentx") in warning
        assert '{"security": {"auth": {"selectedType": "gemini-api-key"}}}' in warning
    # no runtime or cache directory it would read: agentx makes one under the state directory
    monkeypatch.setattr(ac, "_secure_dir", lambda p: p == state / "agentx")
    cfg = ac.AgentConfig(warnings.append)
    made = Path(cfg.gemini_env(env)[ac.GEMINI_DEFAULTS_ENV])
    assert made.parent.parent == state / "agentx"
    assert (state / "agentx").stat().st_mode & 0o777 == 0o700
    cfg.cleanup()
    assert not (state / "agentx").exists()
    monkeypatch.setattr(ac, "_secure_dir", lambda p: True)
    warnings.clear()
    cfg = ac.AgentConfig(warnings.append)
    out = cfg.gemini_env(env)
    path = Path(out[ac.GEMINI_DEFAULTS_ENV])
    assert path.parent.parent == run and warnings == []
    assert json.loads(path.read_text()) == {
        "security": {"auth": {"selectedType": "gemini-api-key"}}
    }
    assert cfg.gemini_env({**env, ac.GEMINI_DEFAULTS_ENV: "/mine.json"}) == {}  # the user's wins
    cfg.cleanup()
    assert list(run.iterdir()) == []


def test_gemini_cli_safe_place_is_root_owned_and_private(tmp_path: Path) -> None:
    """gemini-cli's own test: every directory up to / owned by root, writable by no one else."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    under_tmp = any(p.stat().st_mode & 0o022 for p in private.parents)
    assert ac._secure_dir(private) is (os.getuid() == 0 and not under_tmp)
    assert not ac._secure_dir(Path("/tmp"))  # world-writable
    assert not ac._secure_dir(tmp_path / "absent")
