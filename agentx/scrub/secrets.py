"""Secrets in message content, replaced by consistent placeholders.

The same secret gets the same placeholder everywhere in a trace (``ghp_REDACTED2_x_x_x``: the
second distinct secret seen, its public family prefix kept, padded to the secret's token count),
so a conversation that repeats a key in every request still shares its prefix after scrubbing,
token positions do not move, and neither does the theoretical hit rate. Placeholders are
numbered in order of appearance, not derived from the secret, so nothing in the output can be
used to confirm a guess. A match that already holds a placeholder is left alone, so redaction
is idempotent.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from agentx.core.models import JSON
from agentx.prefixcache.tokens import count_tokens

MARK = "REDACTED"
_PAD = "_x"  # one cl100k token per unit, and it never merges with what follows
_MIN_LEN = 8  # no pattern matches less (a@b.io is the shortest e-mail worth a pattern)


@dataclass(frozen=True, slots=True)
class SecretPattern:
    family: str
    regex: re.Pattern[str]  # the secret itself is the group named ``s``
    needles: tuple[str, ...]  # the regex can only match text holding one of these...
    lower: bool = False  # ...in the lower-cased text


def _p(
    family: str, pattern: str, needles: str, *, lower: bool = False, flags: int = 0
) -> SecretPattern:
    return SecretPattern(family, re.compile(pattern, flags), tuple(needles.split()), lower)


_B64 = r"A-Za-z0-9+/"
_AWS_ID = r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"
# what stands between an AWS key id and its secret: blanks, quotes, separators, a label
_AWS_SEP = r"[\s,;:=|\"'`]|\\n|\\t|(?i:(?:aws_?)?secret(?:_?access)?(?:_?key)?)"
# Order matters: specific families before the generic ones that would also match them. The
# group ``s`` is the secret; a public family prefix before it (``sk-ant-``, ``ghp_``) is kept.
# Each pattern runs only on text that holds one of its needles (plain substring tests), so
# ordinary text costs a few dozen ``in`` checks, not a regex pass per family.
PATTERNS: tuple[SecretPattern, ...] = (
    _p(
        "private_key",
        r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----(?:\s|\\n)*"
        r"(?P<s>[A-Za-z0-9+/=:,.\-\s\\]{16,}?)"  # base64 lines (and PEM headers)
        r"(?=(?:\s|\\n)*(?:-----END|\Z|[^A-Za-z0-9+/=:,.\-\s\\]))",
        "PRIVATE",
    ),
    _p("anthropic_api_key", r"\bsk-ant-(?P<s>[A-Za-z0-9_\-]{20,})", "sk-ant-"),
    _p("openai_api_key", r"\bsk-(?:proj|svcacct|admin|or-v1)-(?P<s>[A-Za-z0-9_\-]{20,})", "sk-"),
    _p("openai_api_key", r"\bsk-(?P<s>[A-Za-z0-9_\-]{32,})", "sk-"),
    _p(
        "github_token",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_(?P<s>[A-Za-z0-9]{36,})",
        "ghp_ gho_ ghu_ ghs_ ghr_",
    ),
    _p("github_token", r"\bgithub_pat_(?P<s>[A-Za-z0-9_]{22,})", "github_pat_"),
    _p("gitlab_token", r"\bglpat-(?P<s>[A-Za-z0-9_\-]{20,})", "glpat-"),
    # a bare secret access key beside its key id (a credentials CSV, "id: ... secret: ..."):
    # before the key id's own pattern, which would hide the id this one looks for
    _p(
        "aws_secret_access_key",
        rf"\b{_AWS_ID}\b(?:{_AWS_SEP}){{1,24}}(?P<s>[{_B64}]{{40}})(?![{_B64}])",
        "AKIA ASIA ABIA ACCA",
    ),
    _p(
        "aws_secret_access_key",
        rf"(?<![{_B64}])(?P<s>[{_B64}]{{40}})(?=(?:{_AWS_SEP}){{1,24}}{_AWS_ID}\b)",
        "AKIA ASIA ABIA ACCA",
    ),
    _p(
        "aws_access_key_id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA)(?P<s>[A-Z0-9]{16})\b",
        "AKIA ASIA ABIA ACCA",
    ),
    _p(
        "aws_secret_access_key",
        r"(?i:aws_secret_access_key|aws_secret_key|secretaccesskey)[\"']?\s*[:=]\s*[\"']?"
        rf"(?P<s>[{_B64}]{{40}})(?![{_B64}])",
        "aws_secret secretaccesskey",
        lower=True,
    ),
    _p("slack_token", r"\bxox[abposr]-(?P<s>[A-Za-z0-9\-]{10,})", "xox"),
    _p(
        "slack_webhook",
        r"https://hooks\.slack\.com/services/(?P<s>[A-Za-z0-9/_\-]{20,})",
        "hooks.slack.com",
    ),
    _p("google_api_key", r"\bAIza(?P<s>[0-9A-Za-z_\-]{35})", "AIza"),
    _p("google_oauth_token", r"\bya29\.(?P<s>[0-9A-Za-z_\-]{20,})", "ya29."),
    _p("huggingface_token", r"\bhf_(?P<s>[A-Za-z0-9]{30,})", "hf_"),
    _p("stripe_key", r"\b(?:sk|rk)_(?:live|test)_(?P<s>[A-Za-z0-9]{16,})", "_live_ _test_"),
    _p("npm_token", r"\bnpm_(?P<s>[A-Za-z0-9]{36})\b", "npm_"),
    _p("pypi_token", r"\bpypi-(?P<s>[A-Za-z0-9_\-]{50,})", "pypi-"),
    _p("sendgrid_key", r"\bSG\.(?P<s>[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43})", "SG."),
    _p("groq_api_key", r"\bgsk_(?P<s>[A-Za-z0-9]{40,})", "gsk_"),
    _p("xai_api_key", r"\bxai-(?P<s>[A-Za-z0-9]{40,})", "xai-"),
    _p(
        "jwt",
        r"\beyJ(?P<s>[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,})",
        "eyJ",
    ),
    _p(
        "azure_storage_key", rf"(?i:AccountKey)=(?P<s>[{_B64}]{{40,}}=*)", "accountkey=", lower=True
    ),
    _p("azure_sas_signature", r"[?&]sig=(?P<s>[A-Za-z0-9%+/=]{20,})", "sig="),
    _p(
        "bearer_token",
        r"\b(?i:bearer)\s+(?P<s>(?=[A-Za-z0-9\-._~+/]*\d)[A-Za-z0-9\-._~+/]{16,}=*)",
        "bearer",
        lower=True,
    ),
    _p(
        "basic_auth",
        rf"\b(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?i:basic)\s+(?P<s>[{_B64}]{{8,}}=*)",
        "authorization",
        lower=True,
    ),
    _p(
        "url_password",
        r"\b[a-z][a-z0-9+.\-]{1,20}://[^/\s:@\"'<>]{1,64}:(?P<s>[^/\s@\"'<>]{3,128})@",
        "://",
    ),
    _p(
        "password",
        r"(?i:password|passwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)"
        r"[\"']?\s*[:=]\s*[\"'](?P<s>[^\"'\s${<]{8,})[\"']",
        "passw secret apikey api_key api-key access_token access-token accesstoken auth_token "
        "auth-token authtoken",
        lower=True,
    ),
)
EMAIL = _p(
    "email",
    r"(?P<s>\b[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63})*\.[A-Za-z]{2,24}\b)",
    "@",
)


def placeholder_for(n: int, secret: str, before: str = "") -> str:
    """``REDACTED<n>`` padded with ``_x`` to the secret's token count (after ``before``, the
    family prefix the pattern keeps) where it is shorter.

    It starts and ends with a letter or digit, as secrets do, so the text around it tokenizes
    as it did around the secret: token positions, block boundaries and the hit rate stay put."""
    base = count_tokens(before)
    want = count_tokens(before + secret) - base
    head = f"{MARK}{n}"
    k = max(0, want - (count_tokens(before + head) - base))
    text = head + _PAD * k
    while k > 0 and count_tokens(before + text) - base > want:
        k -= 1
        text = head + _PAD * k
    return text


class SecretRedactor:
    """Replaces secrets in strings and JSON values; remembers placeholders for one trace."""

    def __init__(self, *, redact_emails: bool = False) -> None:
        self.patterns = (*PATTERNS, EMAIL) if redact_emails else PATTERNS
        # (needle, pattern index): one substring test per needle, then only the patterns hit
        self._plain = tuple(
            (n, i) for i, p in enumerate(self.patterns) if not p.lower for n in p.needles
        )
        self._lower = tuple(
            (n, i) for i, p in enumerate(self.patterns) if p.lower for n in p.needles
        )
        self.redact_emails = redact_emails
        self._placeholders: dict[str, str] = {}
        self._distinct: Counter[str] = Counter()
        self.replaced: Counter[str] = Counter()  # occurrences replaced, by family

    @property
    def distinct(self) -> dict[str, int]:
        """Distinct secrets seen, by family."""
        return dict(self._distinct)

    def placeholder(self, family: str, secret: str, before: str = "") -> str:
        """The placeholder of ``secret``: numbered in order of first appearance in the trace."""
        found = self._placeholders.get(secret)
        if found is None:
            self._distinct[family] += 1
            found = placeholder_for(len(self._placeholders) + 1, secret, before)
            self._placeholders[secret] = found
        return found

    def _candidates(self, value: str) -> list[int]:
        """The patterns that may match ``value`` (its needles are in it), in pattern order."""
        if len(value) < _MIN_LEN:
            return []
        hits = [i for n, i in self._plain if n in value]
        if self._lower:
            lowered = value.lower()
            hits.extend(i for n, i in self._lower if n in lowered)
        return sorted(set(hits))

    def find(self, value: str) -> list[tuple[str, int, int]]:
        """The secrets in ``value`` as ``(family, start, end)`` of each match's secret part,
        replacing nothing (a placeholder is no secret): what ``agentx dataset pack`` scans with."""
        found = []
        for i in self._candidates(value):
            pat = self.patterns[i]
            for m in pat.regex.finditer(value):
                if MARK not in m.group("s"):
                    found.append((pat.family, m.start("s"), m.end("s")))
        return found

    def text(self, value: str) -> str:
        """``value`` with every secret replaced (the same object when there was none)."""
        hits = self._candidates(value)
        if not hits:
            return value
        out = value
        for i in hits:
            pat = self.patterns[i]
            out = pat.regex.sub(lambda m, p=pat: self._replace(m, p), out)  # type: ignore[misc]
        return value if out == value else out

    def _replace(self, m: re.Match[str], pat: SecretPattern) -> str:
        secret = m.group("s")
        if MARK in secret:
            return m.group(0)  # a placeholder already
        whole = m.group(0)
        start = m.start("s") - m.start(0)
        end = m.end("s") - m.start(0)
        self.replaced[pat.family] += 1
        return whole[:start] + self.placeholder(pat.family, secret, whole[:start]) + whole[end:]

    def json(self, value: JSON) -> JSON:
        """``value`` with secrets replaced in every string (dict keys kept); unchanged parts and an
        unchanged whole are returned as the very same objects."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            items = [self.json(v) for v in value]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if isinstance(value, dict):
            new = {k: self.json(v) for k, v in value.items()}
            return value if all(new[k] is v for k, v in value.items()) else new
        return value
