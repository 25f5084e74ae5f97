"""What a launched agent needs besides base-URL variables: temporary config, never the user's.

gemini-cli 0.61 reads ``GOOGLE_GEMINI_BASE_URL`` but then picks the ``gateway`` auth type,
which its non-interactive mode refuses ("Invalid auth method selected") unless the user's
settings already name an auth type. agentx hands it a *system defaults* file (the lowest
precedence of gemini-cli's settings: the user's own choice still wins) that selects the API
key (``GEMINI_API_KEY``). gemini-cli skips a settings file under a group- or world-writable
directory (``/tmp``), so the file goes to ``$XDG_RUNTIME_DIR`` or ``~/.cache/agentx``, and is
removed when the capture ends.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
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
    """No ancestor of ``path`` is writable by group or others (gemini-cli's own test)."""
    for p in (path, *path.parents):
        try:
            mode = p.stat().st_mode
        except OSError:
            return False
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
    return True


class AgentConfig:
    """Temporary files for the launched agent; :meth:`cleanup` removes what it created."""

    def __init__(self) -> None:
        self._made: list[Path] = []  # directories to remove, innermost first

    def _private_dir(self, env: dict[str, str]) -> Path | None:
        candidates = [env.get("XDG_RUNTIME_DIR"), str(Path.home() / ".cache" / "agentx")]
        for cand in candidates:
            if not cand:
                continue
            base = Path(cand)
            try:
                if not base.exists():
                    base.mkdir(parents=True, mode=0o700)
                    self._made.append(base)
                path = Path(tempfile.mkdtemp(prefix="capture-", dir=base))
            except OSError:
                continue
            self._made.insert(0, path)
            if _secure_dir(path):
                return path
        return None

    def gemini_env(self, env: dict[str, str]) -> dict[str, str]:
        """``GEMINI_CLI_SYSTEM_DEFAULTS_PATH`` for gemini-cli behind a reverse proxy (empty when
        the user set it, or when the system's defaults cannot be read and merged)."""
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
        where = self._private_dir(env)
        if where is None:
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
