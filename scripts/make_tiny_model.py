"""Build a tiny Llama model directory that vLLM can serve with random weights, fully offline.

    .venv-vllm/bin/python scripts/make_tiny_model.py .cache/tiny-llama

Writes `config.json` (Llama: hidden 256, 2 layers, 4 heads), `tokenizer.json` (byte-level BPE
trained with the `tokenizers` library on this interpreter's own standard-library sources),
`tokenizer_config.json` (ChatML / Hermes chat template with tool support, so
`--tool-call-parser hermes` works) and `generation_config.json`. No weights: the server runs with
`--load-format dummy`. Nothing is downloaded.

Idempotent: a directory whose `.recipe` stamp matches this recipe is left alone; otherwise the
model is built in a temporary directory next to it and moved into place.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

VOCAB_SIZE = 8192
CORPUS_BYTES = 6_000_000
MAX_POSITION_EMBEDDINGS = 65536

BOS = "<|begin_of_text|>"
EOS = "<|end_of_text|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
PAD = "<|pad|>"
SPECIAL_TOKENS = [BOS, EOS, IM_START, IM_END, PAD]
# Hermes tool-call markers. Plain (non-special) added tokens: they must survive detokenisation
# (skip_special_tokens) so vLLM's hermes parser sees them in the generated text.
TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 768,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "head_dim": 64,
    "hidden_act": "silu",
    "max_position_embeddings": MAX_POSITION_EMBEDDINGS,
    "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "attention_bias": False,
    "mlp_bias": False,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "initializer_range": 0.02,
    "use_cache": True,
}

# ChatML with Hermes-style tools (the layout of Qwen2.5 / Hermes 2 Pro templates).
CHAT_TEMPLATE = """\
{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content or '' }}\
{%- else %}{{- 'You are a helpful assistant.' }}{%- endif %}
{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n\
You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}
{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and \
arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n\
{\"name\": <function-name>, \"arguments\": <args-json-object>}\\n</tool_call><|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + (messages[0].content or '') + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'system' and loop.first %}
{%- elif message.role == 'user' or message.role == 'system' \
or (message.role == 'assistant' and not message.tool_calls) %}
{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') + '<|im_end|>\\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant' }}
{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
{{- '\\n<tool_call>\\n{\"name\": \"' + tool_call.name + '\", \"arguments\": ' }}
{%- if tool_call.arguments is string %}{{- tool_call.arguments }}\
{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}
{{- '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'tool' %}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}\
{%- endif %}
{{- '\\n<tool_response>\\n' + (message.content or '') + '\\n</tool_response>' }}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""


def corpus_files() -> list[Path]:
    """This interpreter's standard-library sources, in a stable order (tests excluded)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    skip = {"site-packages", "test", "tests", "idlelib", "lib2to3", "__pycache__"}
    files = [
        p
        for p in sorted(stdlib.rglob("*.py"))
        if not skip.intersection(p.relative_to(stdlib).parts)
    ]
    if not files:
        raise SystemExit(f"no Python sources under {stdlib} to train the tokenizer on")
    return files


def corpus(files: list[Path], limit_bytes: int) -> Iterator[str]:
    total = 0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        yield text
        total += len(text)
        if total >= limit_bytes:
            return


def recipe_digest() -> str:
    """Changes whenever this script changes, so an outdated model dir is rebuilt."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def build(out: Path) -> None:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(corpus_files(), CORPUS_BYTES), trainer=trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in TOOL_TOKENS])
    tok.save(str(out / "tokenizer.json"))

    vocab = tok.get_vocab_size(with_added_tokens=True)
    ids = {t: tok.token_to_id(t) for t in SPECIAL_TOKENS}
    config = {
        **CONFIG,
        "vocab_size": vocab,
        "bos_token_id": ids[BOS],
        "eos_token_id": ids[IM_END],
        "pad_token_id": ids[PAD],
    }
    write_json(out / "config.json", config)
    write_json(
        out / "generation_config.json",
        {"bos_token_id": ids[BOS], "eos_token_id": [ids[IM_END], ids[EOS]]},
    )
    added = {
        str(tok.token_to_id(t)): {
            "content": t,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": t in SPECIAL_TOKENS,
        }
        for t in SPECIAL_TOKENS + TOOL_TOKENS
    }
    write_json(
        out / "tokenizer_config.json",
        {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": BOS,
            "eos_token": IM_END,
            "pad_token": PAD,
            "add_bos_token": False,
            "add_eos_token": False,
            "clean_up_tokenization_spaces": False,
            "model_max_length": MAX_POSITION_EMBEDDINGS,
            "added_tokens_decoder": added,
            "chat_template": CHAT_TEMPLATE,
        },
    )
    write_json(
        out / "special_tokens_map.json", {"bos_token": BOS, "eos_token": IM_END, "pad_token": PAD}
    )


def write_json(path: Path, obj: object) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[1]).resolve()
    digest = recipe_digest()
    stamp = out / ".recipe"
    if stamp.is_file() and stamp.read_text().strip() == digest:
        print(f"model dir up to date: {out}")
        return 0
    t0 = time.perf_counter()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    try:
        build(tmp)
        (tmp / ".recipe").write_text(digest + "\n")
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    print(f"built {out} in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
