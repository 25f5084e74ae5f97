"""Whatever a server sends, a replay turns it into a typed row.

Valid JSON of the wrong shape is a ``protocol`` error row; impossible usage (negative, absurd,
not a number, cached > prompt) is a ``bad_usage`` row whose counts are dropped (unknown), never
summed; nothing raises out of the client or the lanes, and the results directory is written.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from replay.factory import T0, chat_session, write
from replay.fault_server import HOSTILE, FaultServer

from agentx.apis import Api
from agentx.apis.registry import family
from agentx.apis.stream import StreamParser
from agentx.apis.usage import checked_usage, usage_from
from agentx.apis.usage_counts import MAX_TOKENS
from agentx.core.record import ERR_BAD_USAGE, ERR_NO_USAGE, ERR_PROTOCOL
from agentx.replay import ReplayOptions, run_replay
from agentx.replay.client import StreamOutcome, make_stream_client, stream_request


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with FaultServer(stall_s=5.0) as srv:
        yield srv


PATHS = {
    Api.OPENAI_CHAT: "/v1/chat/completions",
    Api.ANTHROPIC_MESSAGES: "/v1/messages",
    Api.OPENAI_RESPONSES: "/v1/responses",
}


async def send(url: str, fault: str, api: str, live: bool) -> StreamOutcome:
    body = orjson.dumps(
        {"model": "m", "messages": [{"role": "user", "content": f"fault:{fault}"}], "stream": True}
    )
    async with make_stream_client(url, timeout_s=10, max_connections=2) as client:
        return await stream_request(client, PATHS[api], body, api, live=live, timeout_s=10)


SHAPE = ERR_PROTOCOL
BAD = ERR_BAD_USAGE
# mode -> (api, expected error_type); protocol rows are not ok, usage rows still count as ok
EXPECTED: dict[str, tuple[str, str | None]] = {
    "choices_str": (Api.OPENAI_CHAT, SHAPE),
    "choices_int": (Api.OPENAI_CHAT, SHAPE),
    "choices_null_item": (Api.OPENAI_CHAT, SHAPE),
    "delta_str": (Api.OPENAI_CHAT, SHAPE),
    "delta_list": (Api.OPENAI_CHAT, SHAPE),
    "content_int": (Api.OPENAI_CHAT, SHAPE),
    "tool_calls_str": (Api.OPENAI_CHAT, SHAPE),
    "tool_index_str": (Api.OPENAI_CHAT, SHAPE),
    "tool_function_str": (Api.OPENAI_CHAT, SHAPE),
    "finish_obj": (Api.OPENAI_CHAT, SHAPE),
    "data_null": (Api.OPENAI_CHAT, SHAPE),
    "data_list": (Api.OPENAI_CHAT, SHAPE),
    "binary": (Api.OPENAI_CHAT, SHAPE),
    "usage_str": (Api.OPENAI_CHAT, BAD),
    "usage_list": (Api.OPENAI_CHAT, BAD),
    "usage_negative": (Api.OPENAI_CHAT, BAD),
    "usage_absurd": (Api.OPENAI_CHAT, BAD),
    "usage_huge_int": (Api.OPENAI_CHAT, BAD),
    "usage_float": (Api.OPENAI_CHAT, BAD),
    "cached_over_prompt": (Api.OPENAI_CHAT, BAD),
    "details_str": (Api.OPENAI_CHAT, BAD),
    "timings_str": (Api.OPENAI_CHAT, ERR_NO_USAGE),
    "json_choices_str": (Api.OPENAI_CHAT, SHAPE),
    "json_choices_int": (Api.OPENAI_CHAT, SHAPE),
    "json_message_str": (Api.OPENAI_CHAT, SHAPE),
    "json_usage_str": (Api.OPENAI_CHAT, BAD),
    "json_cache_lots": (Api.ANTHROPIC_MESSAGES, BAD),
    "json_negative": (Api.OPENAI_CHAT, BAD),
    "json_list": (Api.OPENAI_CHAT, SHAPE),
    "json_timings_str": (Api.OPENAI_CHAT, None),
    "msg_delta_str": (Api.ANTHROPIC_MESSAGES, SHAPE),
    "msg_start_str": (Api.ANTHROPIC_MESSAGES, SHAPE),
    "msg_usage_lots": (Api.ANTHROPIC_MESSAGES, BAD),
    "msg_negative": (Api.ANTHROPIC_MESSAGES, BAD),
    "msg_index_str": (Api.ANTHROPIC_MESSAGES, SHAPE),
    "resp_response_str": (Api.OPENAI_RESPONSES, SHAPE),
    "resp_usage_negative": (Api.OPENAI_RESPONSES, BAD),
}


def test_every_hostile_mode_has_an_expectation() -> None:
    assert set(EXPECTED) == set(HOSTILE)


@pytest.mark.parametrize("live", [False, True], ids=["recorded", "live"])
@pytest.mark.parametrize("fault", sorted(EXPECTED))
async def test_hostile_answer_is_a_typed_row(server: FaultServer, fault: str, live: bool) -> None:
    api, error_type = EXPECTED[fault]
    if live and api != Api.OPENAI_CHAT:
        pytest.skip("--assistant live is chat only")
    out = await send(server.url, fault, api, live)
    assert out.error_type == error_type, out.error
    assert out.ok is (error_type != ERR_PROTOCOL)
    if error_type is not None:
        assert out.error  # says what was wrong
    for value in (out.prompt_tokens, out.completion_tokens, out.cached_tokens):
        assert value is None or 0 <= value <= MAX_TOKENS  # impossible counts are unknown
    if out.prompt_tokens is not None and out.cached_tokens is not None:
        assert out.cached_tokens <= out.prompt_tokens
    if live:  # what --assistant live threads into the next request: a message or nothing
        assert out.assistant is None or isinstance(out.assistant, dict)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"prompt_tokens": -30, "completion_tokens": 4}, "prompt_tokens"),
        ({"prompt_tokens": 10, "completion_tokens": MAX_TOKENS + 1}, "completion_tokens"),
        ({"prompt_tokens": "10"}, "prompt_tokens"),
        ({"prompt_tokens": True}, "prompt_tokens"),
        ({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 11}}, "cached"),
        ({"prompt_tokens": 10, "prompt_tokens_details": "x"}, "prompt_tokens_details"),
    ],
)
def test_the_usage_normaliser_drops_and_names_impossible_counts(
    raw: dict[str, object], problem: str
) -> None:
    usage, why = checked_usage(Api.OPENAI_CHAT, raw)
    assert why is not None and problem in why
    assert usage == usage_from(Api.OPENAI_CHAT, raw)  # the one normaliser, two views
    for value in (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens):
        assert value is None or 0 <= value <= MAX_TOKENS


def test_anthropic_prompt_is_unknown_when_a_part_is_impossible() -> None:
    usage, why = checked_usage(
        Api.ANTHROPIC_MESSAGES, {"input_tokens": 5, "cache_read_input_tokens": "lots"}
    )
    assert usage.prompt_tokens is None and usage.cached_tokens is None
    assert why is not None and "cache_read_input_tokens" in why
    good, none = checked_usage(
        Api.ANTHROPIC_MESSAGES, {"input_tokens": 5, "cache_read_input_tokens": 95}
    )
    assert none is None and good.prompt_tokens == 100 and good.cached_tokens == 95


def test_a_replay_against_a_hostile_server_keeps_every_row(
    server: FaultServer, tmp_path: Path
) -> None:
    """15 good requests and one of each chat mode: the run ends, every row is kept and typed."""
    chat_modes = [m for m, (api, _) in EXPECTED.items() if api == Api.OPENAI_CHAT]
    rows = []
    for i in range(5):
        rows += chat_session(f"good{i}", turns=3, start_ns=T0 + i)
    for i, mode in enumerate(chat_modes):
        rows += chat_session(f"bad{i}", turns=1, user_text=f"fault:{mode} ", start_ns=T0 + 99 + i)
    trace = write(tmp_path / "t.parquet", rows)
    out_dir = tmp_path / "out"
    result = run_replay(
        ReplayOptions.of(
            trace=trace,
            endpoint=server.url,
            time_scale=0.0,
            concurrency=4,
            output_dir=out_dir,
            progress=False,
            scrape_metrics=False,
        )
    )
    assert len(result.records) == 15 + len(chat_modes)
    kinds = Counter(r.error_type for r in result.records)
    assert kinds[None] == 15 + sum(1 for m in chat_modes if EXPECTED[m][1] is None)
    assert kinds[ERR_PROTOCOL] == sum(1 for m in chat_modes if EXPECTED[m][1] == ERR_PROTOCOL)
    assert kinds[ERR_BAD_USAGE] == sum(1 for m in chat_modes if EXPECTED[m][1] == ERR_BAD_USAGE)
    s = orjson.loads((out_dir / "summary.json").read_bytes())
    assert s["requests"]["bad_usage"] == kinds[ERR_BAD_USAGE]
    assert s["tokens"]["input"] >= 0 and s["tokens"]["output"] >= 0
    assert s["tokens"]["output"] < MAX_TOKENS  # the 10**18 completion was not summed
    assert any("impossible token counts" in w for w in s["warnings"])


# -- item 9: a huge single event is parsed in linear time ----------------------------------------


def _read_costs(parser: StreamParser, event: bytes, chunk: int = 65536) -> list[float]:
    """The time each read of ``event`` took, the last (completing) read excluded."""
    costs = []
    clock = time.perf_counter
    for i in range(0, len(event) - chunk, chunk):
        t0 = clock()
        parser.feed(event[i : i + chunk], i)
        costs.append(clock() - t0)
    parser.feed(event[len(costs) * chunk :], len(event))
    return costs


@pytest.mark.parametrize("api", [Api.OPENAI_CHAT, Api.ANTHROPIC_MESSAGES])
def test_sse_parsing_is_linear_in_the_event_size(api: str) -> None:
    """A read costs the same whether 1 MiB or 15 MiB of the event are already buffered.

    Quadratic buffering re-copies and re-scans what is buffered on every read: its reads at
    ~15 MiB cost ~15x its reads at ~1 MiB (a 20 MiB event took 32 s). The test compares the
    median cost of the first and of the last 32 reads of one 16 MiB event (a ratio within one
    run, not a timer)."""
    if api == Api.OPENAI_CHAT:
        obj: dict[str, object] = {"choices": [{"index": 0, "delta": {"content": "x" * (16 << 20)}}]}
    else:
        obj = {"type": "content_block_delta", "index": 0}
        obj["delta"] = {"type": "text_delta", "text": "x" * (16 << 20)}
    event = b"data: " + orjson.dumps(obj) + b"\n\n"
    parser = family(api).stream_parser(False)
    costs = _read_costs(parser, event)
    assert parser.token_chunks == 1
    early, late = statistics.median(costs[16:48]), statistics.median(costs[-32:])
    assert late / early < 4, (
        f"median read {early * 1e6:.0f} us at ~2 MiB, {late * 1e6:.0f} us at ~15 MiB"
    )


@pytest.mark.parametrize("split", [1, 2, 3, 7])
def test_events_split_anywhere_parse_the_same(split: int) -> None:
    """CRLF streams cut at every byte boundary (a "\\r" ending one read, "\\n" the next)."""
    stream = b"".join(
        [
            b'data: {"choices":[{"index":0,"delta":{"content":"ab"}}]}\r\n\r\n',
            b": keep-alive\r\n\r\n",
            b'event: x\r\ndata: {"choices":[{"index":0,"delta":{"content":"cd"}}]}\r\n\r\n',
            b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\r\n\r\n',
            b"data: [DONE]\r\n\r\n",
        ]
    )
    parser = family(Api.OPENAI_CHAT).stream_parser(True)
    for i in range(0, len(stream), split):
        parser.feed(stream[i : i + split], i)
    parser.finish(len(stream))
    assert parser.done and parser.token_chunks == 2 and parser.prompt_tokens == 3
    assert parser.assistant_message() == {"role": "assistant", "content": "abcd"}


async def test_a_20_mib_event_over_a_socket(server: FaultServer) -> None:
    server.big_event_bytes = 20 << 20
    out = await send(server.url, "big_event", Api.OPENAI_CHAT, live=True)
    assert out.ok and out.error_type is None and out.prompt_tokens == 10
    assert isinstance(out.assistant, dict) and len(out.assistant["content"]) == 20 << 20
