"""Which tokenizer counts a request's prompt: agentx's own (cl100k_base over a deterministic
rendering, the default), a Hugging Face tokenizer with its chat template (``--tokenizer PATH``),
or the server itself (``--tokenizer server``: vLLM's ``/tokenize`` with the same messages).

Every figure built on prompt tokens (theoretical hit rate, ``simulate``, ``serve-sim``'s
``cached_tokens``) goes through a :class:`Tokenizer`, and carries its :attr:`Tokenizer.name` in
its output (``tokenizer`` key), so a reader knows whose tokens were counted.

    tok = resolve_tokenizer("/models/qwen", to_chat=translate.to_chat)
    hasher = make_hasher(tok, block_size=128)
    hashes, n = hasher.hash_request("openai.chat", body, thread="s1")

Block hashing: the default tokenizer renders prefix-stably, so :class:`agentx.prefix.RequestHasher`
hashes incrementally per thread; a chat template can rewrite history (a date, the last message
marked), so other tokenizers tokenize and hash the whole prompt every time (Rust-fast for HF).
"""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import Protocol

from agentx import tokens
from agentx.errors import UsageError
from agentx.models import JSON
from agentx.prefix import HashArray, RequestHasher, block_hashes
from agentx.tokenizer.types import ToChat, Tokenizer
from agentx.tokens import TokenArray

DEFAULT_TOKENIZER = tokens.DEFAULT_ENCODING  # "cl100k_base"
SERVER = "server"


class Cl100kTokenizer:
    """agentx's own deterministic rendering, tokenized with tiktoken's cl100k_base."""

    name = DEFAULT_TOKENIZER

    def request_tokens(self, api: str, body: JSON) -> TokenArray:
        return tokens.request_tokens(api, body)


class Hasher(Protocol):
    def hash_request(self, api: str, body: JSON, thread: Hashable = None) -> tuple[HashArray, int]:
        """(chained hashes of the full blocks, prompt tokens) of one request."""
        ...


class TokenizerHasher:
    """Block hashes of each request under ``tokenizer``, the whole prompt every time."""

    def __init__(self, tokenizer: Tokenizer, block_size: int) -> None:
        if block_size < 1:
            raise ValueError("block_size must be >= 1")
        self.tokenizer = tokenizer
        self.block_size = block_size

    def hash_request(self, api: str, body: JSON, thread: Hashable = None) -> tuple[HashArray, int]:
        ids = self.tokenizer.request_tokens(api, body)
        return block_hashes(ids, self.block_size), int(ids.size)


def make_hasher(tokenizer: Tokenizer | None, block_size: int, *, max_threads: int = 64) -> Hasher:
    """The incremental cl100k hasher for the default tokenizer, else a whole-prompt one."""
    if tokenizer is None or isinstance(tokenizer, Cl100kTokenizer):
        return RequestHasher(block_size, max_threads=max_threads)
    return TokenizerHasher(tokenizer, block_size)


def tokenizer_name(tokenizer: Tokenizer | None) -> str:
    return DEFAULT_TOKENIZER if tokenizer is None else tokenizer.name


def resolve_tokenizer(
    spec: str | None,
    *,
    server_url: str | None = None,
    model: str | None = None,
    to_chat: ToChat | None = None,
) -> Tokenizer:
    """``None``/``cl100k_base`` -> agentx's own; ``server`` -> ``server_url``'s ``/tokenize``;
    anything else is a Hugging Face tokenizer: a directory (``tokenizer.json`` and
    ``tokenizer_config.json`` with the chat template) or a ``tokenizer.json`` file.

    ``to_chat`` converts a non-chat body (Anthropic, Responses) to chat messages before the
    template sees it. Raises :class:`UsageError` for a spec that cannot be used."""
    if spec is None or spec in (DEFAULT_TOKENIZER, ""):
        return Cl100kTokenizer()
    if spec == SERVER:
        if not server_url:
            raise UsageError("--tokenizer server needs a server: pass --endpoint (or --server-url)")
        from agentx.tokenizer.server import ServerTokenizer

        return ServerTokenizer(server_url, model=model, to_chat=to_chat)
    path = Path(spec).expanduser()
    if not path.exists():
        raise UsageError(
            f"--tokenizer {spec}: no such file or directory (give cl100k_base, server, a "
            "Hugging Face tokenizer directory or its tokenizer.json)"
        )
    from agentx.tokenizer.hf import HFTokenizer

    return HFTokenizer.load(path, to_chat=to_chat)


__all__ = [
    "DEFAULT_TOKENIZER",
    "SERVER",
    "Cl100kTokenizer",
    "Hasher",
    "ToChat",
    "Tokenizer",
    "TokenizerHasher",
    "make_hasher",
    "resolve_tokenizer",
    "tokenizer_name",
]
