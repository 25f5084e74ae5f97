"""`agentx --version`, and the one home of the distribution name and version."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from typer.testing import CliRunner

from agentx import DISTRIBUTION, __version__
from agentx.cli import app

ROOT = Path(__file__).parents[1]


def test_version_prints_the_distribution_and_version() -> None:
    res = CliRunner().invoke(app, ["--version"])
    assert res.exit_code == 0
    assert res.stdout == f"agentx-replay {__version__}\n"


def test_version_works_as_a_module_too() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "agentx", "--version"], capture_output=True, text=True, check=True
    )
    assert res.stdout.split() == [DISTRIBUTION, __version__]


def test_pyproject_takes_name_and_version_from_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["name"] == DISTRIBUTION
    assert "version" in project["project"]["dynamic"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "agentx.__version__"}
    assert project["project"]["scripts"] == {"agentx": "agentx.cli:main"}
