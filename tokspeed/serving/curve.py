"""Batching and serving: what many users at once get from one setup.

- Batch curve: one decode step serves B sequences; per-user tok/s = 1 / step(B), aggregate = B / step(B).
- Ridge batch: the smallest B whose weight matmuls are compute bound. With weights read once per step and
  2 FLOPs per weight per sequence, a matmul turns compute bound near
  ``B = (peak FLOP/s / bandwidth) x bytes per weight / 2`` (H100 SXM FP16: 989 / 3.35 x 2 / 2 ≈ 295).
- Largest batch that fits: from the KV cache left after weights, activations and runtime (``memory``).
- Continuous batching at a request rate R (requests/s), prompt P and output G tokens: the step-level
  simulation of the engine's scheduler (``tokspeed.serving``: each step decodes every running sequence and
  fills the rest of the token budget with prompt chunks), over requests arriving at constant gaps 1/R;
  TTFT and TPOT are the medians, the prefill share ``rho = R P t_prefill`` is reported as before.
- Cost and energy: USD per 1M generated tokens = price per hour / 3600 / aggregate tok/s x 1e6; joules
  per token = board power (TDP, an upper bound) x devices / aggregate tok/s.
"""

from __future__ import annotations

from ..timing import op_time
from .metrics import percentile, tpot_of
from .requests import Arrivals, lengths, make_requests
from .schedulers import scheduler_for
from .simulate import simulate

RIDGE_LIMIT = 1 << 16


def ridge_batch(bound_at, limit: int = RIDGE_LIMIT) -> int | None:
    """Smallest batch whose decode step is compute bound (``bound_at(b) -> "compute"|...``), by
    bisection; None if not reached by ``limit``."""
    if bound_at(1) == "compute":
        return 1
    if bound_at(limit) != "compute":
        return None
    lo, hi = 1, limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if bound_at(mid) == "compute":
            hi = mid
        else:
            lo = mid
    return hi


def weight_matmul_bound(ops, hw, prof, quant, tokens: int = 0) -> str:
    """What bounds the weight matmuls of a pass (the ops that read weights): "compute" once the
    compute-bound ones take longer than the memory-bound ones. Attention over the KV cache is left out:
    its bytes grow with the batch like its FLOPs, so it never turns compute bound in decode."""
    spent = {"compute": 0.0, "memory": 0.0}
    for op in ops:
        if op.unit == "tensor" and op.weight_bytes:
            t, b = op_time(op, hw, prof, quant, tokens)
            spent[b] += t
    return "compute" if spent["compute"] > spent["memory"] else "memory"


def batch_curve(step_s, batches, max_batch: int) -> list[dict]:
    out = []
    for b in batches:
        s = step_s(b)
        out.append({"batch": b, "step_ms": s * 1e3, "per_user_tok_s": 1 / s, "aggregate_tok_s": b / s,
                    "fits": b <= max_batch})
    return out


def default_batches(max_batch: int) -> list[int]:
    out, b = [], 1
    while b <= max(max_batch, 1) and b <= RIDGE_LIMIT:
        out.append(b)
        b *= 2
    if max_batch > 1 and out[-1] != max_batch and max_batch <= RIDGE_LIMIT:
        out.append(max_batch)
    return out


class FunctionCost:
    """A step cost from a decode-step function and a prefill cost per token: ``step_s(b) + c x t_pf``
    (the inputs ``predict`` has for its ``--rate`` answer; ``tokspeed serve`` times steps from the ledger)."""

    def __init__(self, step_s, prefill_s_per_token: float):
        self.step_s, self.t_pf = step_s, prefill_s_per_token

    def step(self, b: int, c: int, kv_tokens: float = 0.0, pairs: float = 0.0) -> float:
        return (self.step_s(b) if b else 0.0) + c * self.t_pf


RATE_REQUESTS = 300     # requests of a simulated rate run (constant gaps: the steady state, deterministic)


