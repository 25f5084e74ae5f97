"""Shared fixtures: a tiny Hugging Face tokenizer directory built on the spot (no hub), a
byte-level BPE trained on a few lines and a ChatML template with Hermes-style tools, like
scripts/make_tiny_model.py's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CHATML = (
    "{%- if tools %}<|im_start|>system\n{% if messages[0].role == 'system' %}"
    "{{ messages[0].content }}{% endif %}\n<tools>{% for tool in tools %}\n{{ tool | tojson }}"
    "{% endfor %}\n</tools><|im_end|>\n"
    "{%- elif messages[0].role == 'system' %}<|im_start|>system\n{{ messages[0].content }}"
    "<|im_end|>\n{%- endif %}"
    "{%- for message in messages %}{%- if message.role == 'system' and loop.first %}"
    "{%- elif message.role == 'assistant' and message.tool_calls %}<|im_start|>assistant\n"
    "{{ message.content }}{% for call in message.tool_calls %}<tool_call>"
    "{{ call.function | tojson }}</tool_call>{% endfor %}<|im_end|>\n"
    "{%- else %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{%- endif %}"
    "{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)


@pytest.fixture(scope="session")
def hf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tokenizer.json + tokenizer_config.json (with its chat template) directory."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    d = tmp_path_factory.mktemp("tiny-tok")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|im_start|>", "<|im_end|>", "<|begin_of_text|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    lines = ["def main(): return 0", "the quick brown fox jumps over the lazy dog"] * 50
    tok.train_from_iterator(lines, trainer)
    tok.save(str(d / "tokenizer.json"))
    config = {"chat_template": CHATML, "bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>"}
    (d / "tokenizer_config.json").write_text(json.dumps(config))
    return d


@pytest.fixture(scope="session")
def hf_tokenizer_dir(hf_dir: Path) -> str:
    return str(hf_dir)
