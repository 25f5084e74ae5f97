"""Credentials in URLs and request headers: the one place that recognises them and takes
them out.

A URL is stored (trace metadata, ``summary.json``, ``sweep.json``, ``report.html``) and printed
only through :func:`redact_url`: the user-info part (``user:pass@``) and the value of every
query parameter whose name says it is a credential (``key``, ``api_key``, ``token``, ``sig``,
...) become ``REDACTED``. It works on malformed URLs too (it is text substitution, not parsing),
so even an error message about a URL that does not parse leaks nothing. A request header
(``--header``) is stored and printed through :func:`redact_header`: the value of one whose name
says it carries a credential (``Authorization``, ``X-Api-Key``, ``X-Auth-Token``, ``Cookie``) or
whose value is one (``Bearer ...``) becomes ``REDACTED``. Server text a run stores or prints
(an error body, an in-stream error) goes through :func:`redact_values` with the run's own
credentials (:func:`credential_values`): a server that echoes the key it was sent does not get
it written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import cast

REDACTED = "REDACTED"

# Query parameters that carry a credential: exact names, then any name containing these words.
SECRET_QUERY_PARAMS = frozenset(
    {"key", "api_key", "api-key", "apikey", "access_token", "token", "sig", "signature", "code"}
)
_SECRET_WORDS = re.compile(r"key|token|secret|passw|pwd|auth|credential|signature", re.IGNORECASE)
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*@)")
_PARAM = re.compile(r"([?&;])([^=&#;]*)=([^&#;]*)")


def is_secret_param(name: str) -> bool:
    """Does a query parameter of this name carry a credential?"""
    return name.lower() in SECRET_QUERY_PARAMS or bool(_SECRET_WORDS.search(name))


_SECRET_HEADERS = frozenset({"cookie", "set-cookie"})
_SECRET_VALUE = re.compile(r"^\s*(bearer|basic|digest|token)\s", re.IGNORECASE)


def is_secret_header(name: str, value: str = "") -> bool:
    """Does a request header of this name (or with this value) carry a credential?"""
    return (
        name.lower() in _SECRET_HEADERS or is_secret_param(name) or bool(_SECRET_VALUE.match(value))
    )


def redact_header(name: str, value: str) -> str:
    """``"Name: value"`` as it may be stored or printed: a credential's value ``REDACTED``."""
    return f"{name}: {REDACTED if is_secret_header(name, value) else value}"


# a credential shorter than this is not looked for in text (it would replace ordinary words)
MIN_SECRET_CHARS = 4


def credential_values(
    headers: Mapping[str, str], params: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The credentials a client sends: the value of every secret header (:func:`is_secret_header`)
    and, of ``Bearer K``, ``K`` alone too; the value of every secret query parameter. Longest
    first, so :func:`redact_values` replaces ``Bearer K`` whole before ``K``."""
    found: set[str] = set()
    for name, value in headers.items():
        if is_secret_header(name, value):
            found.add(value.strip())
            if _SECRET_VALUE.match(value):
                found.add(value.strip().split(None, 1)[1].strip())
    found.update(v for n, v in (params or {}).items() if is_secret_param(n))
    return tuple(sorted((v for v in found if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True))


def redact_values(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each of ``secrets`` replaced by ``REDACTED``."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def has_credentials(url: str) -> bool:
    return redact_url(url) != url


def redact_url(url: str) -> str:
    """``url`` with its user-info and secret query values replaced by ``REDACTED``."""
    url = _USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", url)

    def param(m: re.Match[str]) -> str:
        sep, name, value = m.groups()
        if value and is_secret_param(name):
            return f"{sep}{name}={REDACTED}"
        return m.group(0)

    head, mark, rest = url.partition("?")
    return head + mark + _PARAM.sub(param, mark + rest)[1:] if mark else head


def redact_urls_in(text: str) -> str:
    """Every ``scheme://...`` URL inside free text (a metadata value, an error message)."""

    def one(m: re.Match[str]) -> str:
        url = m.group(0)
        trail = len(url) - len(url.rstrip(".,:;)]'"))  # punctuation after the URL
        return redact_url(url[: len(url) - trail]) + url[len(url) - trail :]

    return _URL_IN_TEXT.sub(one, text)


_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def redact_urls_deep[T](value: T) -> T:
    """A JSON value with every URL in its strings redacted (a ``summary.json`` read back)."""
    out: object = value
    if isinstance(value, str):
        out = redact_urls_in(value) if "://" in value else value
    elif isinstance(value, dict):
        out = {k: redact_urls_deep(v) for k, v in value.items()}
    elif isinstance(value, list):
        out = [redact_urls_deep(v) for v in value]
    return cast(T, out)


def check_http_url(url: str, flag: str) -> None:
    """A URL agentx sends requests to: http(s), a host, a valid port. Raises ``UsageError``
    naming the flag (and the URL, redacted)."""
    from urllib.parse import urlsplit

    from agentx.core.errors import UsageError

    shown = redact_url(url)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as exc:
        raise UsageError(f"{flag} {shown!r} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{flag} must be an http(s) URL with a host, got {shown!r}")
