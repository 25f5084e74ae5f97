"""The example data shipped inside the package (``agentx/data/``), found by name.

A user names a bundled example wherever a trace path is accepted (``agentx stats example``,
``agentx replay example ...``, ``agentx convert weka -o weka.parquet``); ``agentx example-path
[NAME]`` prints where it is. An existing file or directory of the same name always wins, so a
local ``./example`` is never shadowed. This module is the only place that knows where the
package's data lives.

The example trace is made in the repository's ``traces/`` (its recipe is there) and copied into
``agentx/data/`` when the wheel is built (``setup.py``), so git holds it once: an installed agentx
finds it in its package data, a source checkout (an editable install) in ``traces/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentx.core.errors import TraceError, UsageError

PACKAGE_DIR = Path(__file__).resolve().parents[1]
DATA_DIR = PACKAGE_DIR / "data"
CHECKOUT_DIR = PACKAGE_DIR.parent  # the repository's root, when agentx runs from a checkout


@dataclass(frozen=True, slots=True)
class Example:
    name: str
    relpath: str  # under DATA_DIR
    description: str
    checkout_relpath: str | None = None  # under CHECKOUT_DIR, for data the build copies in

    @property
    def path(self) -> Path:
        """In the package's data when it is there (an installed agentx), else in the checkout;
        the package's path when neither has it, for the error to name."""
        packaged = DATA_DIR / self.relpath
        if self.checkout_relpath is None or packaged.exists():
            return packaged
        checkout = CHECKOUT_DIR / self.checkout_relpath
        return checkout if checkout.exists() else packaged


EXAMPLES: dict[str, Example] = {
    ex.name: ex
    for ex in (
        Example(
            "example",
            "example.parquet",
            "5 scripted coding-agent sessions, 48 requests over Anthropic Messages, OpenAI Chat "
            "and Responses (agentx Parquet trace)",
            checkout_relpath="traces/example.parquet",
        ),
        Example(
            "weka",
            "weka",
            "2 real Claude Code sessions as Weka JSON block hashes, no text "
            "(kv-cache-tester, Apache-2.0: LICENSE and NOTICE.md beside them)",
        ),
        Example(
            "prices",
            "prices.toml",
            "price presets in USD per million tokens for --price-preset (a TOML file to copy, "
            "edit and pass as --price-file)",
        ),
    )
}
DEFAULT = "example"


def example_path(name: str = DEFAULT) -> Path:
    """Where the bundled example ``name`` is. :class:`UsageError` for an unknown name."""
    example = EXAMPLES.get(name)
    if example is None:
        raise UsageError(f"no bundled example {name!r} (known: {', '.join(EXAMPLES)})")
    path = example.path
    if not path.exists():
        raise TraceError(f"{path}: bundled example missing (a broken agentx install?)")
    return path


def resolve_trace(path: Path) -> Path:
    """``path`` itself when it exists (or a killed writer's spool does), else the bundled example
    of that name, else ``path`` unchanged so the caller reports it missing."""
    if path.exists() or path.with_name(path.name + ".spool").exists():
        return path
    if str(path) in EXAMPLES:
        return example_path(str(path))
    return path
