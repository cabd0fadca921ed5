"""The ways a setup that does not fit memory would run, each with its predicted figure.

Used by the calculator's "does not fit" headline. Each way is one change to the form's settings:
offload layers to system RAM, more GPUs of the same kind, a smaller weight format, a shorter context or a
smaller batch. A way is listed with ``fits`` false when it still would not run (e.g. offload needs more
system RAM than the assumed host has), so the reader sees why it is not offered as the answer.
"""

from __future__ import annotations

import math

from ..errors import UserError

# Smaller formats, most accurate first: the first one that fits is the one to try.
SMALLER_QUANTS = ("FP8", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "IQ4_XS", "Q3_K_M", "Q2_K")
GPU_COUNTS = (2, 4, 8, 16, 32, 64)


def _predict(model, hw, q, **over):
    from ..predict import predict

    kw = dict(quant=q.quant or None, kv_dtype=q.kv_dtype, engine=q.engine, prompt=q.prompt, gen=q.gen,
              context=q.context, batch=q.batch)
    if q.gpus > 1:
        kw["gpus"] = q.gpus
    if q.offload != "none":
        kw["offload"] = q.offload
    kw.update(over)
    if kw.get("gpus") == 1:
        kw.pop("gpus")
    try:
        return predict(model, hw, **kw)
    except UserError:
        return None


def _way(kind, label, pred, settings) -> dict:
    return {"kind": kind, "label": label, "tok_s": pred.decode.tok_s, "fits": pred.memory.fits,
            "ttft_s": pred.ttft_s, "memory_bytes": pred.memory.total_bytes, "settings": settings}


def offload_way(model, hw, pred, q):
    if q.offload != "none" or hw.kind != "gpu":
        return None
    p = _predict(model, hw, q, offload="auto")
    off = (p.extra or {}).get("offload") if p else None
    if not off:
        return None
    n = off["n_layers_with_output"]
    on_cpu = n - off["gpu_layers"]
    host = next((d for d in p.extra["devices"]["per_device"] if d["kind"] == "host"), None)
    label = f"offload {on_cpu} of {n} layers to the CPU ({off['cpu']})"
    if host and not host["fits"]:
        label += f": needs {host['total_bytes'] / 1e9:.0f} GB of system RAM, the assumed host has " \
                 f"{host['capacity_bytes'] / 1e9:.0f} GB"
    way = _way("offload", label, p, {"offload": "auto"})
    way["fits"] = all(d["fits"] for d in p.extra["devices"]["per_device"])
    way["cpu_layers"] = on_cpu
    return way


def gpus_way(model, hw, pred, q):
    if hw.kind not in ("gpu", "accelerator"):
        return None
    need = pred.memory.total_bytes / max(pred.memory.capacity_bytes, 1) * max(q.gpus, 1)
    tries = [n for n in GPU_COUNTS if n >= max(math.ceil(need), q.gpus + 1)][:2]
    for n in tries:
        p = _predict(model, hw, q, gpus=n)
        if p and p.memory.fits:
            return _way("gpus", f"{n} × {hw.name}", p, {"gpus": str(n)})
    return None


def quant_way(model, hw, pred, q):
    from ..quant.schemes import canonical

    current = pred.memory.weights_bytes
    smallest = None
    for name in SMALLER_QUANTS:
        if q.quant and canonical(q.quant) == name:
            continue
        p = _predict(model, hw, q, quant=name)
        if p and p.memory.weights_bytes < current:
            if p.memory.fits:
                return _way("quant", f"{name} weights", p, {"quant": name})
            smallest = (name, p)
    if smallest:                                 # none fits: say how far even the smallest format is
        name, p = smallest
        return _way("quant", f"{name} weights (the smallest listed): still {p.memory.total_bytes / 1e9:.0f} GB",
                    p, {"quant": name})
    return None


def context_way(model, hw, pred, q):
    m = pred.memory
    fixed = q.prompt + q.gen
    if m.max_context <= fixed or q.context == 0:
        return None
    ctx = m.max_context - fixed
    p = _predict(model, hw, q, context=ctx)
    return _way("context", f"context {ctx:,} tokens (the largest that fits)", p, {"context": str(ctx)}) if p else None


def batch_way(model, hw, pred, q):
    if q.batch <= 1 or pred.memory.max_batch < 1:
        return None
    p = _predict(model, hw, q, batch=pred.memory.max_batch)
    return _way("batch", f"batch {pred.memory.max_batch}", p, {"batch": str(pred.memory.max_batch)}) if p else None


def ways_to_run(model, hw, pred, q) -> list[dict]:
    """Every way found, those that fit first (fastest first), then those that still do not."""
    ways = [w for f in (offload_way, gpus_way, quant_way, context_way, batch_way)
            if (w := f(model, hw, pred, q)) is not None]
    return sorted(ways, key=lambda w: (not w["fits"], -(w["tok_s"] or 0)))
