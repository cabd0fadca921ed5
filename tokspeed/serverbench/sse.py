"""Server-Sent Events and NDJSON framing, tolerant of malformed lines.

SSE (https://html.spec.whatwg.org/multipage/server-sent-events.html): lines ``field: value``;
``data`` lines accumulate until a blank line dispatches the event; lines starting with ``:`` are
comments; ``event``, ``id`` and ``retry`` are legal fields we ignore. Anything else (a line with no
known field name) is counted as malformed and skipped, so one bad line never stops the stream;
the caller decides what a malformed line means for the request (tokspeed records it as
``malformed_stream``). Ollama streams NDJSON instead: one JSON object per line.

Memory is bounded whatever the server sends: a line longer than ``MAX_LINE_BYTES`` is dropped as it
streams, never held past the cap (``LineReader.lines_dropped`` counts it; the stream goes on with the
next line), and an event whose data lines add up to more than ``MAX_EVENT_BYTES`` raises
``EventTooLong`` (the client records the request as ``malformed_stream`` and the run moves on).
A real token chunk is well under a kilobyte; these caps are three orders of magnitude above any.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from ..guard.bounded import BodyTooLarge
from ..guard.typed import parse

SSE_FIELDS = ("data", "event", "id", "retry")
DONE = "[DONE]"
MAX_LINE_BYTES = 4 * 1024 * 1024  # policy: far beyond any real chunk, small enough to never matter for memory
MAX_LINES = 2**20  # lines of one answer (a run of blank lines counts once): a 32,768-token answer has ~100,000
MAX_EVENT_BYTES = 8 * 1024 * 1024
_EOL = re.compile(rb"\r\n|\r|\n")
_BLANK_RUN = re.compile(rb"(?:\r\n|\r|\n){3,}")   # a line end and two or more blank lines


class EventTooLong(ValueError):
    pass


class LineReader:
    """Split an async byte stream into lines (``\n``, ``\r\n`` or ``\r`` endings, as SSE allows),
    decoded as UTF-8, holding at most ``max_line`` bytes of an unfinished line.

    A line that grows past ``max_line`` is dropped as it streams: what was held is let go, the bytes up
    to its end are discarded as they arrive, and reading goes on with the next line. ``lines_dropped``
    counts such lines (from the moment they pass the cap, so a line that never ends counts too) and
    ``bytes_dropped`` their bytes."""

    def __init__(self, chunks, max_line: int = MAX_LINE_BYTES):
        self._chunks = chunks.__aiter__()
        self._buf = bytearray()
        self._lines: deque = deque()
        self._blank = False  # the last line queued was blank: a run of blank lines is one (SSE dispatches once)
        self.lines = 0
        self._eof = False
        self._max = self.max_line = max_line
        self._cr = False  # the last chunk ended in \r: a following \n belongs to it
        self._dropping = False  # inside a line past the cap: discard up to its end
        self.lines_dropped = 0
        self.bytes_dropped = 0

    async def next_line(self) -> str | None:
        """The next line without its ending; None at the end of the stream."""
        while not self._lines:
            if self._eof:
                if self._buf:
                    line, self._buf = bytes(self._buf), bytearray()
                    return line.decode("utf-8", "replace")
                return None
            try:
                chunk = await self._chunks.__anext__()
            except StopAsyncIteration:
                self._eof = True
                continue
            self._split(chunk)
        return self._lines.popleft().decode("utf-8", "replace")

    def _split(self, chunk: bytes) -> None:
        if self._cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._cr = chunk.endswith(b"\r")
        chunk = _BLANK_RUN.sub(b"\n\n", chunk)   # a run of blank lines is one: never a list of a million b""
        parts = _EOL.split(chunk)
        for part in parts[:-1]:  # each ends a line
            if self._hold(part):
                line = bytes(self._buf)
                if line or not self._blank:
                    self._lines.append(line)
                    self.lines += 1
                    if self.lines > MAX_LINES:
                        raise BodyTooLarge(f"more than {MAX_LINES:,} lines in one answer")
                self._blank = not line
            self._buf = bytearray()
            self._dropping = False
        self._hold(parts[-1])

    def _hold(self, part: bytes) -> bool:
        """Add ``part`` to the unfinished line unless that passes the cap; False once the line is dropped."""
        if not self._dropping and len(self._buf) + len(part) > self._max:
            self._dropping = True
            self.lines_dropped += 1
            self.bytes_dropped += len(self._buf)
            self._buf = bytearray()
        if self._dropping:
            self.bytes_dropped += len(part)
            return False
        self._buf += part
        return True


@dataclass
class Framing:
    """Counters a parser keeps while it reads one stream."""

    malformed_lines: int = 0
    first_malformed: str | None = None

    def bad(self, line: str) -> None:
        self.malformed_lines += 1
        if self.first_malformed is None:
            self.first_malformed = line[:200]


class SSEParser:
    """Feed lines (without their line ending); get back complete event payloads (the joined data)."""

    def __init__(self, max_event: int = MAX_EVENT_BYTES):
        self.framing = Framing()
        self._data: list[str] = []
        self._size = 0
        self._max = max_event

    def feed(self, line: str) -> list[str]:
        line = line.rstrip("\r")
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return []
        name, sep, value = line.partition(":")
        if name not in SSE_FIELDS:
            self.framing.bad(line)
            return []
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._size += len(value) + 1
            if self._size > self._max:
                self._data, self._size = [], 0
                raise EventTooLong(f"an event longer than {self._max // (1024 * 1024)} MiB")
            self._data.append(value)
        return []

    def close(self) -> list[str]:
        """End of stream: a final event not followed by a blank line still counts (common in practice)."""
        return self._dispatch()

    def _dispatch(self) -> list[str]:
        if not self._data:
            return []
        payload = "\n".join(self._data)
        self._data, self._size = [], 0
        return [payload]


def decode_json(payload: str, framing: Framing):
    """JSON of one event payload, or None (counted as malformed) when it is not a JSON object."""
    try:
        obj = parse(payload)          # the one gate: numbers within 2**53, nesting capped
    except ValueError as e:           # NaN, 1e400, 400 digits: an impossible value; or not JSON at all
        framing.bad(f"impossible value or not JSON ({str(e)[:80]}): {payload}")
        return None
    if not isinstance(obj, dict):
        framing.bad(payload)
        return None
    return obj


class NDJSONParser:
    """Ollama's framing: each non-blank line is one JSON object."""

    def __init__(self):
        self.framing = Framing()

    def feed(self, line: str) -> list[str]:
        line = line.strip()
        return [line] if line else []

    def close(self) -> list[str]:
        return []
