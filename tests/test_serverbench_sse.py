"""SSE / NDJSON framing: what the spec says is an event, and what counts as a malformed line."""

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
