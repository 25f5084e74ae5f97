"""The package's shape: no import cycle, no stage importing a higher one, and a module table in
docs/architecture.md that lists every module there is.

Imports are read from the source (``ast``), function-level imports included, so a lazy import
cannot hide a cycle or an upward dependency.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PKG = ROOT / "agentx"

# Stages, lowest first. A module may import its own package (group) and any module of a lower
# stage. Groups of the same stage never import each other. A new module must be placed here.
STAGES: list[list[str]] = [
    [
        "agentx",
        "agentx.core",
    ],  # the shared vocabulary: errors, values, rows, flags, outputs, percentiles
    ["agentx.results"],  # every JSON file agentx writes, as typed values (one module per schema)
    ["agentx.apis"],  # the API families: one module each, the registry, their shared bases
    [
        "agentx.prefixcache"
    ],  # tokens, block hashes, the unbounded and bounded caches, the engine model
    [
        "agentx.routing"
    ],  # routing policies over replicas, session headers (replay, serve-sim, simulate)
    ["agentx.store"],  # the trace store and requests.parquet (the only pyarrow importer)
    ["agentx.formats"],  # Weka / Mooncake / Hugging Face import and export, agentx convert
    ["agentx.schedule"],  # the replay's rules as a pure event model (replay and simulate drive it)
    ["agentx.workload"],  # a trace as sessions, trees and request bodies; stats; scenario presets
    ["agentx.capture", "agentx.scrub"],  # produce and clean traces
    ["agentx.metrics"],  # latency, Prometheus, SLOs, cost, summary.json
    ["agentx.report"],  # reports of a results directory
    [
        "agentx.replay",
        "agentx.dataset",
    ],  # the live load generator: lanes, client, workers, results; sweep. Shareable datasets
    ["agentx.serve_sim", "agentx.simulate"],  # the simulated server, the offline simulator
    ["agentx.demo"],  # the end-to-end demo, built from the others
    ["agentx.cli"],  # the thin command line
    ["agentx.__main__"],  # python -m agentx
]
BASE = set(STAGES[0])


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def _resolve(name: str) -> str:
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imports(module: str, path: Path) -> set[str]:
    """The agentx modules ``module`` imports (``from pkg import submodule`` counts as the
    submodule), at any depth of its code."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            if source == "agentx" or source.startswith("agentx."):
                for alias in node.names:
                    full = f"{source}.{alias.name}"
                    found.add(full if full in MODULES else _resolve(source))
        elif isinstance(node, ast.Import):
            found |= {_resolve(a.name) for a in node.names if a.name.startswith("agentx")}
    found.discard(module)
    return found


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _group(module: str) -> tuple[int, str]:
    """(stage, group) of a module: the longest group prefix wins."""
    best: tuple[int, str] | None = None
    for stage, groups in enumerate(STAGES):
        for g in groups:
            inside = (module == g or module.startswith(g + ".")) and g != "agentx"
            if inside and (best is None or len(g) > len(best[1])):
                best = (stage, g)
    if best is None and module == "agentx":
        best = (0, "agentx")
    assert best is not None, f"{module} is in no stage of tests/test_architecture.py"
    return best


def test_every_module_has_a_stage() -> None:
    for module in MODULES:
        _group(module)


def test_no_import_cycle_anywhere_in_agentx() -> None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for dep in sorted(GRAPH[m]):
            if state.get(dep) == 1:
                cycle = [*stack[stack.index(dep) :], dep]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[m] = 2

    for m in sorted(GRAPH):
        if m not in state:
            visit(m)


def test_no_stage_imports_a_higher_one() -> None:
    bad = []
    for module, deps in sorted(GRAPH.items()):
        stage, group = _group(module)
        for dep in sorted(deps):
            dstage, dgroup = _group(dep)
            same_group = dgroup == group
            both_base = group in BASE and dgroup in BASE
            if not (same_group or both_base or dstage < stage):
                bad.append(f"{module} (stage {stage}) imports {dep} (stage {dstage})")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("library", "home"), [("pyarrow", "agentx.store"), ("mitmproxy", "agentx.capture")]
)
def test_only_one_stage_imports_a_heavy_library(library: str, home: str) -> None:
    users = set()
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            if any(n == library or n.startswith(library + ".") for n in names):
                users.add(module)
    assert users and all(u == home or u.startswith(home + ".") for u in users), sorted(users)


# -- docs/architecture.md ---------------------------------------------------------------------


def _table() -> dict[str, str]:
    """``agentx/...`` path of each row of the module table -> the row's text."""
    rows = {}
    for line in (ROOT / "docs" / "architecture.md").read_text().splitlines():
        m = re.match(r"\|\s*`(agentx/[^`]*)`\s*\|(.*)\|\s*$", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_the_module_table_lists_every_module() -> None:
    """A row per top-level module (``agentx/x.py``) and per package (``agentx/p/``, sub-packages
    too); a package's row names each of its modules in backticks."""
    rows = _table()
    missing = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if path.name in ("__init__.py", "__main__.py"):
            continue
        if path.parent == PKG:
            if rel.as_posix() not in rows:
                missing.append(f"no row for {rel.as_posix()}")
            continue
        row = rows.get(rel.parent.as_posix() + "/")
        if row is None:
            missing.append(f"no row for {rel.parent.as_posix()}/")
        elif f"`{path.stem}`" not in row:
            missing.append(f"{rel.as_posix()} is not named in the row of {rel.parent.as_posix()}/")
    for pkg in sorted({p.parent for p in PKG.rglob("__init__.py")} - {PKG}):
        if pkg.relative_to(ROOT).as_posix() + "/" not in rows:
            missing.append(f"no row for {pkg.relative_to(ROOT).as_posix()}/")
    assert not missing, "docs/architecture.md:\n" + "\n".join(sorted(set(missing)))


def test_the_module_table_lists_nothing_that_does_not_exist() -> None:
    gone = [p for p in _table() if not (ROOT / p).exists()]
    assert not gone, f"docs/architecture.md lists modules that do not exist: {gone}"


def _sources() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text())) for p in sorted(PKG.rglob("*.py"))]


def test_one_engine() -> None:
    # the serving-engine model has one home; serve-sim and simulate drive it, nothing else is one
    engines = [
        f"{p.relative_to(ROOT)}:{node.name}"
        for p, tree in _sources()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name.endswith("Engine")
    ]
    assert engines == ["agentx/prefixcache/engine.py:ServingEngine"]


def test_a_flag_is_named_in_three_files_at_most() -> None:
    # its declaration, its use, and the schedule that honours it: never a string dict of flags
    named = [p for p, _ in _sources() if "trace_idle_cap" in p.read_text()]
    assert 0 < len(named) <= 3, named


def test_simulate_imports_nothing_from_replay() -> None:
    for p, tree in _sources():
        if "simulate" not in p.relative_to(PKG).parts:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("agentx.replay"), f"{p}: {node.module}"
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("agentx.replay") for a in node.names), p
