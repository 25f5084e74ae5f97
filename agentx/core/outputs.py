"""Outputs that never destroy a file the user already had: the one home of that rule.

Every command writes its output to a temporary file in the output's own directory and renames it
into place only when the whole output was written (a rename within a directory is atomic). A
failure, an exception or a kill leaves the previous file as it was; the temporary file has a
unique hidden name (``.NAME.PID.RANDOM.tmp``), so a leftover never blocks a later command. An
output that already exists is replaced only when the user said so (``--force``); a directory is
never replaced by a file.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from agentx.core.errors import AgentxError, UsageError
from agentx.core.options import Flag, Panel, flag

# How every command that writes names its output: -o/--output shown, --out read too.
OUTPUT_NAMES = ("-o", "--output")
OUTPUT_HIDDEN = ("--out",)


def output_flag(help: str, *, metavar: str, old: tuple[str, ...] = ()) -> Flag:
    """The ``-o``/``--output`` flag of a command that writes (``--out`` and the command's
    ``old`` names hidden spellings)."""
    return flag(
        *OUTPUT_NAMES,
        hidden=(*OUTPUT_HIDDEN, *old),
        metavar=metavar,
        panel=Panel.OUTPUT,
        show_default=False,
        help=help,
    )


FORCE_FLAG = "--force"
# Every command that writes an output takes it: without it an existing output is refused.
FORCE = flag(
    FORCE_FLAG,
    panel=Panel.OUTPUT,
    help="replace an existing output (it is kept if the command fails)",
)


def check_output(path: str | os.PathLike[str], *, force: bool, flag: str = FORCE_FLAG) -> Path:
    """Refuse ``path`` as an output when it is a directory, or exists and ``force`` is off."""
    p = Path(path)
    if p.is_dir():
        raise AgentxError(f"cannot write {p}: it is a directory")
    if not force and (p.exists() or p.is_symlink()):
        raise UsageError(f"{p} already exists: pass {flag} to replace it, or choose another path")
    return p


def temp_path(path: Path) -> Path:
    """A fresh hidden name beside ``path`` (same directory, so the final rename is atomic)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def remove_temp(tmp: Path) -> None:
    """Remove ``tmp`` and what was named after it (a trace writer's ``tmp.spool``)."""
    for name in glob.glob(glob.escape(str(tmp)) + "*"):
        with contextlib.suppress(OSError):
            os.unlink(name)


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str], *, force: bool = False) -> Iterator[Path]:
    """``with atomic_output(out, force=...) as tmp:`` write ``tmp``; on success it becomes
    ``out``. Creates missing parent directories. ``OSError`` becomes one :class:`AgentxError`
    line naming ``out``; on any failure ``out`` is untouched and ``tmp`` removed."""
    p = check_output(path, force=force)
    tmp = temp_path(p)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        os.replace(tmp, p)
    except OSError as exc:
        remove_temp(tmp)
        raise AgentxError(f"cannot write {p}: {exc.strerror or exc}") from None
    except BaseException:
        remove_temp(tmp)
        raise


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, force: bool = False) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through :func:`atomic_output`."""
    with atomic_output(path, force=force) as tmp:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


RESULT_FILES = ("summary.json", "requests.parquet", "report.html", "sweep.json")


def check_results_dir(path: str | os.PathLike[str], *, force: bool) -> Path:
    """A results directory (``replay -o``, ``sweep -o``): refused when it is a file, or when it
    already holds results and ``force`` is off. Its files are each replaced atomically."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise AgentxError(f"cannot write results to {p}: it is a file")
    if not force and p.is_dir():
        held = [name for name in RESULT_FILES if (p / name).exists()]
        if held:
            raise UsageError(
                f"{p} already holds results ({', '.join(held)}): pass {FORCE_FLAG} to replace "
                "them, or choose another directory"
            )
    return p


def unique_dir(path: Path) -> Path:
    """``path``, or ``path-2``, ``path-3``... when it exists (default output directories)."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate
