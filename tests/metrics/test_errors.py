"""Failed requests grouped by kind and status, in the server's words, with what to change."""

from __future__ import annotations

from agentx.core.record import ERR_CONNECT, ERR_HTTP
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
    assert hint("http", 500, "something else", None) is None