def _rate_run(step_s, prefill_s_per_token: float, prompt: int, gen: int, rate: float, max_batch: int,
              engine: str | None, offline: bool = False):
    sched = scheduler_for(engine or "default")
    sched = sched.with_(max_seqs=max(1, min(sched.max_seqs, max_batch)))
    n = max(RATE_REQUESTS, 4 * sched.max_seqs) if offline else RATE_REQUESTS
    arr = Arrivals("offline" if offline else "rate", n, rate_rps=rate, poisson=False)
    reqs = make_requests(arr, lengths(n, prompt, max(gen, 1)))
    return simulate(FunctionCost(step_s, prefill_s_per_token), sched, float("inf"), reqs)


def continuous_batching(step_s, prefill_s_per_token: float, prompt: int, gen: int, rate: float,
                        max_batch: int, engine: str | None = None) -> dict:
    """Continuous batching at ``rate`` requests/s, from the step-level simulation of the engine's scheduler
    (``tokspeed.serving.simulate``: decodes and prefill chunks share each step under the token budget), with
    ``step_s(b)`` one decode step of b sequences and ``prefill_s_per_token`` each prompt token's cost;
    at most ``max_batch`` sequences at once. Stable when the rate is within what the engine serves at full
    batch (``max_rate``) and the requests finish as fast as they arrive (the last third's median TTFT under
    twice the first third's plus one second). ``max_rate_rps`` rides along in every answer (simulated once)."""
    cap = max_rate(step_s, prefill_s_per_token, prompt, gen, max_batch, engine)
    rho = rate * prompt * prefill_s_per_token
    base = {"rate_rps": rate, "prompt": prompt, "gen": gen, "prefill_share": rho}

    def answer(**kw) -> dict:
        return {**base, **kw, "max_rate_rps": cap}

    if gen < 1:
        return answer(stable=False, reason="no output tokens")
    if rho >= 1:
        return answer(stable=False, reason="prefill alone needs more than the whole device")
    if rate > cap:
        return answer(stable=False, reason=f"beyond the {cap:.3g} requests/s the engine serves at full batch")
    out = _rate_run(step_s, prefill_s_per_token, prompt, gen, rate, max_batch, engine)
    reqs = sorted(out.requests)
    third = max(1, len(reqs) // 3)
    early = percentile([r[1] for r in reqs[:third]], 50)
    late = percentile([r[1] for r in reqs[-third:]], 50)
    if late > 2 * early + 1.0:
        return answer(stable=False, reason="no steady state (queue grows)")
    tpots = [x for r in reqs if (x := tpot_of(r[1], r[2], r[3])) is not None]
    tpot = percentile(tpots, 50) if tpots else step_s(1)
    return answer(stable=True, running_sequences=out.mean_running, tpot_s=tpot,
                  ttft_s=percentile([r[1] for r in reqs], 50), per_user_tok_s=1 / tpot, aggregate_tok_s=rate * gen)


def max_rate(step_s, prefill_s_per_token: float, prompt: int, gen: int, max_batch: int,
             engine: str | None = None) -> float:
    """Largest sustainable request rate: the request throughput of an offline run (every request queued
    at once: the engine never idles) of four times as many requests as run at once (ramp and drain a
    small share of it)."""
    out = _rate_run(step_s, prefill_s_per_token, prompt, max(gen, 1), 1.0, max_batch, engine, offline=True)
    dur = out.end_s - out.start_s
    return len(out.requests) / dur if dur > 0 else 0.0


def cost(aggregate_tok_s: float, power_w: float, price_per_hour: float | None) -> dict:
    out = {"price_per_hour": price_per_hour, "usd_per_million_tokens": None, "power_w": power_w or None,
           "joules_per_token": None, "kwh_per_million_tokens": None}
    if aggregate_tok_s > 0:
        if price_per_hour is not None:
            out["usd_per_million_tokens"] = price_per_hour / 3600 / aggregate_tok_s * 1e6
        if power_w:
            j = power_w / aggregate_tok_s
            out["joules_per_token"] = j
            out["kwh_per_million_tokens"] = j * 1e6 / 3.6e6
    return out
