"""What an API family provides: one :class:`Family` per family, declared at the end of the
family's module (:mod:`agentx.apis.openai_chat`, :mod:`agentx.apis.openai_responses`,
:mod:`agentx.apis.anthropic`, :mod:`agentx.apis.gemini`) and listed in
:mod:`agentx.apis.registry`. A stage that picks family behaviour asks the registry for the
family's piece instead of branching on the API's name; adding a family is one module, one
registry line and its tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentx.apis.answer import OutputPlan
from agentx.apis.assemble import Assembler
from agentx.apis.chat_parts import Message
from agentx.apis.emit import Emitter
from agentx.apis.names import Api
from agentx.apis.serving import RequestError, Route, SimRequest
from agentx.apis.stream import StreamParser
from agentx.apis.usage_counts import UsageReader
from agentx.core.models import JSON

# serve-sim: (next id with this prefix, the request, the answer, --seed, SSE or not) ->
# (the response id, the emitter)
MakeEmitter = Callable[
    [Callable[[str], str], SimRequest, OutputPlan, int, bool], tuple[str, Emitter]
]
# serve-sim: (status, message, param, code, error type) -> the family's error body
ErrorBody = Callable[[int, str, str | None, str | None, str | None], dict[str, JSON]]


# scrub: what a repair returns for an item it emptied
EMPTY: JSON = object()


@dataclass(frozen=True, slots=True)
class ToolPairs:
    """How a family pairs tool calls with their results by id, for scrub's repair of orphans
    (:mod:`agentx.scrub.toolpairs`): the call and result ids one conversation item carries; the
    item without the orphaned results and the unanswered calls (:data:`EMPTY` when nothing is
    left); whether an emptied item may go; whether turns must alternate roles."""

    ids: Callable[[dict[str, JSON]], tuple[list[str], list[str]]]
    strip: Callable[[dict[str, JSON], set[str], set[str]], JSON]
    drop_emptied: Callable[[dict[str, JSON]], bool]
    alternating: bool = False


def no_model_in_path(path: str) -> str | None:
    """The model a request path names, for families whose path names none."""
    return None


@dataclass(frozen=True, slots=True)
class Family:
    """Everything agentx knows about one API family, by stage."""

    api: Api
    # request bodies: where the growing conversation and the out-of-band system prompt are
    conversation_key: str
    system_key: str
    # routing: capture's test of a request path (query and trailing "/" removed); the model a
    # path names (Gemini); serve-sim's route, and the path prefix whose errors take this shape
    speaks: Callable[[str], bool]
    model_from_path: Callable[[str], str | None]
    serve_path: str
    error_prefix: str
    # usage: the family's names onto Usage (agentx.apis.usage)
    usage: UsageReader
    # capture: the response assembled from its events or its body
    assembler: Callable[[], Assembler]
    # replay: the streaming parser (live: keep the assistant turn), the native request's model,
    # length and streaming keys set on a copy of the body (returns the path), and the output
    # length the body asks for after --extra-body (given the length agentx set; None: unknown)
    stream_parser: Callable[[bool], StreamParser]
    replay_body: Callable[[dict[str, Any], str, int], str]
    asked_tokens: Callable[[dict[str, Any], int], int | None]
    # translation to OpenAI chat: one conversation item, the tools, the out-of-band system
    # prompt as text (None: it is in the conversation), the joined messages (None: as they are)
    chat_messages: Callable[[JSON], list[Message]]
    chat_tools: Callable[[JSON], list[Message]]
    system_text: Callable[[JSON], str] | None
    merge_messages: Callable[[list[Message]], list[Message]] | None
    # serve-sim: what the path says (None: not found), the request, the answer, the errors
    route: Callable[[str, Mapping[str, str]], Route | None]
    parse_request: Callable[[dict[str, JSON], str, Route], SimRequest]
    emitter: MakeEmitter
    error_body: ErrorBody
    context_error: Callable[[int, int | None, int], RequestError]
    # serve-sim's answer plan: the function tools offered (name, JSON schema), the tool choice
    # (kind, named tool), whether the last user turn carries tool results
    offered_tools: Callable[[dict[str, JSON]], list[tuple[str, JSON]]]
    tool_choice: Callable[[dict[str, JSON]], tuple[JSON, str | None]]
    answers_tool_results: Callable[[dict[str, JSON]], bool]
    call_id_prefix: str  # the ids of the tool calls serve-sim makes
    # scrub: tool calls and results paired by id (None: the family pairs them otherwise)
    tool_pairs: ToolPairs | None
