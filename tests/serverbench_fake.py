"""A small misbehaving HTTP server on 127.0.0.1 for the bench-server tests (stdlib asyncio only).

The ``model`` field of each request picks the behaviour; ``mix:a,b,c`` cycles through behaviours
request by request. Timing of the well-behaved modes is known: first token after ``TTFT_S``, then
one chunk every ``GAP_S``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading

TTFT_S = 0.05
GAP_S = 0.02
N_TOKENS = 8  # tokens per well-behaved answer unless max_tokens is smaller
STALL_S = 30.0  # longer than any timeout the tests use; the server is shut down before it ends


def one(base, model, api="openai-completions", max_tokens=N_TOKENS, timeouts=None, stream_usage=True, **kw):
    """One request through tokspeed's client (``measure``), returning its record."""
    import httpx

    from tokspeed.serverbench.apis import endpoint_url, request_body
    from tokspeed.serverbench.client import RequestSpec, Timeouts, measure

    timeouts = timeouts or Timeouts(connect_s=2, first_token_s=2, idle_s=1, total_s=10)

    async def go():
        async with httpx.AsyncClient(trust_env=False) as client:
            body = request_body(api, model, "hello", max_tokens, temperature=0, seed=0, ignore_eos=False,
                                stream_usage=stream_usage)
            return await measure(client, RequestSpec(0, endpoint_url(base, api), api, body), timeouts, **kw)

    return asyncio.run(go())


