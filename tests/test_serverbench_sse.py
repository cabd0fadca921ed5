"""SSE / NDJSON framing: what the spec says is an event, and what counts as a malformed line."""

import pytest

from tokspeed.serverbench.sse import NDJSONParser, SSEParser, decode_json


def feed_all(parser, text):
    out = []
    for line in text.split("\n"):
        out += parser.feed(line)
    return out + parser.close()


def test_events_are_dispatched_on_blank_lines_and_comments_are_ignored():
    p = SSEParser()
    events = feed_all(p, ': keep-alive\ndata: {"a": 1}\n\nevent: message\nid: 7\nretry: 10\ndata: {"b": 2}\n\n')
    assert events == ['{"a": 1}', '{"b": 2}']
    assert p.framing.malformed_lines == 0


def test_multi_line_data_is_joined_with_newlines_and_crlf_is_accepted():
    p = SSEParser()
    assert feed_all(p, "data: first\r\ndata:second\r\n\r\n") == ["first\nsecond"]


def test_last_event_without_trailing_blank_line_still_counts():
    assert feed_all(SSEParser(), "data: [DONE]") == ["[DONE]"]


def test_malformed_lines_are_counted_and_skipped_not_fatal():
    p = SSEParser()
    events = feed_all(p, 'garbage line\ndata: {"ok": 1}\n\n}{\n\ndata: {"ok": 2}\n\n')
    assert events == ['{"ok": 1}', '{"ok": 2}']
    assert p.framing.malformed_lines == 2
    assert p.framing.first_malformed == "garbage line"


def test_payload_that_is_not_a_json_object_is_malformed():
    p = SSEParser()
    assert decode_json("{not json", p.framing) is None
    assert decode_json("[1, 2]", p.framing) is None
    assert decode_json('{"x": 1}', p.framing) == {"x": 1}
    assert p.framing.malformed_lines == 2


def test_ndjson_one_object_per_non_blank_line():
    p = NDJSONParser()
    assert feed_all(p, '{"a":1}\n\n  {"b":2}  \n') == ['{"a":1}', '{"b":2}']


def _lines(parts, max_line=10):
    import asyncio

    from tokspeed.serverbench.sse import LineReader

    async def gen():
        for p in parts:
            yield p

    async def go():
        r, out = LineReader(gen(), max_line), []
        while (line := await r.next_line()) is not None:
            out.append(line)
        return out

    return asyncio.run(go())


def test_line_reader_splits_every_sse_line_ending_across_chunk_boundaries():
    # \r\n split over two chunks is one ending; a lone \r is an ending too (SSE allows all three)
    assert _lines([b"ab\r", b"\ncd\n\nef\rg", b"h"]) == ["ab", "cd", "", "ef", "gh"]
    # a UTF-8 character split over two chunks is decoded whole
    e = "é".encode()
    assert _lines([b"x" + e[:1], e[1:] + b"\n"]) == ["xé"]


def test_line_reader_drops_a_line_over_its_cap_and_goes_on():
    """A line over the cap was an error ending the stream; now it is dropped and the next lines are read."""
    assert _lines([b"a\n", b"x" * 6, b"y" * 6, b"z\nb\n"]) == ["a", "b"]  # 13 bytes in one line, cap 10
    assert _lines([b"a\n" + b"x" * 11 + b"\r\nb"]) == ["a", "b"]            # within one chunk, \r\n ending
    assert _lines([b"x" * 10 + b"\n"]) == ["x" * 10]  # exactly the cap is fine
    assert _lines([b"x" * 6, b"y" * 6]) == []        # a line over the cap that never ends: nothing


def test_line_reader_counts_what_it_dropped_and_never_holds_past_the_cap():
    import asyncio

    from tokspeed.serverbench.sse import LineReader

    held = []

    async def gen():
        yield b"a\n"
        for _ in range(100):                 # 100 x 1000 bytes of one line, cap 2500
            held.append(len(r._buf))
            yield b"x" * 1000
        yield b"\nb\n\n"

    async def go():
        out = []
        while (line := await r.next_line()) is not None:
            out.append(line)
        return out

    r = LineReader(gen(), 2500)
    assert asyncio.run(go()) == ["a", "b", ""]
    assert r.lines_dropped == 1 and r.bytes_dropped == 100_000
    assert max(held) <= 2500 and held[-1] == 0   # the 2,000 bytes held before the cap were let go


def test_sse_parser_refuses_an_event_over_its_cap():
    from tokspeed.serverbench.sse import EventTooLong, SSEParser

    p = SSEParser(max_event=20)
    p.feed("data: " + "a" * 10)
    with pytest.raises(EventTooLong):
        p.feed("data: " + "b" * 10)  # 11 + 11 bytes with the joining newlines
    assert p.feed("data: ok") == [] and p.feed("") == ["ok"]  # the parser goes on after the dropped event
