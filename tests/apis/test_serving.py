"""serve-sim's request parsers, one per family, and the context-length errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentx.apis import Api, family
from agentx.apis.anthropic import parse_messages
from agentx.apis.gemini import parse_gemini
from agentx.apis.openai_chat import parse_chat
from agentx.apis.openai_responses import parse_responses
from agentx.apis.serving import RequestError, check_context, parse_json


def context_error(api: Api, prompt_tokens: int, max_tokens: int | None, limit: int) -> None:
    check_context(family(api).context_error, prompt_tokens, max_tokens, limit)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_parse_json_only_ever_raises_request_error(raw: bytes) -> None:
    try:
        body = parse_json(raw)
    except RequestError as exc:
        assert exc.status == 400
    else:
        assert isinstance(body, dict)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "messages",
                "max_tokens",
                "stream",
                "n",
                "min_tokens",
                "stream_options",
                "model",
                "max_completion_tokens",
                "input",
                "previous_response_id",
                "max_output_tokens",
                "contents",
                "generationConfig",
            ]
        ),
        st.none()
        | st.booleans()
        | st.integers(-3, 3)
        | st.text(max_size=3)
        | st.lists(
            st.dictionaries(
                st.sampled_from(["role", "content"]), st.sampled_from(["user", "bogus", "x"])
            ),
            max_size=2,
        )
        | st.fixed_dictionaries({}, optional={"maxOutputTokens": st.integers(-1, 2)}),
    )
)
def test_parsers_accept_or_refuse_with_400(body: dict[str, object]) -> None:
    def gemini(body: dict[str, object], model: str) -> object:
        return parse_gemini(body, model, True)

    for parse in (parse_chat, parse_messages, parse_responses, gemini):
        try:
            req = parse(body, "m")  # type: ignore[operator]
        except RequestError as exc:
            assert exc.status == 400 and exc.message
        else:
            assert req.max_tokens is None or req.max_tokens >= 1
            assert req.min_tokens >= 0


def test_parse_chat_reads_the_generation_fields() -> None:
    req = parse_chat(
        {
            "messages": [{"role": "user", "content": "x"}],
            "max_completion_tokens": 9,
            "max_tokens": 99,
            "min_tokens": 3,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        "dflt",
    )
    assert (req.model, req.max_tokens, req.min_tokens, req.ignore_eos) == ("dflt", 9, 3, True)
    assert req.stream and req.include_usage


def test_parse_responses_and_gemini_read_their_fields() -> None:
    req = parse_responses(
        {"input": "x", "max_output_tokens": 9, "stream": True, "ignore_eos": True}, "dflt"
    )
    assert (req.api, req.model, req.max_tokens, req.ignore_eos, req.stream) == (
        Api.OPENAI_RESPONSES,
        "dflt",
        9,
        True,
        True,
    )
    with pytest.raises(RequestError, match="previous_response_id"):
        parse_responses({"input": "x", "previous_response_id": "resp_1"}, "m")
    with pytest.raises(RequestError, match="input"):
        parse_responses({"input": []}, "m")
    contents = [{"role": "user", "parts": [{"text": "x"}]}]
    body = {"contents": contents, "generationConfig": {"maxOutputTokens": 7}}
    req = parse_gemini(body, "gemini-x", False)
    assert (req.api, req.model, req.max_tokens, req.stream) == (Api.GEMINI, "gemini-x", 7, False)
    with pytest.raises(RequestError, match="maxOutputTokens"):
        parse_gemini({**body, "generationConfig": {"maxOutputTokens": 0}}, "g", True)
    with pytest.raises(RequestError, match="candidateCount"):
        parse_gemini({**body, "generationConfig": {"candidateCount": 2}}, "g", True)
    with pytest.raises(RequestError, match="role"):
        parse_gemini({"contents": [{"role": "system", "parts": []}]}, "g", True)


def test_messages_requires_max_tokens() -> None:
    with pytest.raises(RequestError, match="max_tokens"):
        parse_messages({"messages": [{"role": "user", "content": "x"}]}, "m")


def test_context_errors() -> None:
    context_error(Api.OPENAI_CHAT, 90, 10, 100)  # fits exactly
    with pytest.raises(RequestError) as info:
        context_error(Api.OPENAI_CHAT, 90, 11, 100)
    assert info.value.code == "context_length_exceeded" and "101 tokens" in info.value.message
    with pytest.raises(RequestError):
        context_error(Api.OPENAI_CHAT, 100, None, 100)  # no room for a single output token
    with pytest.raises(RequestError, match="prompt is too long"):
        context_error(Api.ANTHROPIC_MESSAGES, 95, 10, 100)
    with pytest.raises(RequestError) as info:
        context_error(Api.OPENAI_RESPONSES, 95, 10, 100)
    assert info.value.param == "input" and info.value.code == "context_length_exceeded"
    with pytest.raises(RequestError, match=r"input token count \(95\) plus maxOutputTokens"):
        context_error(Api.GEMINI, 95, 10, 100)
