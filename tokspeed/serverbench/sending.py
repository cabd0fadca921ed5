"""What every load generator of a bench-server run (one process, ``--workers``, Ray actors) builds
from the run's config (``bench.BenchConfig``): the prompts, the load plan, the HTTP client and the
coroutine that sends one job and returns its record."""

from __future__ import annotations

import asyncio

from .apis import CHAT_APIS, request_body
from .client import RequestSpec, Timeouts, measure
from .loadgen import Job, LoadPlan
from .workload import PromptSource, read_prompt_file, shared_prefix_text


def build_prompts(cfg, counter) -> PromptSource:
    src = PromptSource(chat=cfg.api in CHAT_APIS, count=counter.count if counter else None)
    if cfg.prompts_file:
        src.texts, src.conversations = read_prompt_file(cfg.prompts_file, cfg.prompt_column)
    if cfg.shared_prefix:
        src.shared_prefix = shared_prefix_text(cfg.shared_prefix, counter.count if counter else None)
        src.shared_prefix_tokens = cfg.shared_prefix
    return src


def make_plan(cfg, prompts: PromptSource, worker: int = 0, n_workers: int = 1) -> LoadPlan:
    return LoadPlan(concurrency=cfg.concurrency, requests=cfg.requests, duration_s=cfg.duration_s,
                    rates=cfg.rates, warmup=cfg.warmup, prompt_tokens=cfg.prompt_tokens,
                    max_tokens=cfg.max_tokens, seed=cfg.seed, arrivals=cfg.arrivals, throughput=cfg.throughput,
                    max_in_flight=cfg.max_in_flight, prompts=prompts, worker=worker, n_workers=n_workers)


def auth_headers(cfg) -> dict:
    return {"Authorization": f"Bearer {cfg.api_key}"} if cfg.api_key else {}


def make_send(cfg, client, counter, cancel: asyncio.Event):
    """The coroutine that sends one job and returns its record (``cancel``: stop reading streams)."""
    timeouts = Timeouts(*cfg.timeouts)
    headers = auth_headers(cfg)
    count_chunk = counter.count_fragment if counter else None

    async def send(job: Job) -> dict:
        body = request_body(cfg.api, cfg.model, job.prompt, job.max_tokens, temperature=cfg.temperature,
                            seed=cfg.seed, ignore_eos=cfg.ignore_eos, stream_usage=cfg.stream_usage,
                            messages=job.messages)
        rec = await measure(client, RequestSpec(job.index, cfg.url, cfg.api, body, job.labels), timeouts,
                            headers, count_tokens=count_chunk, secret=cfg.api_key, stop=cancel)
        if rec.get("prompt_tokens") is None and counter is not None:
            # the server did not say: count what was sent with the model's tokenizer (a chat
            # template's own tokens are not in this count)
            text = body.get("prompt") if "prompt" in body else "\n".join(m["content"] for m in body["messages"])
            rec["prompt_tokens"], rec["prompt_tokens_source"] = counter.count(text), "tokenizer"
        return rec

    return send


def http_client(n_conn: int):
    import httpx  # lazy: optional dependency (httpx, the server extra)

    # identity: a compressed body could expand a thousandfold past every size cap before it is counted
    return httpx.AsyncClient(trust_env=False, follow_redirects=False, headers={"Accept-Encoding": "identity"},
                             limits=httpx.Limits(max_connections=n_conn, max_keepalive_connections=n_conn))