class FakeServer:
    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        self.headers: list[dict] = []
        self.gets: list[str] = []
        self._tasks: set = set()
        self._mix = {}

    def __enter__(self):
        self.thread.start()
        fut = asyncio.run_coroutine_threadsafe(asyncio.start_server(self._handle, "127.0.0.1", 0), self.loop)
        self.server = fut.result(5)
        self.port = self.server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        return self

    def __exit__(self, *exc):
        async def shutdown():
            self.server.close()
            for t in list(self._tasks):
                t.cancel()
            await asyncio.sleep(0)

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    async def _handle(self, reader, writer):
        task = asyncio.current_task()
        self._tasks.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
            body = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))) or b"{}")
            if lines[0].startswith("GET "):  # engine-version probes: llama.cpp's /props, else 404
                self.gets.append(path)
                await (self.get_props(writer) if path == "/props" else self._status(writer, 404, "Not Found"))
                return
            self.paths.append(path)
            self.headers.append(headers)
            self.bodies.append(body)
            mode = str(body.get("model", "ok"))
            if mode.startswith("mix:"):
                cyc = self._mix.setdefault(mode, itertools.cycle(mode[4:].split(",")))
                mode = next(cyc)
            await getattr(self, "mode_" + mode)(writer, body, path)
        except (asyncio.CancelledError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    # --- helpers
    @staticmethod
    async def start_stream(writer, ctype="text/event-stream"):
        writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nTransfer-Encoding: chunked\r\n"
                     "Connection: close\r\n\r\n".encode())
        await writer.drain()

    @staticmethod
    async def chunk(writer, text: str):
        data = text.encode()
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await writer.drain()

    @staticmethod
    async def end(writer):
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    @staticmethod
    def n_tokens(body) -> int:
        return min(N_TOKENS, int(body.get("max_tokens") or N_TOKENS))

    @staticmethod
    def want_usage(body) -> bool:
        return bool((body.get("stream_options") or {}).get("include_usage"))

    @staticmethod
    def completion_event(text, finish=None, usage=None, chat=False):
        if chat:
            choice = {"index": 0, "delta": {"content": text}, "finish_reason": finish}
        else:
            choice = {"index": 0, "text": text, "finish_reason": finish}
        obj = {"id": "x", "object": "chat.completion.chunk" if chat else "text_completion", "choices": [choice]}
        if usage is not None:
            obj["usage"] = usage
        return "data: " + json.dumps(obj) + "\n\n"

    async def tokens(self, writer, body, n, per_chunk=1, start_delay=TTFT_S):
        await asyncio.sleep(start_delay)
        sent = 0
        while sent < n:
            k = min(per_chunk, n - sent)
            sent += k
            await self.chunk(writer, self.completion_event("t" * k, "length" if sent == n else None,
                                                           chat="messages" in body))
            if sent < n:
                await asyncio.sleep(GAP_S)

    async def finish(self, writer, body, prompt_tokens, completion_tokens):
        if self.want_usage(body):
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                     "total_tokens": prompt_tokens + completion_tokens}
            await self.chunk(writer, "data: " + json.dumps({"id": "x", "choices": [], "usage": usage}) + "\n\n")
        await self.chunk(writer, "data: [DONE]\n\n")
        await self.end(writer)

    # --- behaviours
    async def mode_ok(self, writer, body, path):
        n = self.n_tokens(body)
        await self.start_stream(writer)
        await self.tokens(writer, body, n)
        await self.finish(writer, body, 11, n)

    async def mode_slow(self, writer, body, path):
        """Like ok, but 0.1 s between tokens: long enough to interrupt a run mid-request."""
        n = self.n_tokens(body)
        await self.start_stream(writer)
        for i in range(n):
            await asyncio.sleep(0.1)
            await self.chunk(writer, self.completion_event("s", "length" if i == n - 1 else None))
        await self.finish(writer, body, 11, n)

    async def mode_multi(self, writer, body, path):
        """Two tokens per chunk: usage says 2x the chunk count."""
        n = self.n_tokens(body)
        await self.start_stream(writer)
        await self.tokens(writer, body, n, per_chunk=2)
        await self.finish(writer, body, 11, n)

    async def mode_continuous(self, writer, body, path):
        """vLLM continuous_usage_stats: usage on every chunk; chunks carry 1, 2, 3, 1, 2, 3... tokens."""
        n = self.n_tokens(body)
        await self.start_stream(writer)
        await asyncio.sleep(TTFT_S)
        done, sizes = 0, itertools.cycle((1, 2, 3))
        while done < n:
            k = min(next(sizes), n - done)
            done += k
            usage = {"prompt_tokens": 11, "completion_tokens": done, "total_tokens": 11 + done}
            await self.chunk(writer, self.completion_event("y" * k, "length" if done == n else None, usage))
            await asyncio.sleep(GAP_S)
        await self.chunk(writer, "data: [DONE]\n\n")
        await self.end(writer)

    async def mode_die(self, writer, body, path):
        """Three tokens, then the connection drops mid-body (no terminating chunk)."""
        await self.start_stream(writer)
        await self.tokens(writer, body, 3)
        writer.transport.abort()

    async def _status(self, writer, code, reason):
        msg = json.dumps({"error": {"message": f"fake {code}"}}).encode()
        writer.write(f"HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(msg)}\r\n"
                     "Connection: close\r\n\r\n".encode() + msg)
        await writer.drain()

    async def get_props(self, writer):
        msg = json.dumps({"build_info": "b1234-fake", "total_slots": 4, "model_path": "/m/tiny.gguf"}).encode()
        writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(msg)}\r\n"
                     "Connection: close\r\n\r\n".encode() + msg)
        await writer.drain()

    async def mode_http500(self, writer, body, path):
        await self._status(writer, 500, "Internal Server Error")

    async def mode_http429(self, writer, body, path):
        await self._status(writer, 429, "Too Many Requests")

    async def mode_http404(self, writer, body, path):
        await self._status(writer, 404, "Not Found")

    async def mode_malformed(self, writer, body, path):
        await self.start_stream(writer)
        await self.tokens(writer, body, 2)
        await self.chunk(writer, "this is not an SSE line\n\ndata: {not json\n\n")
        await self.tokens(writer, body, 2, start_delay=GAP_S)
        await self.finish(writer, body, 11, 4)

    async def mode_stall_first(self, writer, body, path):
        """Headers, then nothing."""
        await self.start_stream(writer)
        await asyncio.sleep(STALL_S)

    async def mode_stall_headers(self, writer, body, path):
        """Not even the headers."""
        await asyncio.sleep(STALL_S)

    async def mode_stall_mid(self, writer, body, path):
        await self.start_stream(writer)
        await self.tokens(writer, body, 2)
        await asyncio.sleep(STALL_S)

    async def mode_close_before(self, writer, body, path):
        """Reads the request and closes without sending a byte."""
        writer.transport.abort()

    async def mode_no_done(self, writer, body, path):
        """A clean end of the body but no [DONE] and no finish_reason: the stream was cut."""
        await self.start_stream(writer)
        await asyncio.sleep(TTFT_S)
        await self.chunk(writer, self.completion_event("a"))
        await self.end(writer)

    async def mode_llamacpp(self, writer, body, path):
        """llama.cpp's server: no usage, but ``timings`` on the last chunk (here claiming 2 tokens per chunk)."""
        await self.start_stream(writer)
        await self.tokens(writer, body, 4)
        timings = {"prompt_n": 5, "prompt_ms": 10.0, "prompt_per_second": 500.0,
                   "predicted_n": 8, "predicted_ms": 40.0, "predicted_per_second": 200.0}
        await self.chunk(writer, "data: " + json.dumps({"id": "x", "choices": [], "timings": timings}) + "\n\n")
        await self.chunk(writer, "data: [DONE]\n\n")
        await self.end(writer)

    async def mode_truncated(self, writer, body, path):
        """Two tokens then [DONE], with no finish_reason anywhere."""
        await self.start_stream(writer)
        await asyncio.sleep(TTFT_S)
        for _ in range(2):
            await self.chunk(writer, self.completion_event("a"))
        await self.chunk(writer, "data: [DONE]\n\n")
        await self.end(writer)

    async def mode_stream_error(self, writer, body, path):
        await self.start_stream(writer)
        await self.tokens(writer, body, 1)
        await self.chunk(writer, 'data: {"error": {"message": "out of memory"}}\n\n')
        await self.end(writer)

    async def mode_ollama(self, writer, body, path):
        """Ollama /api/generate NDJSON with eval_count / eval_duration."""
        n = min(N_TOKENS, int((body.get("options") or {}).get("num_predict") or N_TOKENS))
        await self.start_stream(writer, "application/x-ndjson")
        await asyncio.sleep(TTFT_S)
        for i in range(n):
            await self.chunk(writer, json.dumps({"model": "m", "response": "t", "done": False}) + "\n")
            if i < n - 1:
                await asyncio.sleep(GAP_S)
        final = {"model": "m", "response": "", "done": True, "done_reason": "length", "prompt_eval_count": 9,
                 "prompt_eval_duration": 30_000_000, "eval_count": n, "eval_duration": 200_000_000}
        await self.chunk(writer, json.dumps(final) + "\n")
        await self.end(writer)

    # --- hostile servers (issue 10): each must end in a bounded time and memory, recorded
    async def mode_forever(self, writer, body, path):
        """Streams tokens without pause and never ends: only --request-timeout can stop it."""
        await self.start_stream(writer)
        while True:
            await self.chunk(writer, self.completion_event("f" * 64))
            await asyncio.sleep(0)

    async def mode_huge_line(self, writer, body, path):
        """One token, then one line that never ends (64 KiB pieces, no newline)."""
        await self.start_stream(writer)
        await self.tokens(writer, body, 1)
        piece = "data: " + "x" * 65536
        while True:
            await self.chunk(writer, piece)
            piece = "x" * 65536

    async def mode_huge_event(self, writer, body, path):
        """One token, then an event of endless short data lines (no blank line ever dispatches it)."""
        await self.start_stream(writer)
        await self.tokens(writer, body, 1)
        while True:
            await self.chunk(writer, ("data: " + "y" * 1000 + "\n") * 64)

    async def mode_nan_timings(self, writer, body, path):
        """llama.cpp-style timings with NaN and a negative count (json.dumps writes NaN)."""
        await self.start_stream(writer)
        await self.tokens(writer, body, 3)
        timings = {"prompt_n": -5, "prompt_ms": float("nan"), "predicted_n": 3, "predicted_ms": float("inf"),
                   "predicted_per_second": float("nan")}
        await self.chunk(writer, "data: " + json.dumps({"id": "x", "choices": [], "timings": timings}) + "\n\n")
        await self.chunk(writer, "data: [DONE]\n\n")
        await self.end(writer)

    async def mode_negative_usage(self, writer, body, path):
        """Usage claiming -7 completion tokens and a NaN prompt count."""
        await self.start_stream(writer)
        await self.tokens(writer, body, 2)
        usage = {"prompt_tokens": float("nan"), "completion_tokens": -7}
        await self.chunk(writer, "data: " + json.dumps({"id": "x", "choices": [], "usage": usage}) + "\n\n")
        await self.chunk(writer, "data: [DONE]\n\n")
        await self.end(writer)

    async def mode_html(self, writer, body, path):
        """HTTP 200 with an HTML page (a web app, not an LLM endpoint)."""
        msg = b"<!doctype html><html><body>Welcome to nginx!</body></html>"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: " + str(len(msg)).encode()
                     + b"\r\nConnection: close\r\n\r\n" + msg)
        await writer.drain()

    # --- load and prompts (issue 15)
    SLOTS = 2  # mode "slots": a server with 2 parallel slots; more requests queue (saturates at 2)
    SLOT_GAP_S = 0.05  # its token gap: 8 tokens take >= 0.4 s, long beside the client's own gaps

    async def mode_slots(self, writer, body, path):
        if not hasattr(self, "_slots"):
            self._slots = asyncio.Semaphore(self.SLOTS)
        async with self._slots:
            n = self.n_tokens(body)
            await self.start_stream(writer)
            await asyncio.sleep(TTFT_S)
            for i in range(n):
                await self.chunk(writer, self.completion_event("t", "length" if i == n - 1 else None))
                if i < n - 1:
                    await asyncio.sleep(self.SLOT_GAP_S)
            await self.finish(writer, body, 11, n)

    @staticmethod
    def prompt_bytes(body) -> int:
        """The prompt's size as a byte-level tokenizer without BOS counts it: UTF-8 bytes of the prompt,
        or of every message's content joined by newlines."""
        if "messages" in body:
            return len("\n".join(m["content"] for m in body["messages"]).encode())
        return len(str(body.get("prompt", "")).encode())

    async def mode_bytes(self, writer, body, path):
        """Like ok, but usage.prompt_tokens = the prompt's UTF-8 bytes (a byte-level tokenizer)."""
        n = self.n_tokens(body)
        await self.start_stream(writer)
        await self.tokens(writer, body, n)
        await self.finish(writer, body, self.prompt_bytes(body), n)

    async def mode_ollama_chat(self, writer, body, path):
        """Ollama /api/chat NDJSON: text in message.content; answers 'turn<k>' where k = user turns so far."""
        turns = sum(1 for m in body.get("messages", []) if m.get("role") == "user")
        await self.start_stream(writer, "application/x-ndjson")
        await asyncio.sleep(TTFT_S)
        for piece in (f"turn{turns}", "!"):
            await self.chunk(writer, json.dumps({"model": "m", "message": {"role": "assistant", "content": piece},
                                                 "done": False}) + "\n")
            await asyncio.sleep(GAP_S)
        final = {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop",
                 "prompt_eval_count": self.prompt_bytes(body), "prompt_eval_duration": 1_000_000,
                 "eval_count": 2, "eval_duration": 40_000_000}
        await self.chunk(writer, json.dumps(final) + "\n")
        await self.end(writer)

    async def mode_chat_echo(self, writer, body, path):
        """OpenAI chat: answers 'turn<k>' in two chunks (k = user turns in the history)."""
        turns = sum(1 for m in body.get("messages", []) if m.get("role") == "user")
        await self.start_stream(writer)
        await asyncio.sleep(TTFT_S)
        await self.chunk(writer, self.completion_event(f"turn{turns}", chat=True))
        await asyncio.sleep(GAP_S)
        await self.chunk(writer, self.completion_event("!", "stop", chat=True))
        await self.finish(writer, body, self.prompt_bytes(body), 2)

