from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentx.apis.sse import SSEEvent, SSEParser


def parse_all(chunks: list[bytes]) -> list[SSEEvent]:
    p = SSEParser()
    out: list[SSEEvent] = []
    for c in chunks:
        out.extend(p.feed(c))
    return out


def test_fields_comments_multiline_and_ids() -> None:
    stream = (
        b"\xef\xbb\xbf: keep-alive comment\n"
        b'event: message_start\ndata: {"a": 1}\n\n'
        b"data: line one\ndata:line two\nid: 7\nretry: 100\n\n"
        b"data\n\n"  # a field with no colon: empty data
        b"event: lonely\n\n"  # no data: not dispatched
        b"data: [DONE]\n\n"
    )
    assert parse_all([stream]) == [
        SSEEvent("message_start", '{"a": 1}'),
        SSEEvent("message", "line one\nline two", "7"),
        SSEEvent("message", "", "7"),
        SSEEvent("message", "[DONE]", "7"),
    ]


def test_crlf_split_across_chunks_dispatches_immediately() -> None:
    p = SSEParser()
    assert p.feed(b"data: x\r\n\r") == [SSEEvent("message", "x")]  # the blank line ends at "\r"
    assert p.feed(b"\ndata: y\r") == []  # that "\n" belongs to the previous "\r"
    assert p.feed(b"\n\r\n") == [SSEEvent("message", "y")]
    assert not p.pending


def test_unfinished_event_is_pending() -> None:
    p = SSEParser()
    assert p.feed(b'data: {"partial"') == []
    assert p.pending
    assert p.feed(b": true}\n") == []
    assert p.pending
    assert p.feed(b"\n") == [SSEEvent("message", '{"partial": true}')]


def test_multibyte_utf8_split() -> None:
    data = "data: héllo ✓\n\n".encode()
    assert parse_all([data[:8], data[8:13], data[13:]]) == [SSEEvent("message", "héllo ✓")]


_line = st.text(
    alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=20
)
_event = st.tuples(
    st.sampled_from(["", "event: e\n", "event: response.created\n"]),
    st.lists(_line, min_size=1, max_size=3),
)
_eol = st.sampled_from(["\n", "\r\n", "\r"])


@given(st.lists(_event, min_size=1, max_size=8), _eol, st.data())
def test_any_chunking_gives_the_same_events(
    events: list[tuple[str, list[str]]], eol: str, data: st.DataObject
) -> None:
    text = ""
    for head, lines in events:
        text += head.replace("\n", eol) + "".join(f"data: {line}{eol}" for line in lines) + eol
    raw = text.encode()
    whole = parse_all([raw])
    assert len(whole) == len(events)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=12)))
    chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    assert parse_all(chunks) == whole
    for ev, (head, lines) in zip(whole, events, strict=True):
        assert ev.data == "\n".join(lines)
        assert ev.event == (head.split(": ")[1].strip() if head else "message")
