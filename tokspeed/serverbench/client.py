"""One streaming request, timed chunk by chunk, turned into one record (a dict for ``requests.jsonl``).

Clock: ``time.perf_counter``; t=0 is just before the request is sent, so TTFT includes connecting,
queueing in the server and prefill, as a user sees it.

- ``ttft_s``: first chunk carrying generated text (or a token count) after t=0.
- ``itl_s``: every inter-token gap. A chunk that carries k tokens contributes its gap to the
  previous chunk and then k-1 gaps of 0 (those tokens reached the user together). So
  ``sum(itl_s) == decode_s`` and ``len(itl_s) == tokens seen in chunks - 1``.
- ``decode_s``: last token chunk minus first token chunk.
- ``tpot_s``: ``decode_s / (output_tokens - 1)`` (the first token is paid by TTFT).
- ``e2e_s``: t=0 to the end of the stream.

Token counts, by preference (``*_tokens_source`` says which was used): the server's ``usage``
(tokspeed asks for it with ``stream_options.include_usage``); Ollama's ``eval_count`` /
``prompt_eval_count``; llama.cpp's ``timings.predicted_n`` / ``prompt_n``; otherwise a tokenizer
given by the caller; otherwise one token per text chunk (a lower bound, flagged ``chunks``).
Tokens per chunk: the usage delta when the server sends usage on every chunk, else the tokenizer,
else 1.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Callable

from ..guard.bounded import BodyTooLarge, abody_chunks
from .apis import NDJSON_APIS, Chunk, read_chunk
from .itl import Gaps
from .sse import EventTooLong, LineReader, NDJSONParser, SSEParser, decode_json

ERROR_KINDS = ("connect", "http_4xx", "http_429", "http_5xx", "http_other", "timeout_first_token",
               "timeout_idle", "timeout_total", "malformed_stream", "stream_error", "truncated", "disconnected",
               "client_error")
CANCELLED = "cancelled"  # stopped by the user (Ctrl-C): recorded, not counted as a server failure
DETAIL_CHARS = 300  # how much of an error body or message is kept
MAX_TEXT_CHARS = 1 << 20  # answer text kept in memory for a multi-turn history (never written to disk)


@dataclass
class Timeouts:
    """Seconds. ``connect``: TCP/TLS connect; ``first_token``: send to first token; ``idle``: longest
    silence between two chunks after the first; ``total``: whole request."""

    connect_s: float = 10.0
    first_token_s: float = 120.0
    idle_s: float = 60.0
    total_s: float = 900.0


@dataclass
class RequestSpec:
    index: int
    url: str
    api: str
    body: dict
    labels: dict = field(default_factory=dict)  # phase, concurrency, rate_rps, warmup, targets...


class _Failure(Exception):
    def __init__(self, kind: str, detail: str = ""):
        self.kind, self.detail = kind, detail


def timing_fields(chunk_offsets_s: list[float], chunk_tokens: list[int], output_tokens: int | None,
                  e2e_s: float) -> dict:
    """TTFT, every gap, decode time and TPOT from chunk arrival offsets and tokens per chunk."""
    t = _Timing()
    for at, k in zip(chunk_offsets_s, chunk_tokens):
        t.add(at, k)
    return t.fields(output_tokens, e2e_s)


class _Timing:
    """Token chunks as they arrive, in bounded memory: the first and last arrival, the chunk and token
    counts, and the gaps (``itl.Gaps``)."""

    def __init__(self):
        self.first: float | None = None
        self.last: float | None = None
        self.chunks = 0
        self.tokens = 0
        self.gaps = Gaps()

    def add(self, at: float, k: int) -> None:
        if self.first is None:
            self.first = at
            if k > 1:
                self.gaps.add(0.0, k - 2)
        else:
            self.gaps.add(at - self.last, k - 1)
        self.last = at
        self.chunks += 1
        self.tokens += k

    def fields(self, output_tokens: int | None, e2e_s: float) -> dict:
        out: dict = {"e2e_s": e2e_s, "ttft_s": None, "decode_s": None, "tpot_s": None, "itl_s": []}
        if self.first is None:
            return out
        out["ttft_s"] = self.first
        out.update(self.gaps.fields())
        out["decode_s"] = self.last - self.first
        n = output_tokens if output_tokens is not None else self.tokens
        if n and n > 1:
            out["tpot_s"] = out["decode_s"] / (n - 1)
        return out


async def measure(client, spec: RequestSpec, timeouts: Timeouts, headers: dict | None = None,
                  count_tokens: Callable[[str], int] | None = None, secret: str | None = None,
                  stop: asyncio.Event | None = None) -> dict:
    """Send ``spec``, read its stream to the end (or the first failure) and return its record.

    Never raises for server or network trouble: each becomes ``error`` (one of ``ERROR_KINDS``).
    Cancellation (Ctrl-C) is recorded as ``cancelled`` with whatever was measured so far; ``stop``
    (set on Ctrl-C) is also checked after every line, since a task cancellation can be lost on 3.11.
    """
    import httpx  # lazy: optional dependency (httpx, the server extra)

    rec: dict = {"type": "request", "index": spec.index, **spec.labels, "ok": False, "error": None,
                 "error_detail": None, "http_status": None, "start_unix_s": time.time()}
    st = _StreamState(spec.api, count_tokens)
    t0 = time.perf_counter()
    try:
        # Every wait inside is bounded by the request's own deadline (t0 + total_s) and checked after
        # every line: an outer asyncio.wait_for is not enough, because on Python 3.11 its cancellation
        # is lost when the inner read completes at the same moment (a server that streams without
        # pause), and the request would run forever.
        await _exchange(client, spec, timeouts, headers, st, t0, rec, stop)
        st.finish()
        rec["ok"] = True
    except _Failure as f:
        rec["error"], rec["error_detail"] = f.kind, f.detail
    except asyncio.CancelledError:
        rec["error"], rec["error_detail"] = CANCELLED, "stopped by the user"
    except (httpx.ConnectError, httpx.ConnectTimeout) as e:
        rec["error"], rec["error_detail"] = "connect", _short(e)
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError, httpx.CloseError) as e:
        rec["error"], rec["error_detail"] = "disconnected", _short(e)
    except httpx.TimeoutException as e:
        rec["error"], rec["error_detail"] = "timeout_idle" if st.timing.chunks else "timeout_first_token", _short(e)
    except Exception as e:  # a bug or an exotic transport error must not end the run
        rec["error"], rec["error_detail"] = "client_error", f"{type(e).__name__}: {_short(e)}"
    e2e = time.perf_counter() - t0
    rec.update(st.fields(e2e))
    if rec["error_detail"] and secret:
        rec["error_detail"] = rec["error_detail"].replace(secret, "***")
    return rec


async def _exchange(client, spec, timeouts, headers, st: "_StreamState", t0: float, rec: dict,
                    stop: asyncio.Event | None = None) -> None:
    import httpx  # lazy: optional dependency (httpx, the server extra)

    deadline = t0 + timeouts.total_s

    def total_left() -> float:
        left = deadline - time.perf_counter()
        if left <= 0:
            raise _Failure("timeout_total", f"no end of stream after {timeouts.total_s:g} s")
        return left

    request = client.build_request("POST", spec.url, json=spec.body, headers=headers or {},
                                   timeout=httpx.Timeout(connect=timeouts.connect_s, read=None,
                                                         write=timeouts.connect_s, pool=None))
    wait = min(timeouts.first_token_s, total_left())
    try:
        resp = await asyncio.wait_for(client.send(request, stream=True), wait)
    except asyncio.TimeoutError:
        if wait < timeouts.first_token_s:
            raise _Failure("timeout_total", f"no end of stream after {timeouts.total_s:g} s") from None
        raise _Failure("timeout_first_token", f"no response headers within {timeouts.first_token_s:g} s") from None
    try:
        rec["http_status"] = resp.status_code
        if resp.status_code != 200:
            body = await _read_some(resp, min(timeouts.idle_s, total_left()))
            code = resp.status_code
            kind = ("http_429" if code == 429 else "http_4xx" if 400 <= code < 500
                    else "http_5xx" if 500 <= code < 600 else "http_other")
            raise _Failure(kind, f"HTTP {code}: {body}")
        ctype = resp.headers.get("content-type", "")
        if ctype.lower().startswith("text/html"):
            body = await _read_some(resp, min(timeouts.idle_s, total_left()))
            raise _Failure("malformed_stream", f"HTTP 200 with an HTML page, not a stream: {body}")
        lines = st.reader = LineReader(abody_chunks(resp))   # inflated in 64 KiB pieces, capped
        while True:
            if st.timing.chunks:
                wait, kind = timeouts.idle_s, "timeout_idle"
            else:
                wait = timeouts.first_token_s - (time.perf_counter() - t0)
                kind = "timeout_first_token"
            left = total_left()
            if left < wait:
                wait, kind = left, "timeout_total"
            try:
                line = await asyncio.wait_for(lines.next_line(), max(wait, 0.0))
            except asyncio.TimeoutError:
                if kind == "timeout_total":
                    raise _Failure(kind, f"no end of stream after {timeouts.total_s:g} s") from None
                raise _Failure(kind, f"no token within {wait:g} s") from None
            except BodyTooLarge as e:
                raise _Failure("malformed_stream", str(e)) from None
            if line is None:
                break
            now = time.perf_counter() - t0
            try:
                payloads = st.parser.feed(line)
            except EventTooLong as e:
                raise _Failure("malformed_stream", str(e)) from None
            for payload in payloads:
                if st.event(payload, now):
                    return
            total_left()
            if stop is not None and stop.is_set():
                raise asyncio.CancelledError
        now = time.perf_counter() - t0
        for payload in st.parser.close():
            if st.event(payload, now):
                return
    finally:
        await resp.aclose()


async def _read_some(resp, wait_s: float) -> str:
    """Up to DETAIL_CHARS of an error body, without waiting forever for it."""
    buf = b""
    try:
        async with asyncio.timeout(wait_s):
            async for part in abody_chunks(resp):
                buf += part
                if len(buf) >= DETAIL_CHARS:
                    break
    except Exception:
        pass
    return buf[:DETAIL_CHARS].decode("utf-8", "replace").strip()


def _short(e: BaseException) -> str:
    return (str(e) or type(e).__name__)[:DETAIL_CHARS]


class _StreamState:
    """Everything read from one stream so far."""

    def __init__(self, api: str, count_tokens):
        self.api = api
        self.parser = NDJSONParser() if api in NDJSON_APIS else SSEParser()
        self.count_tokens = count_tokens
        self.timing = _Timing()  # token chunks: bounded whatever the stream's length
        self.reader: LineReader | None = None  # its lines_dropped: lines past the cap, dropped unread
        self.text: list[str] = []  # the answer (kept up to MAX_TEXT_CHARS, for multi-turn history)
        self._text_chars = 0
        self.usage: dict | None = None
        self.timings: dict | None = None
        self.finish_reason: str | None = None
        self.done = False
        self.stream_error: str | None = None
        self._last_usage_completion: int | None = None
        self._usage_every_chunk = True

    def event(self, payload: str, now: float) -> bool:
        """Take one event; True when the server said the stream is complete."""
        if payload.strip() == "[DONE]" and self.api not in NDJSON_APIS:
            self.done = True
            return True
        obj = decode_json(payload, self.parser.framing)
        if obj is None:
            return False
        c: Chunk = read_chunk(self.api, obj)
        for note in c.bad:  # NaN timings, negative counts...: dropped, and the request is malformed
            self.parser.framing.bad(f"impossible value {note}")
        if c.error:
            self.stream_error = c.error
            return True
        k = self._tokens_in(c)
        if c.text and self._text_chars < MAX_TEXT_CHARS:
            self.text.append(c.text[:MAX_TEXT_CHARS - self._text_chars])
            self._text_chars += len(self.text[-1])
        if k > 0:
            self.timing.add(now, k)
        if c.usage:
            self.usage = c.usage
        if c.timings:
            self.timings = c.timings
        if c.finish_reason:
            self.finish_reason = c.finish_reason
        if c.done:
            self.done = True
            return True
        return False

    def _tokens_in(self, c: Chunk) -> int:
        """Tokens carried by one chunk: the usage delta while every text chunk has carried usage
        (continuous usage stats), else the tokenizer, else 1 per chunk with text."""
        comp = (c.usage or {}).get("completion_tokens") if self.api not in NDJSON_APIS else None
        if c.text and not isinstance(comp, int):
            self._usage_every_chunk = False
        if isinstance(comp, int):
            prev = self._last_usage_completion or 0
            self._last_usage_completion = comp
            if c.text and self._usage_every_chunk and comp - prev > 0:
                return comp - prev
        if not c.text:
            return 0
        if self.count_tokens is not None:
            return max(1, self.count_tokens(c.text))
        return 1

    def finish(self) -> None:
        """After a clean end of the HTTP body: decide whether the stream itself was complete and sound."""
        if self.stream_error:
            raise _Failure("stream_error", self.stream_error[:DETAIL_CHARS])
        f = self.parser.framing
        if self.reader and self.reader.lines_dropped:   # its tokens are lost: the answer cannot be counted
            raise _Failure("malformed_stream", f"{self.reader.lines_dropped} line(s) over the "
                           f"{self.reader.max_line // 2**20} MiB line cap dropped ({self.reader.bytes_dropped:,} "
                           "bytes): the tokens in them are lost")
        if f.malformed_lines:
            raise _Failure("malformed_stream", f"{f.malformed_lines} malformed line(s), first: {f.first_malformed!r}")
        if not self.done and self.finish_reason is None:
            raise _Failure("disconnected", "stream ended without its end marker ([DONE] / done:true / finish_reason)")
        if self.api not in NDJSON_APIS and self.finish_reason is None:
            # [DONE] but no choice ever said why it ended: the server cut the answer short
            # (llama-cpp-python does this to a stream when another request arrives, unless --interrupt_requests False)
            raise _Failure("truncated", "[DONE] came without a finish_reason: the server ended the answer early")

    def fields(self, e2e_s: float) -> dict:
        out_tokens, out_src = self._count("completion_tokens", "output_tokens")
        prompt_tokens, prompt_src = self._count("prompt_tokens", "prompt_tokens")
        rec = {"prompt_tokens": prompt_tokens, "prompt_tokens_source": prompt_src,
               "output_tokens": out_tokens, "output_tokens_source": out_src,
               "chunks": self.timing.chunks, "chunk_tokens": self.timing.tokens,
               # True when the tokens placed in chunks add up to output_tokens, i.e. itl_s has every gap
               "itl_complete": out_tokens is not None and self.timing.tokens == out_tokens,
               "finish_reason": self.finish_reason, "malformed_lines": self.parser.framing.malformed_lines,
               # lines over sse.MAX_LINE_BYTES, dropped unread: tokens in them are in no count above
               "sse_lines_dropped": self.reader.lines_dropped if self.reader else 0}
        if self.reader and self.reader.lines_dropped:
            rec["sse_bytes_dropped"] = self.reader.bytes_dropped
        rec.update(self.timing.fields(out_tokens, e2e_s))
        rec["_text"] = "".join(self.text)  # popped before the record is written
        if self.timings:
            rec["server_timings"] = self.timings
        return rec

    def _count(self, usage_key: str, timings_key: str):
        u = (self.usage or {}).get(usage_key)
        if isinstance(u, int):
            return u, "ollama" if self.api in NDJSON_APIS else "usage"
        t = (self.timings or {}).get(timings_key)
        if isinstance(t, int):
            return t, self.timings["source"]
        if usage_key == "completion_tokens" and self.timing.chunks:
            return self.timing.tokens, "tokenizer" if self.count_tokens else "chunks"
        return None, None
