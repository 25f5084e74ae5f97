"""Shared fixtures: a tiny Hugging Face tokenizer directory built on the spot (no hub), a
byte-level BPE trained on a few lines and a ChatML template with Hermes-style tools, like
scripts/make_tiny_model.py's; a writer of format-v1 traces."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from agentx.core.models import Exchange

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


V1Writer = Callable[[Path, Sequence[Exchange]], None]


@pytest.fixture(scope="session")
def write_v1_trace() -> V1Writer:
    """Writes exchanges as a trace of format v1 (a full ``hash_ids`` list per row, no delta
    columns), the way files written before v1.1 are."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from agentx.store import write_trace
    from agentx.store.schema import SCHEMA_V1

    def write(path: Path, exchanges: Sequence[Exchange]) -> None:
        write_trace(path, exchanges)
        table = pq.read_table(path)
        rows = table.to_pylist()
        for row, ex in zip(rows, exchanges, strict=True):
            row["hash_ids"] = list(ex.hash_ids or ())
        meta = dict(table.schema.metadata)
        meta[b"agentx.format"] = b"agentx.trace/1"
        pq.write_table(pa.Table.from_pylist(rows, SCHEMA_V1.with_metadata(meta)), path)

    return write
