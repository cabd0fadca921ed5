"""Section a of ``bench_aiconfigurator.py``: the public serving rows both tools can answer.

tokspeed's side is ``tokspeed.serving.rows`` (the cases ``scripts/fit_serving.py`` scores: ``load_cases`` and
``evaluate_case`` with the committed fitted constants, i.e. in-sample). AIConfigurator's side maps a case to its
inputs (``question``):

- system, backend and model: ``SYSTEMS``, ``BACKENDS``, ``MODELS`` (its own model configs; Llama-3.3-70B takes
  Llama-3.1-70B's, the same architecture); weights FP8 -> ``gemm``/``moe`` ``fp8`` (DeepSeek: its checkpoint's
  block FP8), 16-bit -> ``bfloat16``; KV as the row states;
- layout: the row's TP (per replica; AIConfigurator's tok/s per GPU is per GPU of the replica; a MoE model's
  experts TP-split too, the engines' default), or attention data parallel over the GPUs with experts over all of
  them (``DP-attn`` rows);
- lengths: ISL/OSL, or their mean where the row's lengths were uniform in [r, 1] x nominal;
- load: ``offline`` -> its max-throughput point (the batch ladder up to the engine's max batch, while its KV check
  holds the batch, at a context budget of ISL and of the engine's token budget, both from
  ``tokspeed/serving/schedulers.toml``); ``concurrency`` -> one agg point at that batch per replica;
  ``rate`` -> the smallest batch whose throughput reaches the rate (Little's law), tok/s = the rate's; these two
  at AIConfigurator's default context budget (one prompt of ISL per step: a larger budget is a step of several
  prompts, which its TTFT then counts even at a low rate).
"""

from __future__ import annotations

import statistics

SYSTEMS = {"h100-sxm": "h100_sxm", "h200-sxm": "h200_sxm", "a100-80g-sxm": "a100_sxm", "a100-80g-pcie": "a100_pcie",
           "l40s": "l40s", "b200-sxm": "b200_sxm", "gb200": "gb200"}
