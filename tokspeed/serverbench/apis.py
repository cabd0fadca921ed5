"""The three wire formats tokspeed speaks: where to POST, what to send, and how to read one chunk.

- ``openai-completions``: ``POST /v1/completions``, SSE, text in ``choices[0].text``.
- ``openai-chat``: ``POST /v1/chat/completions``, SSE, text in ``choices[0].delta.content``
  (``reasoning_content`` / ``reasoning`` count too: those are generated tokens).
- ``ollama``: ``POST /api/generate``, NDJSON, text in ``response`` (and ``thinking``); the last line (``done: true``)
  carries ``prompt_eval_count``, ``eval_count`` and ``eval_duration`` (nanoseconds).
- ``ollama-chat``: ``POST /api/chat``, NDJSON, text in ``message.content`` (and ``message.thinking``),
  the same final line; takes ``messages`` (multi-turn history).

For the OpenAI formats tokspeed asks for ``stream_options: {"include_usage": true}`` so the last
chunk carries ``usage`` (prompt_tokens, completion_tokens); a server that sends usage on every chunk
(vLLM's ``continuous_usage_stats``) lets each chunk's token count be read exactly. llama.cpp's
server adds ``timings`` (prompt_n, predicted_n, predicted_per_second, ...) to its last chunk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from ..errors import UserError
from ..guard.typed import count

APIS = ("openai-completions", "openai-chat", "ollama", "ollama-chat")
PATHS = {"openai-completions": "/v1/completions", "openai-chat": "/v1/chat/completions", "ollama": "/api/generate",
         "ollama-chat": "/api/chat"}
CHAT_APIS = ("openai-chat", "ollama-chat")
NDJSON_APIS = ("ollama", "ollama-chat")


def endpoint_url(base: str, api: str) -> str:
    """The full endpoint for ``api`` under ``base`` (``http://host:port``, ``.../v1`` or the endpoint itself)."""
    if api not in APIS:
        raise UserError(f"unknown api={api!r}", "use one of " + ", ".join(APIS), field="api")
    try:
        parts = urlsplit(base)
        parts.port  # noqa: B018 -- raises ValueError for a port out of 0-65535 or not a number
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError as e:
        raise UserError(f"cannot read the URL {_printable(base)!r}: {e}", "write it like http://127.0.0.1:8000") from None
    if not ok:
        raise UserError(f"not an http(s) URL: {redact_url(base)!r}", "write it like http://127.0.0.1:8000")
    if parts.port == 0:
        raise UserError(f"port 0 in {redact_url(base)!r} is not a server port", "write it like http://127.0.0.1:8000")
    path = parts.path.rstrip("/")
    full = PATHS[api]
    if path.endswith(full):
        new_path = path
    elif api not in NDJSON_APIS and path.endswith("/v1"):
        new_path = path + full[len("/v1"):]
    else:
        new_path = path + full
    return urlunsplit((parts.scheme, parts.netloc, new_path, parts.query, ""))


def _printable(text: str) -> str:
    return str(text)[:200]


def redact_url(url: str) -> str:
    """The URL without user:password and without the query string (either may hold a key)."""
    try:
        p = urlsplit(url)
        host = p.hostname or ""
        if ":" in host:  # an IPv6 literal goes back in brackets
            host = f"[{host}]"
        if p.port:
            host = f"{host}:{p.port}"
    except ValueError:
        return "(unreadable URL)"
    return urlunsplit((p.scheme, host, p.path, "", ""))


def request_body(api: str, model: str, prompt: str, max_tokens: int, *, temperature: float | None,
                 seed: int | None, ignore_eos: bool, stream_usage: bool, messages: list | None = None) -> dict:
    """The JSON to POST. ``messages`` (chat APIs) is the whole history; else one user message ``prompt``.
    A completions API given ``messages`` gets them flattened into one prompt (role: content lines)."""
    if messages is None:
        messages = [{"role": "user", "content": prompt}]
    if api in NDJSON_APIS:
        options = {"num_predict": max_tokens}
        if temperature is not None:
            options["temperature"] = temperature
        if seed is not None:
            options["seed"] = seed
        if api == "ollama-chat":
            return {"model": model, "messages": messages, "stream": True, "options": options}
        return {"model": model, "prompt": flatten(messages), "stream": True, "options": options}
    body: dict = {"model": model, "max_tokens": max_tokens, "stream": True}
    if api == "openai-chat":
        body["messages"] = messages
    else:
        body["prompt"] = flatten(messages)
    if stream_usage:
        body["stream_options"] = {"include_usage": True}
    if temperature is not None:
        body["temperature"] = temperature
    if seed is not None:
        body["seed"] = seed
    if ignore_eos:
        body["ignore_eos"] = True  # vLLM, SGLang and llama.cpp's server honour it; others ignore or reject it
    return body


def flatten(messages: list) -> str:
    """Chat messages as one completion prompt: a lone user message is its text, else ``role: text`` lines."""
    if len(messages) == 1 and messages[0]["role"] == "user":
        return messages[0]["content"]
    return "\n\n".join(f"{m['role']}: {m['content']}" for m in messages)


@dataclass
class Chunk:
    """What one decoded chunk says."""

    text: str = ""
    usage: dict | None = None  # prompt_tokens / completion_tokens as the server counts them
    timings: dict | None = None  # server-side timings, normalised by ``server_timings``
    finish_reason: str | None = None
    done: bool = False  # the server says the stream is complete
    error: str | None = None  # an error object sent inside the stream
    bad: list = field(default_factory=list)  # impossible values the server sent (dropped), e.g. NaN timings


COUNT_KEYS = ("prompt_tokens", "completion_tokens", "prompt_n", "predicted_n", "eval_count", "prompt_eval_count")
DURATION_KEYS = ("predicted_ms", "prompt_ms", "predicted_per_second", "prompt_per_second", "eval_duration",
                 "prompt_eval_duration", "load_duration")


MAX_TOKENS_PER_ANSWER = 2**24   # tokens one request can hold: 16.8 M, above every model's context (10 M, Llama 4
                                # Scout); a larger count is a server's lie, and the gap reservoir's work grows with it


def sane(obj: dict, bad: list) -> dict:
    """``obj`` without impossible counts (not a whole number in [0, MAX_TOKENS_PER_ANSWER]) or durations/speeds
    (not a finite number >= 0); each one dropped is noted in ``bad`` (the request is then recorded as
    malformed)."""
    out = dict(obj)
    for k in COUNT_KEYS:
        v = out.get(k)
        if v is not None and (not isinstance(v, int) or count(v, MAX_TOKENS_PER_ANSWER) is None):
            bad.append(f"{k}={v!r}")
            out[k] = None
    for k in DURATION_KEYS:
        v = out.get(k)
        if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                                  and v >= 0):
            bad.append(f"{k}={v!r}")
            out[k] = None
    return out


