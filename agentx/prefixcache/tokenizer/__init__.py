"""Which tokenizer counts a request's prompt: agentx's own (cl100k_base over a deterministic
rendering, the default), a Hugging Face tokenizer with its chat template (``--tokenizer PATH``),
or the server itself (``--tokenizer server``: vLLM's ``/tokenize`` with the same messages).

Every figure built on prompt tokens (theoretical hit rate, ``simulate``, ``serve-sim``'s
``cached_tokens``) goes through a :class:`Tokenizer`, and carries its :attr:`Tokenizer.name` in
its output (``tokenizer`` key), so a reader knows whose tokens were counted.

    tok = resolve_tokenizer("/models/qwen", to_chat=translate.to_chat)
    ids = tok.request_tokens("openai.chat", body)

Block hashes of those tokens are :mod:`agentx.prefixcache.hashing`'s (``make_hasher``).
"""

from __future__ import annotations

from pathlib import Path

from agentx.core.errors import UsageError
from agentx.core.models import JSON
from agentx.core.options import Panel, flag
from agentx.prefixcache import tokens
from agentx.prefixcache.tokenizer.types import ToChat, Tokenizer
from agentx.prefixcache.tokens import TokenArray

DEFAULT_TOKENIZER = tokens.DEFAULT_ENCODING  # "cl100k_base"
SERVER = "server"
TOKENIZER = flag(
    "--tokenizer",
    metavar="NAME|PATH",
    panel=Panel.TOKENIZER,
    show_default=False,
    help="whose tokens to count: cl100k_base (agentx's rendering), a Hugging Face tokenizer "
    "(directory or tokenizer.json; its chat template is applied as vLLM does), or server "
    "(the endpoint's /tokenize) [default: cl100k_base]",
)
TOKENIZER_SERVER = flag(
    "--tokenizer-url",
    hidden=("--endpoint",),  # its old name; replay's --endpoint is the server under test
    metavar="URL",
    panel=Panel.TOKENIZER,
    show_default=False,
    help="the server whose /tokenize counts for --tokenizer server",
)


class Cl100kTokenizer:
    """agentx's own deterministic rendering, tokenized with tiktoken's cl100k_base."""

    name = DEFAULT_TOKENIZER

    def request_tokens(self, api: str, body: JSON) -> TokenArray:
        return tokens.request_tokens(api, body)


def tokenizer_name(tokenizer: Tokenizer | None) -> str:
    return DEFAULT_TOKENIZER if tokenizer is None else tokenizer.name


def is_default_tokenizer(spec: str | None) -> bool:
    """Whether ``--tokenizer`` names agentx's own cl100k rendering (given or not)."""
    return spec is None or spec in (DEFAULT_TOKENIZER, "")


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
    if spec is None or is_default_tokenizer(spec):
        return Cl100kTokenizer()
    if spec == SERVER:
        if not server_url:
            raise UsageError("--tokenizer server needs a server: pass --tokenizer-url URL")
        from agentx.prefixcache.tokenizer.server import ServerTokenizer

        return ServerTokenizer(server_url, model=model, to_chat=to_chat)
    path = Path(spec).expanduser()
    if not path.exists():
        raise UsageError(
            f"--tokenizer {spec}: no such file or directory (give cl100k_base, server, a "
            "Hugging Face tokenizer directory or its tokenizer.json)"
        )
    from agentx.prefixcache.tokenizer.hf import HFTokenizer

    return HFTokenizer.load(path, to_chat=to_chat)


__all__ = [
    "DEFAULT_TOKENIZER",
    "SERVER",
    "Cl100kTokenizer",
    "ToChat",
    "Tokenizer",
    "resolve_tokenizer",
    "tokenizer_name",
]
