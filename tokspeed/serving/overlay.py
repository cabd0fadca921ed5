"""The simulated serving figures of one measured load level (`bench-server`'s predicted overlay): one engine
instance on one device running the level's requests with the prompt and output lengths they actually had (the
run's records), at its concurrency (closed loop) or its request rate (constant arrivals)."""

from __future__ import annotations

from ..errors import UserError
from ..workload import DEFAULT_ENGINE
from .metrics import summarize
from .requests import Arrivals, make_requests
from .run import Load, run_worker
from .worker import Parallelism

MIN_REQUESTS = 64          # a level with fewer recorded requests is repeated to this many (a steady state)
MAX_LENGTH = 1 << 24       # tokens of one request (as ``requests.check_length``); a server's claim beyond it is dropped
MAX_REPLAY_OUTPUT = 1 << 21   # output tokens of one replay: at most ~2M scheduler steps, a second or two of CPU


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_LENGTH


def phase_lengths(records, phase: str | None) -> list[tuple[int, int]]:
    """(prompt, output) tokens of the level's answered requests that report both."""
    out = []
    for r in records or ():
        if r.get("phase") == phase and r.get("ok") and _count(r.get("prompt_tokens")) and _count(r.get("output_tokens")):
            out.append((r["prompt_tokens"], r["output_tokens"]))
    return out


def simulate_phase(make_setup, model, hardware, quant, engine, sizes: list[tuple[int, int]], *, concurrency: int = 0,
                   rate_rps: float = 0.0) -> dict:
    """``{output_tok_s, ttft_ms_p50, tpot_ms_p50, requests}`` of the level; ``sizes``: its (prompt, output)
    lengths, in the order they were sent; ``make_setup``: ``serving_api.make_setup`` (predict's resolution)."""
    reps = -(-MIN_REQUESTS // len(sizes))
    sizes = (list(sizes) * reps)[:max(len(sizes), MIN_REQUESTS)]
    if sum(s[1] for s in sizes) > MAX_REPLAY_OUTPUT:
        raise UserError(f"{sum(s[1] for s in sizes):,} output tokens to replay: beyond the simulation's "
                        f"{MAX_REPLAY_OUTPUT:,}")
    isl = max(1, round(sum(s[0] for s in sizes) / len(sizes)))
    osl = max(1, round(sum(s[1] for s in sizes) / len(sizes)))
    setup = make_setup(model, hardware, engine or DEFAULT_ENGINE, quant=quant, isl=isl, osl=osl)
    kind = "rate" if rate_rps else "concurrency"
    arr = Arrivals(kind, len(sizes), concurrency=concurrency, rate_rps=rate_rps, poisson=False)
    load = Load(kind, concurrency=concurrency, rate_rps=rate_rps, n_requests=len(sizes))
    out, w = run_worker(setup, Parallelism(), load, 1, arrivals=make_requests(arr, sizes))
    m = summarize(out, w.gpus)
    return {"output_tok_s": m["output_tok_s"], "ttft_ms_p50": m["ttft_ms"]["p50"], "tpot_ms_p50": m["tpot_ms"]["p50"],
            "requests": len(sizes)}