BACKENDS = {"tensorrt-llm": "trtllm", "sglang": "sglang", "vllm": "vllm"}
# tokspeed id -> (AIConfigurator's model config, MoE, checkpoint already FP8)
MODELS = {"llama-3.1-8b": ("meta-llama/Meta-Llama-3.1-8B", False, False),
          "llama-3.1-70b": ("meta-llama/Meta-Llama-3.1-70B", False, False),
          "llama-3.3-70b": ("meta-llama/Meta-Llama-3.1-70B", False, False),
          "llama-3.1-405b": ("meta-llama/Meta-Llama-3.1-405B", False, False),
          "mixtral-8x7b": ("mistralai/Mixtral-8x7B-v0.1", True, False),
          "mixtral-8x22b": ("mistralai/Mixtral-8x22B-v0.1", True, False),
          "deepseek-v3": ("deepseek-ai/DeepSeek-V3", True, True),
          "deepseek-r1": ("deepseek-ai/DeepSeek-R1", True, True),
          "llama-4-maverick-17b-128e": ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", True, False)}
METRICS = (("tok_s_per_gpu", "output tok/s per GPU"), ("tpot_ms", "TPOT p50"), ("ttft_ms", "TTFT p50"))


def err(pred, meas) -> float | None:
    """pred / meas - 1; a prediction of 0 (no KV room: nothing served) is -100 %."""
    return pred / meas - 1 if pred is not None and meas else None


def quantiles(errs: list) -> tuple:
    """(median, p90) of |e| in %, or (None, None): p90 is the nearest rank of the sorted list."""
    a = sorted(abs(e) for e in errs)
    if not a:
        return None, None
    return 100 * statistics.median(a), 100 * a[min(len(a) - 1, round(0.9 * (len(a) - 1)))]


def pct(e) -> str:
    return "–" if e is None else f"{100 * e:+.0f} %"


def num(v, nd=0) -> str:
    return "–" if v is None else f"{v:,.{nd}f}"


def quant_kw(model: str, quant: str, kv_dtype: str) -> dict:
    _, moe, native_fp8 = MODELS[model]
    kw = {"kvcache_quant_mode": "fp8" if kv_dtype == "fp8" else "bfloat16"}
    if not native_fp8:
        w = "fp8" if quant == "FP8" else "bfloat16"
        kw["gemm_quant_mode"] = w
        if moe:
            kw["moe_quant_mode"] = w
    return kw


def engine_limits(engine: str, isl: int) -> tuple[int, list[int]]:
    """(the engine's max batch, context budgets to try: ISL and the largest multiple of ISL within the engine's
    token budget) from tokspeed's scheduler table (the engines' sourced defaults)."""
    from tokspeed.serving.schedulers import scheduler_for

    s = scheduler_for(engine)
    return s.max_seqs, sorted({isl, max(isl, s.token_budget // isl * isl)})


def question(c) -> tuple[dict | None, str]:
    """(AIConfigurator's question for case ``c``, "") or (None, why it cannot answer)."""
    system, backend = SYSTEMS.get(c.hardware), BACKENDS.get(c.engine)
    if system is None:
        return None, f"no AIConfigurator system for {c.hardware}"
    if backend is None or c.model not in MODELS:
        return None, "engine or model not in AIConfigurator"
    mean = (1 + c.length_ratio) / 2
    isl, osl = max(1, round(c.isl * mean)), max(1, round(c.osl * mean))
    kw = {"model_path": MODELS[c.model][0], "system_name": system, "backend_name": backend, "isl": isl, "osl": osl,
          **quant_kw(c.model, c.quant, c.kv_dtype)}
    if c.dp_attn:
        kw.update(tp_size=1, attention_dp_size=c.gpus, moe_ep_size=c.gpus)
    else:
        kw["tp_size"] = c.tp
        if MODELS[c.model][1]:
            kw.update(moe_tp_size=c.tp, moe_ep_size=1)      # experts split like the rest (the engines' default)
    max_bs, ctx = engine_limits(c.engine, isl)
    if c.scenario == "offline":
        return {"fn": "max_throughput", "kw": kw, "max_bs": max_bs, "ctx_options": ctx}, ""
    if c.scenario == "concurrency":
        per = c.concurrency // (c.gpus if c.dp_attn else c.replicas)
        if per < 1:
            return None, "concurrency below one per replica"
        return {"fn": "estimate", "kw": {**kw, "batch_size": per}}, ""
    return {"fn": "rate", "kw": kw, "rate_rps": c.rate_rps, "replicas": c.replicas, "max_bs": max_bs}, ""


def aic_prediction(c, q: dict, a: dict) -> dict | None:
    """{tok_s_per_gpu, tpot_ms, ttft_ms} of AIConfigurator's answer ``a`` to case ``c``."""
    if "error" in a:
        return None
    tok = a.get("tok_s_per_gpu") or None        # OSL 1: no output rate, the TTFT still counts
    if q["fn"] == "rate" and a.get("meets_rate"):
        tok = c.rate_rps * q["kw"]["osl"] / c.gpus       # a steady state delivers the offered load
    return {"tok_s_per_gpu": tok, "tpot_ms": a["tpot_ms"], "ttft_ms": a["ttft_ms"]}


def layout_of(c) -> str:
    return f"attn-DP{c.gpus}+EP{c.gpus}" if c.dp_attn else f"TP{c.tp}" + (f" x{c.replicas}" if c.replicas > 1 else "")


def load_of(c) -> str:
    return {"offline": "offline", "concurrency": f"conc {c.concurrency}", "rate": f"{c.rate_rps:g} req/s"}[c.scenario]


def run_rows(aic, held_out: bool = False) -> dict:
    """Both tools on every answerable case: {"rows": [...], "skipped": {reason: n}, "tokspeed_s": wall}.
    ``held_out``: the newer rows (``serving-calibration-2.csv``) with tokspeed's constants fitted without them
    (``serving.fitted.forward_for``: the forward-in-time test); else the older rows with the committed constants
    (in-sample)."""
    import time

    from tokspeed.hardware.catalog import get_hardware
    from tokspeed.serving.fitted import forward_for
    from tokspeed.serving.rows import CSV, CSV2, evaluate_case, load_cases
    from tokspeed.serving_api import make_setup

    cases, skipped = load_cases(CSV2 if held_out else CSV)
    skipped = {f"tokspeed: {k}": v for k, v in skipped.items()}
    asked = []
    for c in cases:
        q, why = question(c)
        if q is None:
            skipped[why] = skipped.get(why, 0) + 1
        else:
            asked.append((c, q))
    answers = aic.ask([q for _, q in asked])
    rows, t_ts = [], 0.0
    for (c, q), a in zip(asked, answers):
        t = time.perf_counter()
        try:
            ts = evaluate_case(c, forward_for(c.engine, get_hardware(c.hardware).vendor) if held_out else None,
                               make_setup=make_setup)
        except Exception as e:       # noqa: BLE001  a case the simulator refuses is reported, not fatal
            ts = {"error": f"{type(e).__name__}: {e}"}
        t_ts += time.perf_counter() - t
        rows.append({"case": c, "q": q, "aic_raw": a, "aic": aic_prediction(c, q, a),
                     "tokspeed": None if "error" in ts else ts})
    return {"rows": rows, "skipped": skipped, "tokspeed_s": t_ts}


def summary_lines(rows: list) -> list[str]:
    """Median / p90 of each tool on the rows both answered and that measured the metric, overall and per scenario."""
    out = ["| metric | scenario | rows | tokspeed median | tokspeed p90 | AIConfigurator median | AIConfigurator p90 |",
           "|---|---|---|---|---|---|---|"]
    for key, label in METRICS:
        for scen in ("all", "offline", "concurrency", "rate"):
            both = [r for r in rows if r["tokspeed"] and r["aic"] and getattr(r["case"], key)
                    and r["tokspeed"].get(key) is not None and r["aic"].get(key) is not None
                    and (scen == "all" or r["case"].scenario == scen)]
            if not both:
                continue
            ts = quantiles([err(r["tokspeed"][key], getattr(r["case"], key)) for r in both])
            ai = quantiles([err(r["aic"][key], getattr(r["case"], key)) for r in both])
            out.append(f"| {label} | {scen} | {len(both)} | {num(ts[0])} % | {num(ts[1])} % | {num(ai[0])} % | "
                       f"{num(ai[1])} % |")
    return out


def row_lines(rows: list) -> list[str]:
    out = ["| row | model | weights/KV | device | engine | layout | load | ISL/OSL | tok/s/GPU measured | tokspeed | "
           "AIC | TPOT ms meas. | tokspeed | AIC | TTFT ms meas. | tokspeed | AIC |",
           "|" + "---|" * 17]
    for r in rows:
        c, ts, ai = r["case"], r["tokspeed"] or {}, r["aic"] or {}
        cells = [c.id, c.model, f"{c.quant}/{c.kv_dtype}", c.hardware, c.engine, layout_of(c), load_of(c),
                 f"{c.isl}/{c.osl}"]
        for key, _ in METRICS:
            meas = getattr(c, key)
            cells.append(num(meas, 1 if key != "tok_s_per_gpu" else 0))
            for side in (ts, ai):
                v = side.get(key)
                cells.append("–" if v is None else f"{num(v, 1 if key != 'tok_s_per_gpu' else 0)}"
                             + (f" ({pct(err(v, meas))})" if meas else ""))
        if r["aic"] is None:
            cells[-1] += f" AIC: {r['aic_raw'].get('error', 'no answer')[:60]}"
        out.append("| " + " | ".join(cells) + " |")
    return out
