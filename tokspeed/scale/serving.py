"""Batching and serving: what many users at once get from one setup.

- Batch curve: one decode step serves B sequences; per-user tok/s = 1 / step(B), aggregate = B / step(B).
- Ridge batch: the smallest B whose weight matmuls are compute bound. With weights read once per step and
  2 FLOPs per weight per sequence, a matmul turns compute bound near
  ``B = (peak FLOP/s / bandwidth) x bytes per weight / 2`` (H100 SXM FP16: 989 / 3.35 x 2 / 2 ≈ 295).
- Largest batch that fits: from the KV cache left after weights, activations and runtime (``memory``).
- Continuous batching at a request rate R (requests/s), prompt P and output G tokens (vLLM/Orca-style:
  every iteration decodes all running sequences and prefills a chunk of new prompts). In steady state
  the engine spends ``rho = R P t_prefill`` of its time on prefill, so one decode iteration every
  ``TPOT = step(B) / (1 - rho)``; by Little's law ``B = R G TPOT`` sequences are decoding. The fixed
  point of those two gives B and TPOT; none (or B above the largest batch) means the rate is beyond
  the setup. TTFT = half an iteration of waiting + ceil(P / chunk) iterations, each carrying one chunk
  of the prompt.
- Cost and energy: USD per 1M generated tokens = price per hour / 3600 / aggregate tok/s x 1e6; joules
  per token = board power (TDP, an upper bound) x devices / aggregate tok/s.
"""

from __future__ import annotations

import math

from ..workload import UBATCH
from ..timing import op_time

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


def continuous_batching(step_s, prefill_s_per_token: float, prompt: int, gen: int, rate: float,
                        max_batch: int, iterations: int = 200) -> dict:
    """Steady state under ``rate`` requests/s (see the module doc). ``step_s(b)`` is one decode
    iteration for b running sequences."""
    rho = rate * prompt * prefill_s_per_token
    base = {"rate_rps": rate, "prompt": prompt, "gen": gen, "prefill_share": rho}
    if rho >= 1 or gen < 1:
        return {**base, "stable": False, "reason": "prefill alone needs more than the whole device" if rho >= 1
                else "no output tokens"}
    b = 1.0
    for _ in range(iterations):
        tpot = step_s(max(1, math.ceil(b))) / (1 - rho)
        nb = rate * gen * tpot
        if nb > max_batch:
            return {**base, "stable": False, "reason": f"needs more than the {max_batch} sequences that fit"}
        if abs(nb - b) <= 1e-3 * max(b, 1):
            b = nb
            break
        b = nb
    else:
        return {**base, "stable": False, "reason": "no steady state (queue grows)"}
    it = step_s(max(1, math.ceil(b)))
    chunk = min(prompt, UBATCH)
    n_chunks = math.ceil(prompt / UBATCH) if prompt else 0
    ttft = it / 2 + n_chunks * (it + chunk * prefill_s_per_token)
    return {**base, "stable": True, "running_sequences": b, "tpot_s": tpot, "ttft_s": ttft,
            "per_user_tok_s": 1 / tpot, "aggregate_tok_s": rate * gen}


def max_rate(step_s, prefill_s_per_token: float, prompt: int, gen: int, max_batch: int) -> float:
    """Largest request rate with a steady state (bisection on the rate)."""
    hi = 1 / (prompt * prefill_s_per_token) if prompt and prefill_s_per_token else max_batch / (gen * step_s(1))
    lo = 0.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if mid > 0 and continuous_batching(step_s, prefill_s_per_token, prompt, gen, mid, max_batch)["stable"]:
            lo = mid
        else:
            hi = mid
    return lo


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
