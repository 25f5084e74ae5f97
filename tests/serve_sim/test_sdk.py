"""The official OpenAI and Anthropic SDKs read serve-sim as they read the real services."""

from __future__ import annotations

import uuid

import anthropic
import openai
import pytest

from agentx.serve_sim import SimServer


@pytest.fixture
def oai(sim: SimServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=sim.url + "/v1", api_key="sk-test", max_retries=0)


@pytest.fixture
def claude(sim: SimServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.url, api_key="sk-ant-test", max_retries=0)


def prompt() -> str:
    return f"project {uuid.uuid4().hex} " + "context line. " * 100


def test_openai_models(oai: openai.OpenAI, sim: SimServer) -> None:
    assert [m.id for m in oai.models.list()] == [sim.config.model]


def test_openai_non_streaming(oai: openai.OpenAI) -> None:
    messages = [{"role": "user", "content": prompt()}]
    first = oai.chat.completions.create(model="m", messages=messages, max_tokens=7)  # type: ignore[arg-type]
    assert first.choices[0].message.content
    assert first.usage is not None and first.usage.completion_tokens == 7
    assert first.usage.prompt_tokens_details is not None
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    again = oai.chat.completions.create(model="m", messages=messages, max_tokens=7)  # type: ignore[arg-type]
    assert again.usage is not None and again.usage.prompt_tokens_details is not None
    assert again.usage.prompt_tokens_details.cached_tokens > 0


def test_openai_streaming_with_usage(oai: openai.OpenAI) -> None:
    stream = oai.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": prompt()}],
        max_completion_tokens=9,
        stream=True,
        stream_options={"include_usage": True},
    )
    text, usage, finish = "", None, None
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
        if chunk.usage is not None:
            usage = chunk.usage
    assert text and finish == "length"
    assert usage is not None and usage.completion_tokens == 9


def test_openai_tool_call(oai: openai.OpenAI) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "grep",
                "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}},
            },
        }
    ]
    resp = oai.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "find it"}],
        tools=tools,  # type: ignore[arg-type]
        tool_choice="required",
    )
    call = resp.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "grep" and call.function.arguments == '{"pattern":"agentx"}'  # type: ignore[union-attr]
    assert resp.choices[0].finish_reason == "tool_calls"


def test_openai_sdk_raises_bad_request(oai: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="m", messages=[], max_tokens=1)
    assert "messages" in str(info.value)


def test_anthropic_non_streaming(claude: anthropic.Anthropic) -> None:
    system = prompt()
    messages = [{"role": "user", "content": "hello"}]
    first = claude.messages.create(model="c", max_tokens=6, system=system, messages=messages)  # type: ignore[arg-type]
    assert first.content[0].type == "text" and first.stop_reason == "max_tokens"
    assert first.usage.output_tokens == 6 and first.usage.cache_read_input_tokens == 0
    again = claude.messages.create(model="c", max_tokens=6, system=system, messages=messages)  # type: ignore[arg-type]
    assert again.usage.cache_read_input_tokens and again.usage.cache_read_input_tokens > 0
    assert (
        again.usage.input_tokens + again.usage.cache_read_input_tokens == first.usage.input_tokens
    )


def test_anthropic_streaming(claude: anthropic.Anthropic) -> None:
    with claude.messages.stream(
        model="c", max_tokens=11, messages=[{"role": "user", "content": prompt()}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text and final.content[0].text == text  # type: ignore[union-attr]
    assert final.usage.output_tokens == 11
    assert final.stop_reason == "max_tokens"


def test_anthropic_streamed_tool_use(claude: anthropic.Anthropic) -> None:
    tools = [
        {
            "name": "Edit",
            "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        }
    ]
    with claude.messages.stream(
        model="c",
        max_tokens=100,
        tools=tools,
        messages=[{"role": "user", "content": "edit"}],  # type: ignore[arg-type]
    ) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    block = final.content[0]
    assert block.type == "tool_use" and block.name == "Edit" and block.input == {"n": 1}


def test_anthropic_sdk_raises_bad_request(claude: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.BadRequestError) as info:
        claude.messages.create(model="c", max_tokens=5, messages=[])
    assert "messages" in str(info.value)


def test_openai_responses_non_streaming(oai: openai.OpenAI) -> None:
    text = prompt()
    first = oai.responses.create(
        model="m", instructions="be brief", input=text, max_output_tokens=6
    )
    assert first.status == "completed" and first.output_text
    assert first.usage is not None and first.usage.output_tokens == 6
    assert first.usage.input_tokens_details.cached_tokens == 0
    again = oai.responses.create(
        model="m", instructions="be brief", input=text, max_output_tokens=6
    )
    assert again.usage is not None and again.usage.input_tokens_details.cached_tokens > 0


def test_openai_responses_stream_helper_assembles_the_answer(oai: openai.OpenAI) -> None:
    """The SDK's stream helper tracks the events (output items, content parts, deltas) and
    builds the final response from them: it fails on an event out of place."""
    with oai.responses.stream(model="m", input=prompt(), max_output_tokens=8) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert len(deltas) == 8 and final.output_text == "".join(deltas)
    assert final.usage is not None and final.usage.output_tokens == 8
    tools = [
        {
            "type": "function",
            "name": "grep",
            "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}},
            "strict": False,
        }
    ]
    with oai.responses.stream(model="m", input=prompt(), tools=tools) as stream:  # type: ignore[arg-type]
        call = stream.get_final_response().output[0]
    assert call.type == "function_call" and call.name == "grep"
    assert call.arguments == '{"pattern":"agentx"}'
