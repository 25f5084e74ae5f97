"""What a pip user gets: build the sdist and the wheel (the wheel from the sdist, so the sdist is
complete), install the wheel into a fresh venv outside the source tree, and run the README's
first commands from an empty directory. Select it alone with ``pytest -m wheel``.

The install resolves the wheel's dependencies from the index like a user's ``pip install`` would
(pip's cache makes reruns fast; ``make setup`` has already filled it on a fresh machine). The
fresh venv runs the oldest Python the machine has that agentx supports (``requires-python``'s
floor, 3.12: a pyenv 3.12.x or ``python3.12``, else this interpreter), so a patch release's
quirks (3.12.0 and 3.12.1's asyncio logged a traceback at every capture stop) are met here first.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from agentx import DISTRIBUTION, __version__

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).parents[1]
DIST = DISTRIBUTION.replace("-", "_")
WEKA = (
    "agentx/data/weka/LICENSE",
    "agentx/data/weka/NOTICE.md",
    "agentx/data/weka/trace_0001.json",
    "agentx/data/weka/trace_0010_head.json",
)
WORDS = "agentx/data/cl100k_base.words"  # synthetic text's word table
# the example trace: one copy in the repository (traces/), built into the wheel's package data
EXAMPLE_SOURCE, EXAMPLE_PACKAGED = "traces/example.parquet", "agentx/data/example.parquet"


def oldest_python() -> str:
    """The oldest Python >= 3.12 on this machine (pyenv's versions, ``python3.12``), else this
    interpreter."""
    found: list[tuple[tuple[int, ...], str]] = []
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [str(p / "bin" / "python3") for p in root.glob("3.1[2-9]*")]
    candidates += [c for c in (shutil.which("python3.12"), sys.executable) if c]
    for exe in candidates:
        try:
            out = subprocess.run(
                [exe, "-c", "import sys; print(*sys.version_info[:3])"],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except OSError:
            continue
        if out.returncode == 0:
            version = tuple(int(x) for x in out.stdout.split())
            if version >= (3, 12):
                found.append((version, exe))
    return min(found)[1] if found else sys.executable


def run(
    cmd: list[str | Path],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
    assert res.returncode == 0, (
        f"{cmd} -> {res.returncode}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    )
    return res


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", out, ROOT], timeout=300)
    (sdist,) = out.glob(f"{DIST}-{__version__}.tar.gz")
    (wheel,) = out.glob(f"{DIST}-{__version__}-py3-none-any.whl")
    return sdist, wheel


@pytest.fixture(scope="module")
def venv(dists: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel and its dependencies, and nothing of the source tree."""
    venv = tmp_path_factory.mktemp("venv")
    run([oldest_python(), "-m", "venv", "--without-pip", venv], timeout=120)
    python = venv / "bin" / "python"
    # this environment's pip installs into the new venv (no pip bootstrap there); no .pyc
    # compilation up front: the first import of each module writes it
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "-q",
            "--no-compile",
            dists[1],
        ],
        timeout=900,
        # a PYTHONPATH into a checkout would show pip agentx as installed already
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    return venv


def user_env(venv: Path) -> dict[str, str]:
    """The venv's bin first on PATH, and no path into the source tree."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_sdist_holds_the_license_and_the_data(dists: tuple[Path, Path]) -> None:
    with tarfile.open(dists[0]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"LICENSE", "README.md", "pyproject.toml", "setup.py", EXAMPLE_SOURCE, *WEKA} <= names
    assert EXAMPLE_PACKAGED not in names  # the build makes it from traces/
    # the whole project for a packager: the examples, docs, tests and the scripts they use
    assert {
        "Makefile",
        "examples/ci/slo-gate.sh",
        "docs/cli.md",
        "scripts/make_example_trace.py",
        "traces/README.md",
        "traces/source/sessions/S1.json",
    } <= names
    assert any(n.startswith("tests/") for n in names)


def test_wheel_holds_the_license_data_metadata_and_command(dists: tuple[Path, Path]) -> None:
    info = f"{DIST}-{__version__}.dist-info"
    with zipfile.ZipFile(dists[1]) as whl:
        names = set(whl.namelist())
        metadata = whl.read(f"{info}/METADATA").decode()
        entry_points = whl.read(f"{info}/entry_points.txt").decode()
    shipped = {EXAMPLE_PACKAGED, *WEKA, WORDS, "agentx/py.typed", f"{info}/licenses/LICENSE"}
    assert shipped <= names
    assert f"{info}/licenses/agentx/data/weka/LICENSE" in names  # the samples' own licence
    assert not any(n.startswith(("tests/", "scripts/", "traces/", "docs/")) for n in names)
    assert f"Name: {DISTRIBUTION}\n" in metadata and f"Version: {__version__}\n" in metadata
    assert "License-Expression: Apache-2.0\n" in metadata and "Project-URL: Source, " in metadata
    assert "agentx = agentx.cli:main" in entry_points


def test_installed_agentx_runs_the_readme_commands_from_an_empty_dir(
    venv: Path, tmp_path: Path
) -> None:
    cwd, env = tmp_path / "empty", user_env(venv)
    cwd.mkdir()
    where = run(
        ["python", "-c", "import agentx; print(agentx.__file__)"], timeout=60, cwd=cwd, env=env
    )
    assert Path(where.stdout.strip()).is_relative_to(venv)  # not the source tree

    version = run(["agentx", "--version"], timeout=60, cwd=cwd, env=env)
    assert version.stdout == f"{DISTRIBUTION} {__version__}\n"

    path = run(["agentx", "example-path"], timeout=60, cwd=cwd, env=env)
    assert Path(path.stdout.strip()).is_relative_to(venv) and Path(path.stdout.strip()).is_file()
    assert Path(path.stdout.strip()).read_bytes() == (ROOT / EXAMPLE_SOURCE).read_bytes()

    stats = json.loads(
        run(["agentx", "stats", "example", "--json"], timeout=120, cwd=cwd, env=env).stdout
    )
    assert (stats["sessions"], stats["requests"]) == (5, 48)

    demo = run(
        ["agentx", "demo", "--fast", "--sessions", "1", "--turns", "2", "--json"],
        timeout=300,
        cwd=cwd,
        env=env,
    )
    # nothing but agentx's own lines on stderr: no traceback from any library, on any Python
    assert "Traceback" not in demo.stderr and "Exception in callback" not in demo.stderr
    replays = json.loads(demo.stdout)
    assert replays["example"]["requests"]["ok"] == 48  # the bundled trace, found and replayed
    assert replays["capture"]["requests"]["ok"] == 2
    assert replays["example"]["agentx_version"] == __version__

    # more of the README's commands, on what the demo left
    run(
        ["agentx", "report", "results/demo/replay-example", "--html", "report.html"],
        timeout=120,
        cwd=cwd,
        env=env,
    )
    run(["agentx", "convert", "weka", "-o", "weka.parquet"], timeout=120, cwd=cwd, env=env)
    assert sorted(p.name for p in cwd.iterdir()) == ["report.html", "results", "weka.parquet"]
