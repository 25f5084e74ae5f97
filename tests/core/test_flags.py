"""agentx.core.flags: one declaration per flag, documented, and old spellings still honoured."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agentx.apis import Api
from agentx.core import flags
from agentx.core.flags import FLAG_SECRET_REDACTED, has, weka_flag, weka_values
from agentx.core.models import Exchange, Timing
from agentx.scrub import ScrubOptions, scrub_exchanges

ROOT = Path(__file__).parents[2]
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
NAMES = {v for k, v in vars(flags).items() if k.startswith("FLAG_")}


def test_has_knows_the_old_spelling() -> None:
    assert has(("redacted",), FLAG_SECRET_REDACTED)
    assert has((FLAG_SECRET_REDACTED,), FLAG_SECRET_REDACTED)
    assert not has(("partial",), FLAG_SECRET_REDACTED)
    assert has(("partial",), flags.FLAG_PARTIAL) and not has((), flags.FLAG_PARTIAL)
    assert set(flags.ALIASES.values()) <= NAMES and not set(flags.ALIASES) & NAMES


def test_weka_flags_round_trip() -> None:
    fs = (
        weka_flag("in", "text"),
        "subagent",
        weka_flag("in", "tool_result"),
        weka_flag("type", "n"),
    )
    assert weka_values(fs, "in") == ["text", "tool_result"]
    assert weka_values(fs, "type") == ["n"] and weka_values(fs, "out") == []


def _secret_row(rid: str, row_flags: tuple[str, ...]) -> Exchange:
    body = {"messages": [{"role": "user", "content": f"my token is {SECRET}"}]}
    return Exchange(
        rid, "s", rid, Api.OPENAI_CHAT, body, Timing(start_wall_ns=1), status=200, flags=row_flags
    )


@pytest.mark.parametrize("old", [(), ("redacted",), (FLAG_SECRET_REDACTED,)])
def test_scrub_sets_the_redaction_flag_once_whatever_its_spelling(old: tuple[str, ...]) -> None:
    out, _ = scrub_exchanges([_secret_row("a", old)], ScrubOptions(hit_rate=False))
    (row,) = out
    assert SECRET not in str(row.request)
    assert has(row.flags, FLAG_SECRET_REDACTED)
    assert sum(f in ("redacted", FLAG_SECRET_REDACTED) for f in row.flags) == 1
    assert row.flags == (old or (FLAG_SECRET_REDACTED,))  # an old trace keeps its own spelling


def test_every_flag_is_documented_in_the_trace_format() -> None:
    doc = (ROOT / "docs" / "trace-format.md").read_text()
    missing = sorted(n for n in NAMES | set(flags.ALIASES) if f"`{n}`" not in doc)
    assert not missing, f"flags missing from docs/trace-format.md: {missing}"


# module-level names whose strings equal a flag name but mean something else
NOT_FLAGS = {
    ("agentx/formats/weka/read.py", "SUBAGENT"),  # the Weka record type of a child thread
    ("agentx/scrub/rules.py", "RULES"),  # scrub rule names (a rule may share its flag's name)
    ("agentx/scrub/rules.py", "DROP"),  # rule actions: dropped | repaired | flagged | redacted
    ("agentx/scrub/rules.py", "REPAIR"),
    ("agentx/scrub/rules.py", "FLAG"),
    ("agentx/scrub/rules.py", "REDACT"),
}


def test_no_module_declares_a_flag_name_of_its_own() -> None:
    """A module-level constant outside agentx.core.flags that spells a flag name (alone or in a set)
    is a second declaration: the drift agentx.core.flags exists to prevent."""
    found = []
    for path in sorted((ROOT / "agentx").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "agentx/core/flags.py":
            continue
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            spelled = {
                c.value
                for c in ast.walk(node.value)
                if isinstance(c, ast.Constant) and c.value in NAMES | set(flags.ALIASES)
            }
            if spelled and not all((rel, n) in NOT_FLAGS for n in names):
                found.append(f"{rel}: {names} = {sorted(spelled)}")
    assert not found
