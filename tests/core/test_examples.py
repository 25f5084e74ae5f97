"""The bundled examples (agentx/data/; the example trace from traces/): found by name, by
`agentx example-path`, and wherever a trace argument is read; no help text points at a file a pip
user does not have."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core import examples
from agentx.core.errors import TraceError, UsageError
from agentx.core.examples import (
    CHECKOUT_DIR,
    DATA_DIR,
    EXAMPLES,
    example_path,
    resolve_trace,
)

runner = CliRunner()
ROOT = Path(__file__).parents[2]


def test_every_example_is_in_the_package_or_made_in_the_checkout() -> None:
    for name, example in EXAMPLES.items():
        path = example_path(name)
        assert path.exists()
        if example.checkout_relpath is None:
            assert DATA_DIR in path.parents
        else:  # the build copies it into the package's data; a checkout has it where it is made
            assert path in (DATA_DIR / example.relpath, CHECKOUT_DIR / example.checkout_relpath)
    weka = example_path("weka")
    assert {"LICENSE", "NOTICE.md", "trace_0001.json"} <= {p.name for p in weka.iterdir()}
    assert example_path() == example_path("example")
    # this checkout: the trace is in traces/ only, with no second copy in agentx/data/
    assert example_path("example") == ROOT / "traces" / "example.parquet"
    assert not (DATA_DIR / "example.parquet").exists()


def test_the_package_data_wins_over_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # nothing called example here
    data, checkout = tmp_path / "site" / "agentx" / "data", tmp_path / "repo"
    monkeypatch.setattr(examples, "DATA_DIR", data)
    monkeypatch.setattr(examples, "CHECKOUT_DIR", checkout)
    with pytest.raises(TraceError, match=f"{data / 'example.parquet'}: bundled example missing"):
        example_path("example")  # in neither: the package's path is named
    (checkout / "traces").mkdir(parents=True)
    (checkout / "traces" / "example.parquet").write_bytes(b"made here")
    assert example_path("example") == checkout / "traces" / "example.parquet"
    data.mkdir(parents=True)
    (data / "example.parquet").write_bytes(b"installed")
    assert example_path("example") == data / "example.parquet"
    assert resolve_trace(Path("example")) == data / "example.parquet"


def test_unknown_name_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="known: example, weka"):
        example_path("nope")


def test_a_local_file_of_the_same_name_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_trace(Path("example")) == example_path("example")
    assert resolve_trace(Path("missing.parquet")) == Path("missing.parquet")  # caller reports it
    Path("example").write_bytes(b"")
    assert resolve_trace(Path("example")) == Path("example")


def test_example_path_command() -> None:
    res = runner.invoke(app, ["example-path"])
    assert res.exit_code == 0 and res.stdout == f"{example_path('example')}\n"
    res = runner.invoke(app, ["example-path", "weka"])
    assert res.exit_code == 0 and Path(res.stdout.strip()) == example_path("weka")
    res = runner.invoke(app, ["example-path", "--list"])
    assert [line.split("\t")[0] for line in res.stdout.splitlines()] == list(EXAMPLES)
    res = runner.invoke(app, ["example-path", "nope"])
    assert res.exit_code == 2 and "no bundled example 'nope'" in res.stderr


def test_trace_arguments_take_a_bundled_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # nothing called example or weka here
    res = runner.invoke(app, ["stats", "example", "--json"])
    assert res.exit_code == 0, res.output
    stats = json.loads(res.stdout)
    assert (stats["sessions"], stats["requests"]) == (5, 48)
    assert stats["trace"] == str(example_path("example"))
    res = runner.invoke(app, ["convert", "weka", "-o", "weka.parquet", "--json"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "weka.parquet").exists()
    res = runner.invoke(app, ["stats", "exampel"])
    assert res.exit_code == 1 and "exampel: no such file" in res.stderr


@pytest.mark.parametrize("command", [None, *sorted(c.name or "" for c in app.registered_commands)])
def test_help_points_at_no_file_of_the_source_tree(command: str | None) -> None:
    res = runner.invoke(app, [command, "--help"] if command else ["--help"])
    assert res.exit_code == 0
    for tree_only in ("docs/", "traces/", "scripts/", "tests/", ".md"):
        assert tree_only not in res.stdout, (command, tree_only)
