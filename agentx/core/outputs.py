"""Outputs that never destroy a file the user already had: the one home of that rule.

Every command writes its output to a temporary file in the output's own directory and renames it
into place only when the whole output was written (a rename within a directory is atomic). A
failure, an exception or a kill leaves the previous file as it was; the temporary file has a
unique hidden name (``.NAME.PID.RANDOM.tmp``), so a leftover never blocks a later command. An
output that already exists is replaced only when the user said so (``--force``); a directory is
never replaced by a file.

A directory output (a Weka export, a merged results directory) is built the same way, as a whole
directory beside it, and swapped in with one rename (:func:`atomic_dir`): a kill leaves either
the old directory or the new one, never a mixture, and what the old one held of this command's
files is gone with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import glob
import os
import secrets
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from agentx.core.errors import AgentxError, TraceError, UsageError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock, one writer assumed
    fcntl = None  # type: ignore[assignment]
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


# Held (flock) inside a directory being built: a leftover without a live holder is a dead
# command's, removed by the next command writing the same output.
_BUILDING = ".agentx-building"


@contextlib.contextmanager
def atomic_dir(
    path: str | os.PathLike[str], *, owned: Callable[[str], bool] = lambda name: True
) -> Iterator[Path]:
    """``with atomic_dir(out, owned=...) as tmp:`` fill the new directory ``tmp`` (hidden,
    beside ``out``); on success it replaces ``out`` as a whole. The entries of an existing
    ``out`` that ``owned`` (by name: the files this command writes) go with it; any other entry
    is moved into the new directory first. The caller decided whether ``out`` may be replaced
    (``--force``). ``OSError`` becomes one :class:`AgentxError` line naming ``out``; on any
    failure ``out`` is untouched and ``tmp`` removed."""
    p = Path(path)
    tmp = temp_path(p)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        _remove_dead_builds(p)
        tmp.mkdir()
        with open(tmp / _BUILDING, "wb") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            yield tmp
            if p.exists() and not p.is_dir():  # checked last: a bad input is the first word
                raise AgentxError(f"cannot write {p}: it is a file")
            os.unlink(tmp / _BUILDING)  # the lock holds on the open file until the swap is done
            _swap_in(tmp, p, owned)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise AgentxError(f"cannot write {p}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _remove_dead_builds(p: Path) -> None:
    """Remove the hidden directories a killed :func:`atomic_dir` left beside ``p``: a build
    whose lock nobody holds, or (past its lock: an old directory swapped out) whose process is
    gone."""
    for name in glob.glob(glob.escape(str(p.parent / f".{p.name}.")) + "*.tmp"):
        d = Path(name)
        if not d.is_dir() or d.is_symlink():
            continue
        try:
            with open(d / _BUILDING, "rb") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises while its writer lives
        except FileNotFoundError:
            if _alive(d.name[len(p.name) + 2 :].split(".", 1)[0]):
                continue
        except OSError:
            continue
        shutil.rmtree(d, ignore_errors=True)


def _alive(pid: str) -> bool:
    """Whether the process ``pid`` (digits, from a temporary name) runs on this machine."""
    if not pid.isdigit():
        return True  # not a name of ours: leave it
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists (another user's)
    return True


def _swap_in(new: Path, dst: Path, owned: Callable[[str], bool]) -> None:
    """Put the directory ``new`` at ``dst`` in one rename; remove what ``dst`` was."""
    try:
        os.rename(new, dst)  # dst absent, or an empty directory
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    for entry in os.scandir(dst):
        if not owned(entry.name) and not os.path.lexists(new / entry.name):
            os.rename(entry.path, new / entry.name)  # not this command's: it stays
    if _exchange(new, dst):
        shutil.rmtree(new, ignore_errors=True)  # the old directory, now at the hidden name
        return
    old = dst.with_name(f".{dst.name}.{os.getpid()}.{secrets.token_hex(4)}.old.tmp")
    os.rename(dst, old)  # without an atomic exchange, dst is absent for this instant
    os.rename(new, dst)
    shutil.rmtree(old, ignore_errors=True)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``); ``False`` where the
    system or the file system cannot."""
    if sys.platform != "linux":
        return False
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


# The files of a results directory (replay -o, merge -o) and of a sweep directory (sweep -o)
SUMMARY_FILE = "summary.json"
REQUESTS_FILE = "requests.parquet"
THEORY_FILE = "theory.parquet"
REPORT_FILE = "report.html"
SWEEP_FILE = "sweep.json"
BASELINE_FILE = "baseline.json"  # replay --baseline: the run against its baseline
RESULT_FILES = (SUMMARY_FILE, REQUESTS_FILE, REPORT_FILE, SWEEP_FILE)
_SCHEMA_HEAD = 512  # bytes: a results file's schema is its first key


@dataclass(frozen=True, slots=True)
class ResultsPath:
    """A path that holds agentx results: ``directory`` is the results (or sweep) directory,
    ``kind`` which (``results directory``), ``what`` what the path is, in words (``a results
    directory (summary.json, requests.parquet)``, ``the requests.parquet of the results
    directory run1``)."""

    directory: Path
    kind: str
    what: str


