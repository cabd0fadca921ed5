"""The ways a setup that does not fit would run, for the calculator's "does not fit" headline.

The ways themselves come from ``tokspeed.advise.alternatives.ways_to_run`` (offload, N GPUs, a smaller format, a
shorter context, a smaller batch; each predicted); here each becomes what the page needs: a label, its
figure and the form settings that select it.
"""

from __future__ import annotations

from ..advise.alternatives import ways_to_run as ways
from ..workload import FLASH_ATTN, engine_build


def engine_options(q) -> dict:
    """The engine keywords of a query: the engine, its build (``engine_version``) and llama.cpp's -fa."""
    return {"engine": q.engine, **engine_build(q.engine_version, FLASH_ATTN[q.flash_attn])}


def predict_options(q) -> dict:
    """The ``predict`` keywords of a calculator query."""
    kw = dict(quant=q.quant or None, kv_dtype=q.kv_dtype, **engine_options(q), prompt=q.prompt, gen=q.gen,
              context=q.context, batch=q.batch)
    if q.gpus > 1:
        kw["gpus"] = q.gpus
    if q.parallel:
        kw["parallel"] = q.parallel
    if q.offload != "none":
        kw["offload"] = q.offload
    return kw


def ways_to_run(model, hw, q) -> list[dict]:
    out = []
    for w in ways(model, hw, **predict_options(q)):
        settings = {k: str(v) for k, v in w["options"].items()}
        out.append({"kind": w["kind"], "label": w["description"], "tok_s": w.get("decode_tok_s"), "fits": w["fits"],
                    "ttft_s": w.get("ttft_s"), "memory_bytes": w.get("total_bytes"), "settings": settings})
    return out