def read_chunk(api: str, obj: dict) -> Chunk:
    if obj.get("error"):
        err = obj["error"]
        return Chunk(error=str(err.get("message", err) if isinstance(err, dict) else err)[:300])
    bad: list = []
    if api in NDJSON_APIS:
        if api == "ollama-chat":
            msg = obj.get("message") if isinstance(obj.get("message"), dict) else {}
            text = str(msg.get("content") or "") + str(msg.get("thinking") or "")
        else:
            text = str(obj.get("response") or "") + str(obj.get("thinking") or "")
        c = Chunk(text=text, done=bool(obj.get("done")), bad=bad)
        if c.done:
            c.finish_reason = text_or_none(obj.get("done_reason"))
            obj = sane(obj, bad)
            if "eval_count" in obj or "prompt_eval_count" in obj:
                c.usage = {"prompt_tokens": obj.get("prompt_eval_count"), "completion_tokens": obj.get("eval_count")}
            c.timings = ollama_timings(obj)
        return c
    c = Chunk(bad=bad)
    choices = obj.get("choices") or []
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        ch = choices[0]
        if api == "openai-chat":
            delta = ch.get("delta") if isinstance(ch.get("delta"), dict) else {}
            c.text = "".join(str(delta.get(k) or "") for k in ("content", "reasoning_content", "reasoning"))
        else:
            c.text = str(ch.get("text") or "")
        c.finish_reason = text_or_none(ch.get("finish_reason"))
    if isinstance(obj.get("usage"), dict):
        c.usage = sane(obj["usage"], bad)
    if isinstance(obj.get("timings"), dict):
        c.timings = llamacpp_timings(sane(obj["timings"], bad))
    return c


def text_or_none(v) -> str | None:
    """A label from a server: a string (at most 200 characters), else None."""
    return v[:200] if isinstance(v, str) else None


def ollama_timings(obj: dict) -> dict | None:
    """Ollama's own counts and durations (ns) as tokens and tok/s."""
    out = {"source": "ollama"}
    n, ns = obj.get("eval_count"), obj.get("eval_duration")
    if n is not None:
        out["output_tokens"] = n
    if n and ns:
        out["decode_tok_s"] = n / (ns / 1e9)
    pn, pns = obj.get("prompt_eval_count"), obj.get("prompt_eval_duration")
    if pn is not None:
        out["prompt_tokens"] = pn
    if pn and pns:
        out["prefill_tok_s"] = pn / (pns / 1e9)
    if obj.get("load_duration"):
        out["load_s"] = obj["load_duration"] / 1e9
    return out if len(out) > 1 else None


def llamacpp_timings(t: dict) -> dict:
    """llama.cpp server's ``timings`` object as tokens and tok/s."""
    out = {"source": "llama.cpp"}
    if t.get("predicted_n") is not None:
        out["output_tokens"] = t["predicted_n"]
    if t.get("prompt_n") is not None:
        out["prompt_tokens"] = t["prompt_n"]
    if t.get("predicted_per_second"):
        out["decode_tok_s"] = t["predicted_per_second"]
    elif t.get("predicted_n") and t.get("predicted_ms"):
        out["decode_tok_s"] = t["predicted_n"] / (t["predicted_ms"] / 1e3)
    if t.get("prompt_per_second"):
        out["prefill_tok_s"] = t["prompt_per_second"]
    return out