def _has_schema(path: Path, schema: str) -> bool:
    """Whether ``path`` is a JSON file agentx wrote with this schema (its head only is read)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SCHEMA_HEAD)
    except OSError:
        return False
    return b'"schema"' in head and f'"{schema}/'.encode() in head


def _results_dir(p: Path) -> ResultsPath | None:
    if not p.is_dir():
        return None
    if _has_schema(p / SUMMARY_FILE, "agentx.summary"):
        held = ", ".join(n for n in (SUMMARY_FILE, REQUESTS_FILE) if (p / n).is_file())
        return ResultsPath(p, "results directory", f"a results directory ({held})")
    if _has_schema(p / SWEEP_FILE, "agentx.sweep"):
        return ResultsPath(p, "sweep directory", f"a sweep directory ({SWEEP_FILE})")
    return None


def results_at(path: str | os.PathLike[str]) -> ResultsPath | None:
    """What agentx results ``path`` is, if any: a results directory (``summary.json`` of schema
    ``agentx.summary/1``), a sweep directory (``sweep.json``), or one of their files; ``None``
    for anything else. What a command given the wrong kind of input says it was."""
    p = Path(path)
    found = _results_dir(p)
    if found is not None or not p.is_file():
        return found
    around = _results_dir(p.parent)
    if around is None:
        return None
    what = f"the {p.name} of the {around.kind} {around.directory}"
    return ResultsPath(around.directory, around.kind, what)


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


# In a results directory while a run writes it: its writer's lock (an exclusive ``flock``, which
# the kernel drops when the writer dies) and its pid. Left behind, it marks a run that was killed.
WRITING_FILE = ".agentx-writing"
# In a results directory while a replay runs: its set-up and the rows it spools
# (agentx.replay.rundir). Left behind with the lock free, it is a killed run's, for `agentx recover`.
RUN_SPOOL = ".agentx-run"


@contextlib.contextmanager
def claimed_results_dir(path: str | os.PathLike[str], *, force: bool) -> Iterator[Path]:
    """A results directory held for one writer, before the run sends anything: refused as
    :func:`check_results_dir` refuses it, created, proven writable (its :data:`WRITING_FILE`
    is written) and locked; another run into it is refused while this one holds it. Released
    on the way out; a directory this made and nothing was written to is removed again."""
    p = check_results_dir(path, force=force)
    made = _missing_parents(p)
    try:
        p.mkdir(parents=True, exist_ok=True)
        fd = _lock_writing(p)
    except OSError as exc:
        for d in made:
            with contextlib.suppress(OSError):
                d.rmdir()
        raise AgentxError(f"cannot write results to {p}: {exc.strerror or exc}") from None
    if not force and (p / RUN_SPOOL).exists():  # looked at once no live run holds it
        with contextlib.suppress(OSError):
            (p / WRITING_FILE).unlink()
        os.close(fd)
        raise UsageError(
            f"{p} holds the spool of a run that was killed ({RUN_SPOOL}): agentx recover {p} "
            f"makes its rows a results directory; {FORCE_FLAG} replaces them"
        )
    try:
        yield p
    finally:
        with contextlib.suppress(OSError):
            (p / WRITING_FILE).unlink()
        os.close(fd)
        for d in made:  # innermost first; one that holds anything stays
            with contextlib.suppress(OSError):
                d.rmdir()


def writer_of(path: str | os.PathLike[str]) -> str | None:
    """The pid of the live run writing the results directory ``path`` (its lock is held), or
    ``None``."""
    lock = Path(path) / WRITING_FILE
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if fcntl is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.read(fd, 32).decode("ascii", "replace").strip() or "?"
        except OSError:
            return None
        return None
    finally:
        os.close(fd)


def _missing_parents(p: Path) -> list[Path]:
    """``p`` and its ancestors that do not exist yet, innermost first."""
    out: list[Path] = []
    for d in (p, *p.parents):
        if d.exists() or d in out:
            break
        out.append(d)
    return out


def _lock_writing(p: Path) -> int:
    """The locked :data:`WRITING_FILE` of ``p`` (its descriptor), with this process's pid."""
    lock = p / WRITING_FILE
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.read(fd, 32).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise AgentxError(
                f"{p} is being written by another agentx run (pid {pid}): wait for it to end, "
                "or choose another directory"
            ) from None
        except OSError:  # no lock support here (some network filesystems): one writer assumed
            pass
        try:  # the file a writer that just ended removed is no lock: take the new one
            if os.stat(lock).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError:
        os.close(fd)
        raise
    return fd


def unique_dir(path: Path) -> Path:
    """``path``, or ``path-2``, ``path-3``... when it exists (default output directories)."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def check_not_results(path: str | os.PathLike[str]) -> None:
    """Where a trace goes: raise :class:`TraceError` saying what ``path`` is when it is agentx's
    own results (a results or sweep directory, or one of their files), and what to run."""
    results = results_at(path)
    if results is not None:
        raise TraceError(
            f"{path} is {results.what}, not a trace: agentx report {results.directory}"
        )
