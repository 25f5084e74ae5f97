"""Gemini ``generateContent`` (``models/{model}:generateContent``, and
``:streamGenerateContent``, SSE with ``?alt=sse``): everything agentx knows of it.

Sections, in order:

- usage: ``gemini_usage`` (``usageMetadata``);
- capture: ``GeminiAssembler``, the model from the URL path;
- replay: ``GeminiStreamParser``, the native request (the model in the path, the length in
  ``generationConfig``);
- translation to chat;
- serve-sim: ``parse_gemini``, the path's model and method, ``functionDeclarations`` and
  ``toolConfig``, ``GeminiEmitter``, ``gemini_error``, the context-length error;
- the :class:`~agentx.apis.family.Family` (no scrub section: calls and responses pair by name
  and order, not by id).

One module holds the whole family, stage by stage, so that a change to the family is one
file; cohesion wins over size here (the shared bases are the sibling modules).

Capture: every SSE event is one whole ``GenerateContentResponse``. A stream has no end marker:
it is complete once a candidate carries a ``finishReason``. Parts are ``text`` (``thought:
true`` for a thought summary), ``functionCall`` (``name``, ``args`` as an object, an optional
``id``), ``thoughtSignature`` (opaque), and rarer ``executableCode`` / ``codeExecutionResult``.
``usageMetadata`` is cumulative: the last one wins.

Translation: a content is {"role": "user" | "model", "parts": [...]}. Gemini's function calls
carry no id the agent can rely on (gemini-cli answers with ids of its own), so a call and its
response are paired by name and order: the k-th call of ``name`` in a model turn and the k-th
response of ``name`` in the next user turn both get the id ``call_<name>_<k>``.

serve-sim: a ``GenerateContentResponse`` body, or a stream of them, one per token: SSE
``data:`` events with ``?alt=sse``, else one JSON array sent element by element, as Google
streams it. Every chunk carries ``usageMetadata`` (the prompt's count until the last, which has
them all: ``promptTokenCount``, ``candidatesTokenCount``, ``totalTokenCount``,
``cachedContentTokenCount``), ``modelVersion`` and ``responseId``; the last has the
``finishReason``. A function call is one whole ``functionCall`` part in the first chunk (Gemini
does not stream arguments); the chunks of its other tokens are due on the same clock but empty.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from agentx.apis.answer import OutputPlan
from agentx.apis.assemble import (
    Assembled,
    AssemblerBase,
    Obj,
    as_obj,
    error_text,
    loads_obj,
)
from agentx.apis.chat_parts import Message, dump, function_tool, text_of, tool_call
from agentx.apis.emit import SSE_CONTENT_TYPE, Emitter, Pieces, UsageCounts, dumps
from agentx.apis.family import Family
from agentx.apis.names import Api
from agentx.apis.provider_fields import PROVIDER_KEYS
from agentx.apis.serving import (
    RequestError,
    Route,
    SimRequest,
    bool_field,
    int_field,
)
from agentx.apis.sse import SSEEvent
from agentx.apis.stream import (
    StreamParser,
    StreamProtocolError,
)
from agentx.apis.usage_counts import (
    Raw,
    UsageCheck,
    checked,
    merge_usage,
)
from agentx.core.models import JSON, Response, Usage

PATH = "/v1beta/models/{model}:streamGenerateContent?alt=sse"  # what replay sends
SERVE_PATH = "/v1beta/models/{target}"  # serve-sim's route: target is "{model}:{method}"


# -- usage -------------------------------------------------------------------------------------


def gemini_usage(raw: Raw, timings: Raw | None, check: UsageCheck) -> Usage:
    before = len(check.problems)
    prompt = check.count(raw, "promptTokenCount")
    tool_use = check.count(raw, "toolUsePromptTokenCount")
    prompt_known = len(check.problems) == before
    candidates = check.count(raw, "candidatesTokenCount")
    thoughts = check.count(raw, "thoughtsTokenCount")
    output = (
        None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    )
    return Usage(
        prompt_tokens=None if prompt is None or not prompt_known else prompt + (tool_use or 0),
        cached_tokens=check.count(raw, "cachedContentTokenCount"),
        completion_tokens=output,
        reasoning_tokens=thoughts,
    )


# -- capture: the response assembled -----------------------------------------------------------


def model_from_path(path: str) -> str | None:
    """``gemini-2.5-pro`` from ``/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse``
    (also Vertex's ``.../publishers/google/models/{model}:...``)."""
    p = path.split("?", 1)[0]
    head, sep, _method = p.rpartition(":")
    if not sep or "/models/" not in head:
        return None
    model = head.rsplit("/models/", 1)[1]
    return model or None


class GeminiAssembler(AssemblerBase):
    """Each event a ``GenerateContentResponse``; parts of candidate 0 are concatenated."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[Obj] = []  # merged: consecutive text parts of one kind are joined
        self.usage_raw: Obj = {}
        self.finish: str | None = None

    def event(self, ev: SSEEvent) -> bool:
        d = loads_obj(ev.data)
        if d is None:
            return False
        if "error" in d:
            self.error = error_text(d)
            return False
        return self._chunk(d)

    def _chunk(self, d: Obj) -> bool:
        self.id = d.get("responseId") or self.id
        self.model = d.get("modelVersion") or self.model
        merge_usage(self.usage_raw, d.get("usageMetadata"))
        token = False
        for cand in d.get("candidates") or []:
            c = as_obj(cand)
            if (c.get("index") or 0) != 0:
                continue
            for part in as_obj(c.get("content")).get("parts") or []:
                token = self._part(as_obj(part)) or token
            if c.get("finishReason"):
                self.finish = str(c["finishReason"])
                self.complete = True
        feedback = as_obj(d.get("promptFeedback"))
        if feedback.get("blockReason"):  # the prompt was refused: no candidate will come
            self.finish = str(feedback["blockReason"])
            self.complete = True
        return token

    def _part(self, part: Obj) -> bool:
        if not part:
            return False
        last = self.parts[-1] if self.parts else None
        text = part.get("text")
        if isinstance(text, str) and set(part) <= {"text", "thought", "thoughtSignature"}:
            thought = bool(part.get("thought"))
            if (
                last is not None
                and isinstance(last.get("text"), str)
                and bool(last.get("thought")) == thought
                and "thoughtSignature" not in last
            ):
                last["text"] += text
                if "thoughtSignature" in part:
                    last["thoughtSignature"] = part["thoughtSignature"]
            else:
                self.parts.append(dict(part))
            return bool(text)
        self.parts.append(dict(part))
        return "functionCall" in part or "executableCode" in part

    def body(self, obj: JSON) -> None:
        if isinstance(obj, list):  # a non-SSE streamGenerateContent answer: a JSON array
            for item in obj:
                if isinstance(item, dict):
                    self._chunk(item)
            self.complete = True
            return
        d = as_obj(obj)
        if "error" in d:
            self.error = error_text(d)
            return
        self._chunk(d)
        self.complete = True

    def result(self) -> Assembled:
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[JSON] = []
        for part in self.parts:
            if isinstance(part.get("text"), str):
                (thoughts if part.get("thought") else texts).append(part["text"])
            fc = part.get("functionCall")
            if isinstance(fc, dict):
                calls.append(
                    {
                        "id": fc.get("id"),
                        "name": fc.get("name"),
                        "arguments": _dumps(fc.get("args")),
                    }
                )
        message = {"role": "model", "parts": self.parts} if self.parts else None
        return self._assembled(
            response=Response(
                text="".join(texts) if texts else None,
                reasoning="".join(thoughts) if thoughts else None,
                tool_calls=tuple(calls),
                stop_reason=self.finish,
                message=message,
            ),
            usage=checked(gemini_usage, self.usage_raw)[0],
        )


def _dumps(value: Any) -> str:
    return orjson.dumps(value if value is not None else {}).decode()


# -- replay: the stream parser and the native request ------------------------------------------


class GeminiStreamParser(StreamParser):
    """Gemini ``:streamGenerateContent?alt=sse``: each event a whole ``GenerateContentResponse``;
    no end marker, the stream is done once candidate 0 has a ``finishReason``."""

    __slots__ = ("_usage_raw",)
    api = Api.GEMINI

    def __init__(self, live: bool = False) -> None:
        super().__init__(live)
        self._usage_raw: dict[str, Any] = {}

    def _data(self, name: bytes | None, payload: bytes, t_ns: int) -> None:
        obj = self._load(payload)
        for cand in obj.get("candidates") or ():
            if not isinstance(cand, dict) or (cand.get("index") or 0) != 0:
                continue
            for part in (cand.get("content") or {}).get("parts") or ():
                if not isinstance(part, dict):
                    continue
                text = part.get("text")
                call = part.get("functionCall")
                if text:
                    if type(text) is not str:
                        raise StreamProtocolError("Gemini part text is not a string")
                    content = not part.get("thought")
                    self._token(t_ns, content)
                    if self.live and content:
                        self.text_parts.append(text)
                elif isinstance(call, dict):
                    self._token(t_ns, False)
                    if self.live:
                        args = orjson.dumps(call.get("args") or {}).decode()
                        self._tool_delta(
                            len(self.tool_calls), call.get("id"), call.get("name"), args
                        )
            if cand.get("finishReason"):
                self.finish_reason = str(cand["finishReason"])
                self.done = True
        usage = obj.get("usageMetadata")
        if isinstance(usage, dict) and usage:
            merge_usage(self._usage_raw, usage)
            self._set(*checked(gemini_usage, self._usage_raw))
        elif usage:  # named by checked_usage: "usage is not an object"
            self._set(*checked(gemini_usage, usage))


def replay_body(body: dict[str, Any], model: str, max_tokens: int) -> str:
    """The model is in the path; no "stream" key: the path says it."""
    config = body.get("generationConfig")
    body["generationConfig"] = {
        **(config if isinstance(config, dict) else {}),
        "maxOutputTokens": max_tokens,
    }
    return PATH.format(model=model)


def asked_tokens(body: dict[str, Any], max_tokens: int) -> int | None:
    """The ``maxOutputTokens`` agentx set in ``generationConfig``."""
    return max_tokens


# -- translation to OpenAI chat ----------------------------------------------------------------


def _gemini_part_text(part: dict[str, Any]) -> str | None:
    """The text a part puts in context (``None``: no text: a call, a response, a thought)."""
    if part.get("thought") or "functionCall" in part or "functionResponse" in part:
        return None
    if isinstance(part.get("text"), str):
        return str(part["text"])
    inline = part.get("inlineData") or part.get("fileData")
    if isinstance(inline, dict):
        mime = str(inline.get("mimeType") or "")
        return "[image]" if mime.startswith("image/") else "[file]"
    if isinstance(part.get("executableCode"), dict):
        return str(part["executableCode"].get("code") or "")
    if isinstance(part.get("codeExecutionResult"), dict):
        return str(part["codeExecutionResult"].get("output") or "")
    rest = {k: v for k, v in part.items() if k not in PROVIDER_KEYS}
    return dump(rest) if rest else None


def gemini_text(value: JSON) -> str:
    """A Gemini content (or its ``parts``, or a string) as one string, thoughts dropped."""
    if isinstance(value, str):
        return value
    parts = value.get("parts") if isinstance(value, dict) else value
    texts = []
    for part in parts if isinstance(parts, list) else ():
        text = _gemini_part_text(part) if isinstance(part, dict) else None
        if text is not None:
            texts.append(text)
    return "\n".join(texts)


def _gemini_response_text(response: JSON) -> str:
    """A functionResponse's ``response``: its one string field (``output``, ...) or JSON."""
    if isinstance(response, dict) and len(response) == 1:
        (only,) = response.values()
        if isinstance(only, str):
            return only
    return response if isinstance(response, str) else dump(response)


def gemini_content(item: JSON) -> list[Message]:
    if not isinstance(item, dict):
        return [{"role": "user", "content": text_of(item)}]
    parts = [p for p in item.get("parts") or () if isinstance(p, dict)]
    seen: dict[str, int] = {}

    def call_id(name: str) -> str:
        k = seen.get(name, 0)
        seen[name] = k + 1
        return f"call_{name}_{k}"

    if item.get("role") == "model":
        calls = []
        for p in parts:
            fc = p.get("functionCall")
            if isinstance(fc, dict):
                name = str(fc.get("name") or "")
                calls.append(tool_call(call_id(name), name, fc.get("args")))
        out: Message = {"role": "assistant", "content": gemini_text(parts)}
        if calls:
            out["tool_calls"] = calls
        return [out]
    messages: list[Message] = []
    for p in parts:  # tool results first: they must follow the assistant's tool calls
        fr = p.get("functionResponse")
        if isinstance(fr, dict):
            name = str(fr.get("name") or "")
            messages.append(
                {
                    "role": "tool",
                    "content": _gemini_response_text(fr.get("response")),
                    "tool_call_id": call_id(name),
                }
            )
    text = gemini_text([p for p in parts if "functionResponse" not in p])
    if text or not messages:
        messages.append({"role": "user", "content": text})
    return messages


def _lower_types(schema: JSON) -> JSON:
    """Gemini's OpenAPI-style schemas spell types in capitals (``OBJECT``): JSON Schema's way."""
    if isinstance(schema, dict):
        return {
            k: v.lower() if k == "type" and isinstance(v, str) else _lower_types(v)
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


def gemini_tools(tools: JSON) -> list[Message]:
    out = []
    for tool in tools if isinstance(tools, list) else ():
        decls = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for fn in decls if isinstance(decls, list) else ():  # googleSearch & co: server tools
            if isinstance(fn, dict):
                params = fn.get("parametersJsonSchema", fn.get("parameters"))
                out.append(
                    function_tool(fn.get("name"), fn.get("description"), _lower_types(params))
                )
    return out


# -- serve-sim: the request, the answer, the errors --------------------------------------------

_GEMINI_ROLES = frozenset({"user", "model", "function"})


def parse_gemini(body: dict[str, JSON], model: str, stream: bool) -> SimRequest:
    """``POST /v1beta/models/{model}:generateContent`` (``stream`` False) and
    ``:streamGenerateContent`` (True): the model and the streaming come from the path. Top-level
    ``ignore_eos``/``min_tokens`` are honoured, as on the other routes (Google refuses them)."""
    contents = body.get("contents")
    if contents is None:
        raise RequestError("* GenerateContentRequest.contents: contents is not specified")
    if not isinstance(contents, list) or not contents:
        raise RequestError("* GenerateContentRequest.contents: must be a non-empty list")
    for i, content in enumerate(contents):
        role = content.get("role") if isinstance(content, dict) else None
        if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
            raise RequestError(f"* GenerateContentRequest.contents[{i}].parts: must be a list")
        if role is not None and role not in _GEMINI_ROLES:
            raise RequestError(
                f"* GenerateContentRequest.contents[{i}].role: must be 'user' or 'model'"
            )
    config = body.get("generationConfig")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise RequestError("* GenerateContentRequest.generation_config: must be an object")
    where = "generationConfig."
    candidates = int_field(config, "candidateCount", 1, where)
    if candidates is not None and candidates != 1:
        raise RequestError(
            "candidateCount > 1 is not supported by agentx serve-sim",
            param=where + "candidateCount",
        )
    max_tokens = int_field(config, "maxOutputTokens", 1, where)
    min_tokens = int_field(body, "min_tokens", 0) or 0  # serve-sim's extras, as on the others
    return SimRequest(
        api=Api.GEMINI,
        body=body,
        model=model,
        stream=stream,
        include_usage=True,
        max_tokens=max_tokens,
        min_tokens=min_tokens if max_tokens is None else min(min_tokens, max_tokens),
        ignore_eos=bool_field(body, "ignore_eos"),
    )


_METHODS = {"generateContent": False, "streamGenerateContent": True}  # -> streamed


def route(target: str, query: Mapping[str, str]) -> Route | None:
    """``{model}:generateContent`` and ``:streamGenerateContent`` (SSE with ``?alt=sse``, else
    a streamed JSON array); the model named in the path is echoed. ``None``: no such method."""
    model, _, method = target.rpartition(":")
    if not model or method not in _METHODS:
        return None
    return Route(model=model, stream=_METHODS[method], sse=query.get("alt") == "sse")


def offered_tools(body: dict[str, JSON]) -> list[tuple[str, JSON]]:
    """``(name, JSON schema)`` of each of the tools' ``functionDeclarations``, in order."""
    specs: list[tuple[str, JSON]] = []
    tools = body.get("tools")
    if not isinstance(tools, list):
        return specs
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        for decl in tool.get("functionDeclarations") or ():
            if isinstance(decl, dict) and isinstance(decl.get("name"), str):
                schema = decl.get("parameters", decl.get("parametersJsonSchema"))
                specs.append((decl["name"], schema))
    return specs


def tool_choice(body: dict[str, JSON]) -> tuple[JSON, str | None]:
    """``toolConfig.functionCallingConfig``: ``NONE`` -> ``"none"``, ``ANY`` -> ``"required"``
    (named: the first of ``allowedFunctionNames``), else auto."""
    config = body.get("toolConfig")
    calling = config.get("functionCallingConfig") if isinstance(config, dict) else None
    if not isinstance(calling, dict):
        return None, None
    mode = str(calling.get("mode") or "AUTO").upper()
    names = calling.get("allowedFunctionNames")
    named = names[0] if mode == "ANY" and isinstance(names, list) and names else None
    mapped = {"NONE": "none", "ANY": "required"}.get(mode, "auto")
    return mapped, named if isinstance(named, str) else None


def answers_tool_results(last: dict[str, JSON]) -> bool:
    """Whether the last user turn carries ``functionResponse`` parts."""
    parts = last.get("parts")
    return isinstance(parts, list) and any(
        isinstance(p, dict) and "functionResponse" in p for p in parts
    )


def parse_request(body: dict[str, JSON], served_model: str, route: Route) -> SimRequest:
    assert route.model is not None and route.stream is not None
    return parse_gemini(body, route.model, route.stream)


_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "tool": "STOP"}
_SSE_END = b"\r\n\r\n"
_ARRAY_SEP = b",\r\n"


def gemini_usage_body(u: UsageCounts) -> dict[str, JSON]:
    return {
        "promptTokenCount": u.prompt_tokens,
        "candidatesTokenCount": u.completion_tokens,
        "totalTokenCount": u.prompt_tokens + u.completion_tokens,
        "cachedContentTokenCount": u.cached_tokens,
    }


class GeminiEmitter:
    def __init__(self, response_id: str, model: str, plan: OutputPlan, seed: int, sse: bool):
        self.response_id = response_id
        self.model = model
        self.plan = plan
        self.sse = sse
        self.content_type = SSE_CONTENT_TYPE if sse else "application/json"
        self.terminator: bytes | None = b"data: " if sse else None
        self._pieces = Pieces(plan, seed)
        self._tail = b',"modelVersion":' + dumps(model) + b',"responseId":' + dumps(response_id)
        self._pre = self._post = b""  # set by opening(), which knows the prompt's size

    def _frame(self, first: bool, obj: bytes) -> bytes:
        if self.sse:
            return b"data: " + obj + _SSE_END
        return obj if first else _ARRAY_SEP + obj

    def _parts(self, text: str) -> list[JSON]:
        tc = self.plan.tool_call
        if tc is None:
            return [{"text": text}]
        return [{"functionCall": {"name": tc.name, "args": orjson.loads(tc.arguments)}}]

    def _response(self, parts: list[JSON], finish: str | None, usage: JSON) -> dict[str, JSON]:
        candidate: dict[str, JSON] = {"content": {"parts": parts, "role": "model"}}
        if finish is not None:
            candidate["finishReason"] = finish
        candidate["index"] = 0
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": self.model,
            "responseId": self.response_id,
        }

    def opening(self, usage: UsageCounts) -> bytes:
        running = dumps(
            {"promptTokenCount": usage.prompt_tokens, "totalTokenCount": usage.prompt_tokens}
        )
        self._pre = b'{"candidates":[{"content":{"parts":[{"text":"'
        self._post = (
            b'"}],"role":"model"},"index":0}],"usageMetadata":' + running + self._tail + b"}"
        )
        if self.plan.tool_call is not None:  # the whole call, in the first chunk
            head = dumps(self._response(self._parts(""), None, orjson.loads(running)))
            self._pre, self._post = head, b""
        return b"" if self.sse else b"["

    def token(self, i: int) -> bytes:
        if self.plan.tool_call is not None:
            return self._frame(True, self._pre) if i == 0 else b""
        return self._frame(i == 0, self._pre + self._pieces.escaped(i) + self._post)

    def tokens(self, start: int, stop: int) -> bytes:
        return b"".join([self.token(i) for i in range(start, stop)])

    def closing(self, usage: UsageCounts) -> bytes:
        last = self._response([{"text": ""}], _FINISH[self.plan.finish], gemini_usage_body(usage))
        return self._frame(False, dumps(last)) + (b"" if self.sse else b"]")

    def body(self, usage: UsageCounts) -> dict[str, JSON]:
        return self._response(
            self._parts(self._pieces.text()), _FINISH[self.plan.finish], gemini_usage_body(usage)
        )


