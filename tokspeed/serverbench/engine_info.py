"""What engine and version the server says it runs, where it says so (recorded in summary.json ``server``).

Read once before the run, each bounded in size and total time (``guard.bounded``), only from the URL's own
host, and never fatal:
- llama.cpp's server: ``GET /props`` (``build_info``, ``total_slots``, ``model_path``) and ``/health``;
- Ollama: ``GET /api/version`` (``version``);
- vLLM: ``GET /version`` (``version``); TGI: ``GET /info`` (``version``, ``model_id``).
Only a few short fields are kept (strings cut to 200 characters).
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit, urlunsplit

from ..guard.bounded import aread_body
from ..guard.typed import parse
from .apis import PATHS

PROBE_TIMEOUT_S = 3.0  # each probe, headers and body together
PROBE_MAX_BYTES = 1 << 20  # a real /props is a few kB
KEEP = {"/props": ("build_info", "total_slots", "model_path", "n_ctx"),
        "/api/version": ("version",), "/version": ("version",), "/info": ("version", "model_id", "max_batch_total_tokens")}
ENGINE = {"/props": "llama.cpp", "/api/version": "ollama", "/version": "vllm", "/info": "tgi"}


def base_url(endpoint: str, api: str) -> str:
    """The server root of an endpoint URL (its API path and a trailing /v1 removed)."""
    p = urlsplit(endpoint)
    path = p.path
    if path.endswith(PATHS[api]):
        path = path[: -len(PATHS[api])]
    if path.endswith("/v1"):
        path = path[:-3]
    return urlunsplit((p.scheme, p.netloc, path, "", ""))


async def server_info(client, endpoint: str, api: str, headers: dict | None = None) -> dict | None:
    """{"engine", "version" or "build_info", ...} from the first probe that answers with JSON, else None."""
    root = base_url(endpoint, api)
    order = ("/api/version", "/props", "/version", "/info") if api.startswith("ollama") else \
        ("/props", "/version", "/info", "/api/version")
    for path in order:
        try:
            obj = await _probe(client, root + path, headers)
        except Exception:  # absent, not JSON, refused, too big, too slow: not every server has every endpoint
            continue
        if not isinstance(obj, dict):
            continue
        kept = {k: _short(obj[k]) for k in KEEP[path] if k in obj and obj[k] is not None}
        if not kept:
            continue
        return {"engine": ENGINE[path], "endpoint": path, **kept}
    return None


async def _probe(client, url: str, headers: dict | None):
    """The JSON of one probe, read through ``guard.bounded`` (at most PROBE_MAX_BYTES, PROBE_TIMEOUT_S in all)."""
    async def go():
        async with client.stream("GET", url, headers=headers or {}, timeout=PROBE_TIMEOUT_S) as r:
            if r.status_code != 200:
                return None
            return parse(await aread_body(r, PROBE_MAX_BYTES, PROBE_TIMEOUT_S))   # the one JSON gate

    return await asyncio.wait_for(go(), PROBE_TIMEOUT_S)   # the headers too: a server may never send them


def _short(v):
    if isinstance(v, (int, float, bool)):
        return v
    return str(v)[:200]
