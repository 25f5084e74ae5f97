"""The registry: every model API has a family with every piece, and the stored names never
change (traces, requests.parquet and every JSON output hold them)."""

from __future__ import annotations

import dataclasses

import pytest

from agentx.apis import FAMILIES, MODEL_APIS, Api, Family, classify, family
from agentx.apis.assemble import Assembled
from agentx.apis.bodies import conversation_key, system_key
from agentx.apis.family import ToolPairs
from agentx.apis.stream import StreamParser


def test_the_stored_names_are_unchanged() -> None:
    assert {a.name: a.value for a in Api} == {
        "OPENAI_CHAT": "openai.chat",
        "OPENAI_RESPONSES": "openai.responses",
        "ANTHROPIC_MESSAGES": "anthropic.messages",
        "GEMINI": "gemini.generate_content",
        "OTHER": "other",
    }
    assert MODEL_APIS == (
        "openai.chat",
        "openai.responses",
        "anthropic.messages",
        "gemini.generate_content",
    )
    assert all(type(str(a)) is str and str(a) == a.value for a in Api)


def test_every_model_api_has_a_family_with_every_piece() -> None:
    assert set(FAMILIES) == set(MODEL_APIS)
    assert Api.OTHER not in FAMILIES
    names = {f.name for f in dataclasses.fields(Family)}
    for api in MODEL_APIS:
        fam = FAMILIES[api]
        assert fam.api is api and family(api) is fam
        for name in names:
            value = getattr(fam, name)
            if name in ("system_text", "merge_messages", "tool_pairs"):  # None: nothing to do
                assert value is None or callable(value) or isinstance(value, ToolPairs)
            elif name not in (
                "api",
                "conversation_key",
                "system_key",
                "serve_path",
                "error_prefix",
                "call_id_prefix",
            ):
                assert callable(value), f"{api}: {name}"
        assert fam.conversation_key and fam.system_key and fam.serve_path.startswith("/")
        assert isinstance(fam.assembler().result(), Assembled)
        parser = fam.stream_parser(False)
        assert isinstance(parser, StreamParser) and parser.api == api
        assert fam.route("m:streamGenerateContent", {}) is not None


@pytest.mark.parametrize(
    ("api", "conversation", "system"),
    [
        (Api.OPENAI_CHAT, "messages", "system"),
        (Api.OPENAI_RESPONSES, "input", "instructions"),
        (Api.ANTHROPIC_MESSAGES, "messages", "system"),
        (Api.GEMINI, "contents", "systemInstruction"),
        (Api.OTHER, "messages", "system"),  # any other API: OpenAI chat's shape
        ("no.such.api", "messages", "system"),
    ],
)
def test_body_keys_come_from_the_family(api: str, conversation: str, system: str) -> None:
    assert (conversation_key(api), system_key(api)) == (conversation, system)


@pytest.mark.parametrize(
    ("method", "path", "api"),
    [
        ("POST", "/v1/chat/completions", Api.OPENAI_CHAT),
        ("POST", "/v1/responses?x=1", Api.OPENAI_RESPONSES),
        ("WS", "/v1/responses/", Api.OPENAI_RESPONSES),
        ("POST", "/v1/messages", Api.ANTHROPIC_MESSAGES),
        ("POST", "/v1/messages/batches/messages", Api.OTHER),
        ("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", Api.GEMINI),
        ("GET", "/v1/chat/completions", Api.OTHER),
        ("POST", "/v1/models", Api.OTHER),
    ],
)
def test_classify_asks_every_family(method: str, path: str, api: Api) -> None:
    assert classify(method, path) is api
