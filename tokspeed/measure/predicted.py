"""The prediction to set next to a measured point: ``tokspeed.predict`` for the same model shape,
quant, KV dtype, depth and batch on the same hardware profile, then this machine's calibration
(``calibrate.py``) if one is stored: t_step = bytes_step / (bandwidth * eta) + overhead.

The measurement decodes from depth ``context`` (the prompt is prefilled separately and rewound),
so decode is predicted with prompt=0 at that depth, and prefill with the prompt at that depth.
Rates are aggregate over the batch (tokens of all sequences per second), like the measured ones.
"""

from __future__ import annotations

from ..engines.profile import get_engine
from ..predict import predict
from ..quant.format_table import torch_dtypes
from ..timing import PassRates, kv_reads

# Engine model used for the uncalibrated prediction of each backend. The reference decoder is a
# gpt-fast-style decoder (fused weights, preallocated KV cache, one kernel per matrix), so it is
# predicted with the core's gpt-fast prior until this machine's calibration replaces it; llama.cpp
# uses the core's llama.cpp model. The ideal bound (eta = 1) is kept next to it as bound_tok_s.
ENGINE_FOR_BACKEND = {"torch": "gpt-fast", "llama.cpp": "llama.cpp"}


def predict_point(spec, hardware, backend: str, quant: str, context: int, gen: int, batch: int,
                  prompt: int, calibration=None, flash_attention: bool | None = None) -> dict:
    """{bound_tok_s, tok_s, prefill_tok_s, bytes_per_step, engine, source}; ``tok_s`` is the
    engine model's expectation, or the calibrated one when ``calibration`` is given. ``spec`` is a
    ModelSpec, or a GGUF path whose exact tensor bytes the core then reads. ``flash_attention``: what the
    measured llama.cpp context ran; False (llama-cpp-python's default) predicts its attention unfused."""
    engine = ENGINE_FOR_BACKEND.get(backend, "ideal")
    fa = flash_attention if backend == "llama.cpp" else None      # the run's -fa, as the engine model takes it
    label = f"{engine} (FlashAttention {'on' if fa else 'off'}, as measured)" if fa is not None else engine
    # the KV cache each backend keeps: the torch decoder's in the weights' dtype (its --kv-dtype spelling is the
    # format's name in lower case: F32 -> f32), llama.cpp's F16
    torch_weights = quant.upper() in torch_dtypes()
    kv = quant.lower() if backend == "torch" and torch_weights else "f16"
    q = quant if torch_weights or backend != "torch" else "F16"
    pred = predict(spec, hardware, quant=q, kv_dtype=kv, engine=engine, prompt=0, gen=gen, context=context,
                   batch=batch, flash_attention=fa)
    dec = pred.to_dict()["decode"]
    out = {"bound_tok_s": batch * dec["bound_tok_s"], "tok_s": batch * dec["tok_s"],
           # ideal step time x bandwidth: the bytes of one step as the core counts them
           "bytes_per_step": hardware.bandwidth_gbps * 1e9 / dec["bound_tok_s"],
           "weight_bytes_per_step": dec["weight_bytes_per_token"] * batch,
           "engine": label, "source": f"tokspeed.predict(engine={engine!r}, quant={q!r}, kv_dtype={kv!r}"
                                      + (f", flash_attention={fa})" if fa is not None else ")")}
    out["kv_bytes_per_step"] = max(out["bytes_per_step"] - out["weight_bytes_per_step"], 0.0)
    # the step's attention traffic beyond one read of the cache (linear in depth: the mean of the first and last)
    out["attn_extra_bytes_per_step"] = (attention_extra_bytes(pred, context)
                                        + attention_extra_bytes(pred, context + max(gen, 1) - 1)) / 2
    # the step's attention compute beyond what its memory side takes (a CPU's row kernels at depth)
    out["attn_compute_excess_s"] = (attention_compute_excess(pred, context, batch)
                                    + attention_compute_excess(pred, context + max(gen, 1) - 1, batch)) / 2
    if prompt:
        pre = predict(spec, hardware, quant=q, kv_dtype=kv, engine=engine, prompt=prompt, gen=1, context=context,
                      batch=batch, flash_attention=fa).to_dict()["prefill"]
        out["prefill_tok_s"] = pre.get("tok_s")
    if calibration is not None:
        out["uncalibrated_tok_s"] = out["tok_s"]
        extra = out["attn_extra_bytes_per_step"] if getattr(calibration, "attention_net", False) else 0.0
        excess = out["attn_compute_excess_s"] if getattr(calibration, "attention_compute_net", False) else 0.0
        out["tok_s"] = batch / (calibration.seconds_per_token(out["bytes_per_step"] + extra,
                                                              out["kv_bytes_per_step"] + extra) + excess)
        out["source"] += (f" + this machine's calibration (eta {calibration.eta_memory:.3f}, "
                          f"eta_kv {calibration.eta_kv or calibration.eta_memory:.3f}, "
                          f"overhead {calibration.overhead_s * 1e3:.2f} ms/step)")
    return out


def attention_extra_bytes(pred, depth: int) -> float:
    """Bytes one decode step at ``depth`` moves for attention beyond one read of the KV cache, as the
    prediction's engine counts them: the per-query-head re-reads that reach memory (``timing.kv_reads``) and the
    score matrix of unfused attention (``attn_bytes_per_flop``); 0 for fused attention. A machine calibration
    fitted with them (``Calibration.attention_net``) holds the K/V efficiency net of the attention it ran."""
    eng = pred.engine_profile       # the engine's own attention, not as an earlier calibration of the machine set it
    eng = get_engine(eng.name, version=eng.version or None, flash_attention=eng.flash_attention)
    return sum(op.kv_read_bytes * (kv_reads(op, eng) - 1.0) + op.flops * eng.attn_bytes_per_flop
               for op in pred.decode_ops(depth) if op.kv_read_bytes or op.kv_write_bytes)


def attention_compute_excess(pred, depth: int, batch: int = 1) -> float:
    """Seconds one decode step at ``depth`` spends on attention compute beyond the attention's memory time, as the
    prediction's engine times it (``timing.PassRates.parts``): llama.cpp-cpu's row kernels on x86 at depth
    (cpu_kernels.ROW_ATTENTION_SHARE), ~0 where attention is memory-bound. A machine calibration fitted net of it
    (``Calibration.attention_compute_net``) fits the bandwidths on what the step's memory took."""
    eng = pred.engine_profile
    eng = get_engine(eng.name, version=eng.version or None, flash_attention=eng.flash_attention)
    rates = PassRates(pred.hw, eng, pred.quant, batch)
    return sum(max(t_c - t_m, 0.0) for t_c, t_m, _ in (rates.parts(op) for op in pred.decode_ops(depth)
                                                       if op.kv_read_bytes or op.kv_write_bytes))
