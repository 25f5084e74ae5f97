"""A Hugging Face tokenizer and its chat template, applied as vLLM and transformers apply them.

Files read (no hub, no network): ``tokenizer.json`` (the ``tokenizers`` library), and beside it
``tokenizer_config.json`` (``chat_template``, special tokens) and, when present,
``chat_template.jinja`` (transformers' newer layout, which wins). The template is rendered in
transformers' jinja2 environment (sandboxed, ``trim_blocks``, ``lstrip_blocks``, loop controls,
its non-escaping ``tojson``, ``raise_exception``, ``strftime_now``) with ``messages``, ``tools``
(``None`` without tools), ``add_generation_prompt=True`` and the special tokens as variables;
the text is then encoded without adding special tokens (the template wrote them), as vLLM does
for chat requests. Messages are normalised first as vLLM does (:mod:`agentx.prefixcache.tokenizer.chat`).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from agentx.core.errors import UsageError
from agentx.core.models import JSON
from agentx.prefixcache.tokenizer import chat
from agentx.prefixcache.tokenizer.types import ToChat
from agentx.prefixcache.tokens import TokenArray

_SPECIAL = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
)


def _need(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(
            f"--tokenizer PATH needs the {module!r} package: pip install 'agentx-replay[hf]'"
        ) from None


def _tojson(
    x: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # transformers' filter: json.dumps, not jinja's HTML-escaping one
    return json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise(message: str) -> None:
    import jinja2

    raise jinja2.exceptions.TemplateError(message)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _compile(template: str) -> Any:
    jinja2 = _need("jinja2")
    from jinja2 import nodes
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(Extension):  # transformers' {% generation %}: render the body as is
        tags = {"generation"}  # noqa: RUF012 - jinja2's API

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.Scope(body).set_lineno(lineno)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = _strftime_now
    try:
        return env.from_string(template)
    except jinja2.TemplateError as exc:
        raise UsageError(f"the tokenizer's chat template does not compile: {exc}") from None


def _token_text(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _template_of(config: dict[str, Any], directory: Path, has_tools: bool) -> str | None:
    jinja_file = directory / "chat_template.jinja"
    if jinja_file.is_file():
        return jinja_file.read_text(encoding="utf-8")
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: "tool_use" with tools, else "default"
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = (
            named.get("tool_use") if has_tools and "tool_use" in named else named.get("default")
        )
    return template if isinstance(template, str) else None


class HFTokenizer:
    """``tokenizer.json`` + chat template: the prompt tokens a vLLM serving this model counts."""

    def __init__(
        self,
        path: Path,
        tokenizer: Any,
        config: dict[str, Any],
        *,
        to_chat: ToChat | None = None,
    ) -> None:
        self.path = path
        self._tok = tokenizer
        self._config = config
        self._dir = path if path.is_dir() else path.parent
        self._to_chat = to_chat
        self._compiled: dict[bool, tuple[str, Any]] = {}
        self._special = {k: t for k in _SPECIAL if (t := _token_text(config.get(k))) is not None}
        if _template_of(config, self._dir, False) is None:
            raise UsageError(
                f"--tokenizer {path}: no chat template (tokenizer_config.json chat_template or "
                "chat_template.jinja); a server would refuse chat requests too"
            )

    @property
    def name(self) -> str:
        return f"hf:{self.path}"

    @classmethod
    def load(cls, path: Path, *, to_chat: ToChat | None = None) -> HFTokenizer:
        tokenizers = _need("tokenizers")
        _need("jinja2")
        file = path / "tokenizer.json" if path.is_dir() else path
        config_file = file.parent / "tokenizer_config.json"
        try:
            tok = tokenizers.Tokenizer.from_file(str(file))
            config = orjson.loads(config_file.read_bytes()) if config_file.is_file() else {}
        except (OSError, ValueError, Exception) as exc:
            raise UsageError(f"--tokenizer {path}: cannot load {file}: {exc}") from None
        return cls(path, tok, config if isinstance(config, dict) else {}, to_chat=to_chat)

    def _template(self, has_tools: bool) -> tuple[str, Any]:
        got = self._compiled.get(has_tools)
        if got is None:
            source = _template_of(self._config, self._dir, has_tools)
            assert source is not None  # checked in __init__
            got = self._compiled[has_tools] = (source, _compile(source))
        return got

    def render(self, api: str, body: JSON) -> str:
        """The prompt text the server's template makes of a request body."""
        tools_present = isinstance(body, dict) and bool(body.get("tools"))
        source, template = self._template(tools_present)
        messages, tools = chat.conversation(api, body, source, self._to_chat)
        return str(
            template.render(
                messages=messages,
                tools=tools,
                documents=None,
                add_generation_prompt=True,
                **self._special,
            )
        )

    def encode(self, text: str) -> TokenArray:
        ids = self._tok.encode(text, add_special_tokens=False).ids
        arr = np.asarray(ids, dtype=np.int64)
        return arr

    def request_tokens(self, api: str, body: JSON) -> TokenArray:
        return self.encode(self.render(api, body))
