"""Credentials never reach disk: keep the header's name, the key's family and a salted hash.

The salt is random per capture and lives only in memory, so a hash links the requests that used
the same key within one trace and cannot be matched against a key (or another trace) later.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode

from agentx.core.models import Credential
from agentx.core.urls import REDACTED, is_secret_param

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "x-auth-token",
        "chatgpt-account-id",
    }
)

# Longest first: the first match wins.
_FAMILIES = (
    "sk-ant-oat",
    "sk-ant-admin",
    "sk-ant-",
    "sk-proj-",
    "sk-svcacct-",
    "sk-admin-",
    "sk-or-",
    "sk-",
    "AIza",
    "gsk_",
    "xai-",
    "hf_",
    "ghp_",
    "gho_",
    "github_pat_",
    "eyJ",  # a JWT (OAuth access tokens)
)
_SCHEMES = ("bearer", "basic", "token")


def family(value: str) -> str | None:
    """The recognisable prefix of a key (``sk-ant-``), else the auth scheme, else ``None``."""
    v = value.strip()
    scheme = None
    head, _, rest = v.partition(" ")
    if rest and head.lower() in _SCHEMES:
        scheme, v = head.capitalize(), rest.strip()
    for prefix in _FAMILIES:
        if v.startswith(prefix):
            return "jwt" if prefix == "eyJ" else prefix
    return scheme


def secret_part(value: str) -> str:
    """The secret itself: the header value without its auth scheme."""
    head, _, rest = value.strip().partition(" ")
    return rest.strip() if rest and head.lower() in _SCHEMES else value.strip()


class Secrets:
    """Turns credential headers and query parameters into :class:`Credential` values, and
    remembers the secrets seen (in memory only) so that anything written can be checked."""

    def __init__(self, salt: bytes | None = None) -> None:
        self._salt = salt if salt is not None else os.urandom(16)
        self.seen: set[str] = set()

    def hash(self, secret: str) -> str:
        return hashlib.sha256(self._salt + secret.encode()).hexdigest()[:16]

    def credential(self, header: str, value: str) -> Credential:
        secret = secret_part(value)
        self._remember(secret)
        self._remember(value.strip())
        return Credential(header=header, family=family(value), salted_hash=self.hash(secret))

    def _remember(self, secret: str) -> None:
        if len(secret) >= 8:  # shorter strings are not secrets worth a search (and match anything)
            self.seen.add(secret)

    def from_headers(self, headers: Iterable[tuple[str, str]]) -> list[Credential]:
        out: list[Credential] = []
        for name, value in headers:
            n = name.lower()
            if n in SECRET_HEADERS and value.strip():
                out.append(self.credential(n, value))
                if n == "cookie":
                    for part in value.split(";"):
                        _, _, v = part.partition("=")
                        self._remember(v.strip())
        return out

    def scrub_path(self, path: str) -> tuple[str, list[Credential]]:
        """The path with secret query values replaced by ``REDACTED``, and their credentials."""
        base, sep, query = path.partition("?")
        if not sep:
            return path, []
        pairs = parse_qsl(query, keep_blank_values=True)
        creds: list[Credential] = []
        kept: list[tuple[str, str]] = []
        for k, v in pairs:
            if v and is_secret_param(k):
                creds.append(self.credential(f"query:{k}", v))
                kept.append((k, REDACTED))
            else:
                kept.append((k, v))
        if not creds:
            return path, []
        return f"{base}?{urlencode(kept)}", creds

    def leaks(self, data: bytes) -> list[str]:
        """The remembered secrets that occur in ``data``."""
        return [s for s in self.seen if s.encode() in data]
