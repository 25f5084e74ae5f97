"""What the simulated model answers: deterministic filler text or a tool call, and how long.

The answer's value types and its filler text are :mod:`agentx.apis.answer` (what every
family's emitter renders).

Length: a request with ``max_completion_tokens`` / ``max_tokens`` gets exactly that many
tokens (``finish`` ``"length"``), so a load generator gets the output it asked for; one without
gets ``--default-max-tokens`` (256) and ``"stop"``. ``--eos-tokens N`` (off by default) models
a model's natural answer length instead: a request without ``ignore_eos`` then stops after
``max(min_tokens, N)`` tokens when that is below its limit (``"stop"``); with ``ignore_eos`` it
runs to its limit, which without ``max_tokens`` is what ``--max-model-len`` leaves, as in vLLM.

Tool calls (when the request has function tools: OpenAI chat ``function``s, Anthropic tools,
Responses ``function`` tools, Gemini ``functionDeclarations``): ``tool_choice`` ``"none"`` /
``{"type": "none"}`` (Gemini ``toolConfig.functionCallingConfig.mode`` ``NONE``) never calls;
``"required"`` / ``{"type": "any"}`` (``ANY``) calls the first tool; a named choice (Gemini:
the first of ``allowedFunctionNames``) calls that tool; ``"auto"`` (or absent) calls the first
tool when the last message is a user turn with text and answers in text when it carries tool
results (or is a Responses ``function_call_output``). So an agent loop goes
user -> tool call -> tool result -> text answer, and ends. Arguments are built from the tool's
JSON schema (required properties, or all when none is marked required): first ``enum`` value
or ``default`` when given, else ``"agentx"`` / ``1`` / ``1.0`` / ``true`` / one-item arrays /
nested objects (Gemini's upper-case ``OBJECT``/``STRING`` types too). A tool call's length is
the token count of its arguments JSON.
"""

from __future__ import annotations

import orjson

from agentx.apis.answer import Finish, OutputPlan, ToolCall
from agentx.apis.bodies import conversation
from agentx.apis.registry import family
from agentx.core.models import JSON
from agentx.prefixcache.tokens import DEFAULT_ENCODING, get_encoding


def output_length(
    max_tokens: int | None,
    room: int,
    min_tokens: int = 0,
    ignore_eos: bool = False,
    eos_tokens: int = 0,
    default_tokens: int = 256,
) -> tuple[int, Finish]:
    """Tokens to generate and why the answer ends; ``room`` is what the context leaves (>= 1)."""
    limit = min(max_tokens, room) if max_tokens is not None else room
    if ignore_eos:
        natural: int | None = None
    elif eos_tokens > 0:
        natural = eos_tokens
    else:
        natural = None if max_tokens is not None else default_tokens
    n = limit if natural is None else min(limit, max(min_tokens, natural))
    return n, ("length" if n >= limit else "stop")


# -- tool calls --------------------------------------------------------------------------------


def _last_turn_wants_tool(api: str, body: dict[str, JSON]) -> bool:
    items = conversation(api, body)
    if not items or not isinstance(items[-1], dict):
        return False
    last = items[-1]
    if last.get("role") != "user":  # assistant turns, Responses function_call_output items
        return False
    return not family(api).answers_tool_results(last)


def choose_tool(api: str, body: dict[str, JSON]) -> tuple[str, JSON] | None:
    """The tool this request calls under the documented schedule, or None for text."""
    fam = family(api)
    specs = fam.offered_tools(body)
    if not specs:
        return None
    kind, named = fam.tool_choice(body)
    if kind == "none":
        return None
    if named is not None:
        for spec in specs:
            if spec[0] == named:
                return spec
        return specs[0]
    if kind in ("required", "any"):
        return specs[0]
    return specs[0] if _last_turn_wants_tool(api, body) else None


def example_value(schema: JSON, depth: int = 0) -> JSON:
    """A deterministic value that satisfies the common shapes of a JSON schema."""
    if not isinstance(schema, dict) or depth > 6:
        return "agentx"
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return example_value(options[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if isinstance(kind, str):
        kind = kind.lower()  # Gemini's OpenAPI subset spells types OBJECT, STRING, ...
    if kind == "object" or (kind is None and isinstance(schema.get("properties"), dict)):
        props = schema.get("properties")
        if not isinstance(props, dict):
            return {}
        required = schema.get("required")
        names = [n for n in required if n in props] if isinstance(required, list) else list(props)
        return {name: example_value(props[name], depth + 1) for name in names}
    if kind == "array":
        return [example_value(schema.get("items"), depth + 1)]
    if kind == "integer":
        return int(schema.get("minimum", 1)) if isinstance(schema.get("minimum"), int) else 1
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "agentx"


def token_pieces(text: str, encoding: str = DEFAULT_ENCODING) -> tuple[str, ...]:
    """``text`` cut at token boundaries (multi-token characters stay whole)."""
    enc = get_encoding(encoding)
    pieces: list[str] = []
    pending = b""
    for raw in enc.decode_tokens_bytes(enc.encode(text, disallowed_special=())):
        pending += raw
        try:
            pieces.append(pending.decode("utf-8"))
        except UnicodeDecodeError:
            continue
        pending = b""
    if pending:
        pieces.append(pending.decode("utf-8", errors="replace"))
    return tuple(pieces)


def plan_output(
    api: str,
    body: dict[str, JSON],
    *,
    max_tokens: int | None,
    room: int,
    min_tokens: int = 0,
    ignore_eos: bool = False,
    eos_tokens: int = 0,
    default_tokens: int = 256,
    call_id: str = "call_0",
) -> OutputPlan:
    # A load generator that pins the length (ignore_eos, min_tokens) gets exactly that length,
    # as from vLLM: the answer is then filler text, never a short tool call.
    tool = None if ignore_eos else choose_tool(api, body)
    if tool is not None:
        name, schema = tool
        args = example_value(schema)
        if not isinstance(args, dict):
            args = {}
        arguments = orjson.dumps(args).decode()
        pieces = token_pieces(arguments) or ("{}",)
        if len(pieces) >= min_tokens:
            return OutputPlan(len(pieces), "tool", ToolCall(call_id, name, arguments, pieces))
    n, finish = output_length(max_tokens, room, min_tokens, ignore_eos, eos_tokens, default_tokens)
    return OutputPlan(n, finish)
