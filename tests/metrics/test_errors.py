"""Failed requests grouped by kind and status (a redirect's origin too), in the server's words,
with what to change: a hint for every kind."""

from __future__ import annotations

import pytest

from agentx.core.record import (
    ERR_CONNECT,
    ERR_HTTP,
    ERR_REDIRECT,
    FAILURE_KINDS,
    RequestRecord,
    redirect_error,
    redirect_origin,
)
from agentx.metrics.errors import error_kinds, failed_requests_line, hint
from metrics.factory import failed, rec


def test_groups_by_kind_and_status_commonest_first_with_the_first_message() -> None:
    rows = [
        rec(ok=False, error_type=ERR_CONNECT, error="connection refused", status=None),
        rec(ok=False, error_type=ERR_HTTP, error="HTTP 400: first", status=400),
        rec(ok=False, error_type=ERR_HTTP, error="HTTP 400: second", status=400),
        failed(ERR_HTTP),
        rec(),
    ]
    kinds = error_kinds(rows)
    assert [(k.kind, k.status, k.count) for k in kinds] == [
        ("http", 400, 2),
        ("connect", None, 1),
        ("http", 500, 1),
    ]
    assert kinds[0].message == "HTTP 400: first"
    assert kinds[1].hint is not None and "could not be reached" in kinds[1].hint
    line = failed_requests_line(kinds, len(rows))
    assert line is not None and line.startswith("4 of 5 measured requests failed: http 400 x2")
    assert failed_requests_line((), 3) is None


def test_the_hints_of_the_messages_a_benchmark_meets_most() -> None:
    assert "--tool-call-parser" in (
        hint(
            "http",
            400,
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
            None,
        )
        or ""
    )
    assert "--model" in (hint("http", 404, "The model `x` does not exist.", None) or "")
    context = hint("http", 400, "This model's maximum context length is 131,072 tokens.", 200_000)
    assert context is not None and "200,000 tokens" in context and "--max-context 131072" in context
    assert "--api-key" in (hint("http", 401, "Unauthorized", None) or "")
    assert "base URL" in (hint("http", 404, "Not Found", None) or "")
    assert "its log" in (hint("http", 500, "something else", None) or "")


@pytest.mark.parametrize("kind", FAILURE_KINDS)
def test_every_kind_of_failure_has_a_hint(kind: str) -> None:
    status = {ERR_HTTP: 418, ERR_REDIRECT: 307}.get(kind)
    said = hint(kind, status, "an unrecognised message", None)
    assert said, kind


def test_redirects_are_grouped_by_status_and_the_origin_they_name() -> None:
    def redirect(status: int, where: str | None) -> RequestRecord:
        error = redirect_error(status, where)
        return rec(ok=False, error_type=ERR_REDIRECT, error=error, status=status)

    rows = [
        redirect(307, "https://login.example/sso?next=REDACTED"),
        redirect(307, "https://login.example/other"),
        redirect(307, "http://127.0.0.1:9000/v1/chat/completions"),
        redirect(301, "http://127.0.0.1:9000/v1/chat/completions"),
        redirect(301, None),
    ]
    kinds = error_kinds(rows)
    assert [(k.label, k.count) for k in kinds] == [
        ("redirect 307", 2),
        ("redirect 307", 1),
        ("redirect 301", 1),
        ("redirect 301", 1),
    ]
    assert [k.message for k in kinds][:3] == [r.error for r in (rows[0], rows[2], rows[3])]
    assert kinds[2].hint is not None and "moved" in kinds[2].hint
    assert redirect_origin(rows[2].error) == "http://127.0.0.1:9000"
    assert redirect_origin(rows[4].error) is None
