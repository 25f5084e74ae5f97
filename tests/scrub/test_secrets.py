"""Secret patterns, consistent placeholders, idempotence."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.prefixcache.tokens import count_tokens
from agentx.scrub.secrets import MARK, SecretRedactor

_RNG = random.Random(11)
A62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def rnd(alphabet: str, n: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


SAMPLES = {
    "anthropic_api_key": "sk-ant-api03-" + rnd(A62 + "_-", 93),
    "openai_api_key": "sk-proj-" + rnd(A62 + "_-", 120),
    "github_token": "ghp_" + rnd(A62, 36),
    "gitlab_token": "glpat-" + rnd(A62, 20),
    "aws_access_key_id": "AKIA" + rnd("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
    "slack_token": "xoxb-" + rnd("0123456789", 12) + "-" + rnd(A62, 24),
    "google_api_key": "AIza" + rnd(A62 + "_-", 35),
    "huggingface_token": "hf_" + rnd(A62, 34),
    "stripe_key": "sk_live_" + rnd(A62, 24),
    "npm_token": "npm_" + rnd(A62, 36),
    "jwt": "eyJ" + rnd(A62, 20) + ".eyJ" + rnd(A62, 30) + "." + rnd(A62, 30),
}
CONTEXTS = {
    "aws_secret_access_key": ("aws_secret_access_key = ", rnd(A62 + "/+", 40)),
    "bearer_token": ("Authorization: Bearer ", rnd(A62, 20) + "9"),
    "url_password": ("postgres://admin:", "s3cr3tP4ss@db.internal:5432/app"),
    "password": ('password = "', 'hunter2-hunter2"'),
    "azure_storage_key": ("AccountKey=", rnd(A62 + "+/", 86) + "=="),
}


@pytest.mark.parametrize("family", sorted(SAMPLES))
def test_each_family_is_replaced(family: str) -> None:
    secret = SAMPLES[family]
    r = SecretRedactor()
    out = r.text(f"use {secret} now")
    assert secret not in out
    assert MARK in out and out.startswith("use ") and out.endswith(" now")
    assert r.replaced == {family: 1}


@pytest.mark.parametrize("family", sorted(CONTEXTS))
def test_context_families_keep_their_context(family: str) -> None:
    before, secret = CONTEXTS[family]
    r = SecretRedactor()
    out = r.text(before + secret)
    assert out.startswith(before)
    assert MARK in out
    assert r.replaced == {family: 1}


def test_private_key_blocks_and_pem_mentions() -> None:
    body = "\n".join(rnd(A62 + "+/", 64) for _ in range(5))
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    r = SecretRedactor()
    out = r.text(f"key:\n{pem}\ndone")
    assert body not in out and "-----BEGIN RSA PRIVATE KEY-----" in out and out.endswith("done")
    code = 'if line.startswith("-----BEGIN PRIVATE KEY-----"):\n    parse(line)'
    assert r.text(code) is code  # mentioning the header is not a key


def test_same_secret_same_placeholder_distinct_secrets_distinct() -> None:
    r = SecretRedactor()
    a, b = SAMPLES["github_token"], "ghp_" + rnd(A62, 36)
    first = r.text(f"x {a} y")
    assert r.text(f"x {a} y") == first
    assert r.json({"k": [f"x {a} y"]}) == {"k": [first]}
    other = r.text(f"x {b} y")
    assert other != first
    assert r.distinct == {"github_token": 2}


def test_placeholder_keeps_the_token_count() -> None:
    r = SecretRedactor()
    for secret in SAMPLES.values():
        text = f"export TOKEN={secret}\n"
        assert count_tokens(r.text(text)) == count_tokens(text), secret


def test_emails_only_by_option() -> None:
    text = "mail jane.doe@example.com please"
    assert SecretRedactor().text(text) is text
    out = SecretRedactor(redact_emails=True).text(text)
    assert "jane.doe@example.com" not in out


def test_ordinary_code_is_left_alone() -> None:
    code = (
        "def tokenize(text):\n    token = text.split()\n    return [t for t in token if t]\n"
        "# see https://example.com/docs?page=2 and sk-learn style names\n"
        "password_field = form.get('password')\nBearer tokens are described in RFC 6750.\n"
    )
    assert SecretRedactor(redact_emails=True).text(code) is code


def test_unchanged_json_is_the_same_object() -> None:
    value = {"a": ["plain", {"b": "text"}], "n": 3}
    assert SecretRedactor().json(value) is value


_pieces = st.sampled_from(
    [
        *SAMPLES.values(),
        *(b + s for b, s in CONTEXTS.values()),
        " ",
        "\n",
        '"',
        "=",
        "REDACTED",
        "_x",
        "sk-",
        "@",
        "user@example.org",
        "Bearer ",
        "plain words",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_pieces | st.text(max_size=8), max_size=12).map("".join))
def test_redaction_is_idempotent(text: str) -> None:
    r = SecretRedactor(redact_emails=True)
    once = r.text(text)
    assert r.text(once) == once
    assert SecretRedactor(redact_emails=True).text(once) == once
