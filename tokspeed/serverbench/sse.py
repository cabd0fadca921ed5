"""Server-Sent Events and NDJSON framing, tolerant of malformed lines.

SSE (https://html.spec.whatwg.org/multipage/server-sent-events.html): lines ``field: value``;
``data`` lines accumulate until a blank line dispatches the event; lines starting with ``:`` are
comments; ``event``, ``id`` and ``retry`` are legal fields we ignore. Anything else (a line with no
known field name) is counted as malformed and skipped, so one bad line never stops the stream;
the caller decides what a malformed line means for the request (tokspeed records it as
``malformed_stream``). Ollama streams NDJSON instead: one JSON object per line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

SSE_FIELDS = ("data", "event", "id", "retry")
DONE = "[DONE]"


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

    def __init__(self):
        self.framing = Framing()
        self._data: list[str] = []

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
            self._data.append(value)
        return []

    def close(self) -> list[str]:
        """End of stream: a final event not followed by a blank line still counts (common in practice)."""
        return self._dispatch()

    def _dispatch(self) -> list[str]:
        if not self._data:
            return []
        payload = "\n".join(self._data)
        self._data = []
        return [payload]


def decode_json(payload: str, framing: Framing):
    """JSON of one event payload, or None (counted as malformed) when it is not a JSON object."""
    try:
        obj = json.loads(payload)
    except ValueError:
        framing.bad(payload)
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