def make_emitter(
    next_id: Callable[[str], str], sreq: SimRequest, plan: OutputPlan, seed: int, sse: bool
) -> tuple[str, Emitter]:
    rid = next_id("")
    return rid, GeminiEmitter(rid, sreq.model, plan, seed, sse)


_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
}


def gemini_error(status: int, message: str) -> dict[str, JSON]:
    """Google's error body: ``{"error": {"code", "message", "status"}}``."""
    name = _GEMINI_STATUS.get(status, "INVALID_ARGUMENT" if status < 500 else "INTERNAL")
    return {"error": {"code": status, "message": message, "status": name}}


def error_body(
    status: int,
    message: str,
    param: str | None = None,
    code: str | None = None,
    kind: str | None = None,
) -> dict[str, JSON]:
    return gemini_error(status, message)


def context_error(prompt_tokens: int, max_tokens: int | None, limit: int) -> RequestError:
    asked = f"The input token count ({prompt_tokens})"
    if prompt_tokens < limit:
        asked += f" plus maxOutputTokens ({max_tokens})"
    return RequestError(f"{asked} exceeds the maximum number of tokens allowed ({limit}).")


# -- the family --------------------------------------------------------------------------------


def _speaks(path: str) -> bool:
    return "/models/" in path and (
        path.endswith(":generateContent") or path.endswith(":streamGenerateContent")
    )


FAMILY = Family(
    api=Api.GEMINI,
    conversation_key="contents",
    system_key="systemInstruction",
    speaks=_speaks,
    model_from_path=model_from_path,
    serve_path=SERVE_PATH,
    error_prefix="/v1beta/",
    usage=gemini_usage,
    assembler=GeminiAssembler,
    stream_parser=GeminiStreamParser,
    replay_body=replay_body,
    asked_tokens=asked_tokens,
    chat_messages=gemini_content,
    chat_tools=gemini_tools,
    system_text=gemini_text,
    merge_messages=None,
    route=route,
    parse_request=parse_request,
    emitter=make_emitter,
    error_body=error_body,
    context_error=context_error,
    offered_tools=offered_tools,
    tool_choice=tool_choice,
    answers_tool_results=answers_tool_results,
    call_id_prefix="call_",
    tool_pairs=None,  # calls and responses pair by name and order, not by id
)
