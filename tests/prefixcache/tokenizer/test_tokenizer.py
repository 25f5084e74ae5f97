"""Tokenizer resolution, the HF chat-template path and block hashing under any tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agentx.core.errors import UsageError
from agentx.prefixcache.hashing import RequestHasher, TokenizerHasher, block_hashes, make_hasher
from agentx.prefixcache.tokenizer import Cl100kTokenizer, resolve_tokenizer
from agentx.prefixcache.tokenizer.hf import HFTokenizer
from agentx.prefixcache.tokens import request_tokens

BODY = {
    "messages": [
        {"role": "system", "content": "You are helpful."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "def main():"}, {"type": "text", "text": "fix"}],
        },
        {
            "role": "assistant",
            "content": "ok",
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "Read", "arguments": '{"p": "<a&b>"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "the lazy dog"},
    ],
    "tools": [{"type": "function", "function": {"name": "Read", "parameters": {"type": "object"}}}],
}


def test_default_is_agentx_cl100k_rendering() -> None:
    tok = resolve_tokenizer(None)
    assert isinstance(tok, Cl100kTokenizer) and tok.name == "cl100k_base"
    assert (
        tok.request_tokens("openai.chat", BODY).tolist()
        == request_tokens("openai.chat", BODY).tolist()
    )
    assert isinstance(make_hasher(tok, 16), RequestHasher)


def test_hf_template_renders_as_transformers_with_vllm_normalisation(hf_dir: Path) -> None:
    tok = resolve_tokenizer(str(hf_dir))
    assert isinstance(tok, HFTokenizer) and tok.name == f"hf:{hf_dir}"
    text = tok.render("openai.chat", BODY)
    # trim_blocks eats the newline after each block tag, as in transformers
    assert text.startswith("<|im_start|>system\nYou are helpful.<tools>{")
    # vLLM's tool dump (description/parameters kept as null) and a non-escaping tojson
    assert '{"name": "Read", "description": null, "parameters": {"type": "object"}}' in text
    assert '<tool_call>{"name": "Read", "arguments": {"p": "<a&b>"}}</tool_call>' in text
    assert "<|im_start|>user\ndef main():\nfix<|im_end|>" in text
    assert text.endswith("<|im_start|>tool\nthe lazy dog<|im_end|><|im_start|>assistant")
    ids = tok.request_tokens("openai.chat", BODY)
    assert ids[0] == 0  # <|im_start|>, a special token written by the template, encoded once
    assert int((ids == 0).sum()) == text.count("<|im_start|>")


def test_tokenizer_json_file_finds_its_config(hf_dir: Path) -> None:
    tok = resolve_tokenizer(str(hf_dir / "tokenizer.json"))
    assert tok.request_tokens("openai.chat", BODY).size > 10


def test_chat_template_jinja_file_wins(hf_dir: Path, tmp_path: Path) -> None:
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((hf_dir / name).read_bytes())
    (tmp_path / "chat_template.jinja").write_text(
        "X{% for m in messages %}{{ m.content }}{% endfor %}"
    )
    assert HFTokenizer.load(tmp_path).render("openai.chat", BODY).startswith("XYou are helpful.")


def test_whole_prompt_hasher_matches_block_hashes(hf_dir: Path) -> None:
    tok = resolve_tokenizer(str(hf_dir))
    hasher = make_hasher(tok, 8)
    assert isinstance(hasher, TokenizerHasher)
    hashes, n = hasher.hash_request("openai.chat", BODY, "t")
    ids = tok.request_tokens("openai.chat", BODY)
    assert n == ids.size
    assert np.array_equal(hashes, block_hashes(ids, 8))


def test_non_chat_bodies_need_a_converter(hf_dir: Path) -> None:
    anthropic = {"messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(ValueError, match="anthropic"):
        resolve_tokenizer(str(hf_dir)).request_tokens("anthropic.messages", anthropic)
    from agentx.apis.translate import to_chat

    tok = resolve_tokenizer(str(hf_dir), to_chat=to_chat)
    assert "<|im_start|>user\nhi<|im_end|>" in tok.render("anthropic.messages", anthropic)  # type: ignore[attr-defined]


def test_bad_specs_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        resolve_tokenizer(str(tmp_path / "missing"))
    with pytest.raises(UsageError, match="needs a server"):
        resolve_tokenizer("server")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(UsageError, match="cannot load"):
        resolve_tokenizer(str(tmp_path))


def test_a_tokenizer_without_chat_template_is_refused(hf_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_bytes((hf_dir / "tokenizer.json").read_bytes())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>"}))
    with pytest.raises(UsageError, match="no chat template"):
        resolve_tokenizer(str(tmp_path))
