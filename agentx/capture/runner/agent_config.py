"""What a launched agent needs besides base-URL variables: temporary config, never the user's.

gemini-cli 0.61 reads ``GOOGLE_GEMINI_BASE_URL`` but then picks the ``gateway`` auth type,
which its non-interactive mode refuses ("Invalid auth method selected") unless the user's
settings already name an auth type. agentx hands it a *system defaults* file (the lowest
precedence of gemini-cli's settings: the user's own choice still wins) that selects the API
key (``GEMINI_API_KEY``). gemini-cli skips such a file unless it and every directory above it
are owned by root and writable by no one else (so never under ``/tmp``): agentx puts it in
``$XDG_RUNTIME_DIR`` or ``~/.cache/agentx``, else in a directory it makes (mode 700) under the
user's own state directory (``$XDG_STATE_HOME/agentx``, or ``~/.local/state/agentx`` of the
account's home, whatever ``HOME`` says), and removes it when the capture ends. Where no such
place exists (a user other than root, a home under ``/tmp``) it says so and what to do instead:
it never leaves gemini-cli to fail on its own.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

GEMINI_DEFAULTS_ENV = "GEMINI_CLI_SYSTEM_DEFAULTS_PATH"
GEMINI_SYSTEM_DEFAULTS = Path("/etc/gemini-cli/system-defaults.json")


def runs_gemini_cli(command: Sequence[str]) -> bool:
    """Whether the command starts gemini-cli: as the program, or as a command of a
    ``sh -c`` line (its first word, or one after ``exec``, ``&&``, ``;``, ``|``)."""
    if not command:
        return False
    programs = [command[0]]
    if os.path.basename(command[0]) in ("sh", "bash", "zsh", "dash") and "-c" in command:
        at = list(command).index("-c") + 1
        words = command[at].split() if at < len(command) else []
        programs += words[:1]
        programs += [b for a, b in itertools.pairwise(words) if a in _CHAINS]
    return any(os.path.basename(p.strip("'\"")) in ("gemini", "gemini.js") for p in programs)


_CHAINS = ("exec", "&&", ";", "|", "||", "env")


def _secure_dir(path: Path) -> bool:
    """``path`` and every directory above it are owned by root and writable by no one else
    (gemini-cli's own test of a system settings file's place)."""
    for p in (path, *path.parents):
        try:
            st = p.stat()
        except OSError:
            return False
        if st.st_uid != 0 or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
    return True


def state_dir(env: dict[str, str]) -> Path:
    """The user's own state directory for agentx: ``$XDG_STATE_HOME/agentx``, else
    ``.local/state/agentx`` under the account's home (from the password database, so a
    ``HOME`` pointed elsewhere for the agent does not move it)."""
    xdg = env.get("XDG_STATE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "agentx"
    try:
        home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, OSError):
        home = Path.home()
    return home / ".local" / "state" / "agentx"


GEMINI_WARNING = (
    "agentx capture: gemini-cli reads the settings agentx would give it (auth type "
    "gemini-api-key) only from a directory owned by root that no one else may write, and "
    "there is none here ({tried}); it may answer 'Invalid auth method selected.': put "
    '{{"security": {{"auth": {{"selectedType": "gemini-api-key"}}}}}} in ~/.gemini/settings.json, '
    "or name such a file with GEMINI_CLI_SYSTEM_DEFAULTS_PATH"
)


class AgentConfig:
    """Temporary files for the launched agent; :meth:`cleanup` removes what it created."""

    def __init__(self, report: Callable[[str], None] | None = None) -> None:
        self._made: list[Path] = []  # directories to remove, innermost first
        self._report = report or (lambda msg: None)

    def _private_dir(self, env: dict[str, str]) -> tuple[Path | None, list[Path]]:
        """A fresh directory gemini-cli reads settings from, and the places tried."""
        candidates = [
            Path(cand)
            for cand in (env.get("XDG_RUNTIME_DIR"), str(Path.home() / ".cache" / "agentx"))
            if cand
        ]
        candidates.append(state_dir(env))
        tried: list[Path] = []
        for base in candidates:
            tried.append(base)
            try:
                if not base.exists():
                    base.mkdir(parents=True, mode=0o700)
                    self._made.append(base)
                if not _secure_dir(base):
                    continue
                path = Path(tempfile.mkdtemp(prefix="capture-", dir=base))
            except OSError:
                continue
            self._made.insert(0, path)
            return path, tried
        return None, tried

    def gemini_env(self, env: dict[str, str]) -> dict[str, str]:
        """``GEMINI_CLI_SYSTEM_DEFAULTS_PATH`` for gemini-cli behind a reverse proxy (empty when
        the user set it, when the system's defaults cannot be read and merged, or, with a
        warning, when there is no directory gemini-cli would read it from)."""
        if GEMINI_DEFAULTS_ENV in env:
            return {}
        defaults: dict[str, object] = {}
        if GEMINI_SYSTEM_DEFAULTS.exists():
            try:
                loaded = json.loads(GEMINI_SYSTEM_DEFAULTS.read_text())
            except (OSError, ValueError):
                return {}  # never hide a system file agentx cannot read
            if not isinstance(loaded, dict):
                return {}
            defaults = loaded
        security = defaults.setdefault("security", {})
        auth = security.setdefault("auth", {}) if isinstance(security, dict) else None
        if not isinstance(auth, dict):
            return {}
        auth.setdefault("selectedType", "gemini-api-key")
        where, tried = self._private_dir(env)
        if where is None:
            self._report(GEMINI_WARNING.format(tried=", ".join(map(str, tried))))
            return {}
        path = where / "gemini-system-defaults.json"
        path.write_text(json.dumps(defaults))
        return {GEMINI_DEFAULTS_ENV: str(path)}

    def cleanup(self) -> None:
        for path in self._made:
            with contextlib.suppress(OSError):
                if path.name.startswith("capture-"):
                    shutil.rmtree(path)
                else:
                    path.rmdir()  # a base agentx created: only if nothing else is in it
        self._made.clear()
