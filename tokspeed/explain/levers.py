"""The seeds' four levers as "what if" rows: fewer parameters, another quant, MHA vs GQA, longer context.

Each lever changes one input, re-runs ``predict`` for the same step, and reports the new speed and the
speed-up (new tok/s ÷ baseline tok/s; below 1 is a slow-down).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..engines.compat import supported_formats
from ..predict import predict
from ..quant.format_table import four_bit_formats
from ..quant.schemes import NAMES
from ..workload import engine_build

SEEDS_LONG_CONTEXT = 131072   # the seeds' 128K row, where KV ≈ weights for Llama 3 8B FP16


@dataclass
class Lever:
    lever: str        # parameters | quant | attention | context
    what_if: str      # the change, in words
    tok_s: float
    ms_per_token: float
    bytes_per_token: float
    speedup: float
    fits: bool

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _gqa_heads(n_heads: int) -> int:
    """A GQA group count for an MHA model: the largest divisor of n_heads not above n_heads / 4
    (Llama 3 8B: 32 heads share 8 KV heads)."""
    for k in range(max(n_heads // 4, 1), 0, -1):
        if n_heads % k == 0:
            return k
    return 1




def _four_bit_format(pred) -> str | None:
    """The 4-bit format this prediction's engine runs on its device (the capability table), if any."""
    runs = set(supported_formats(pred.engine, pred.hw))
    return next((f for f in four_bit_formats() if f in runs), None)


def lever_variants(pred, mode: str, model=None) -> list[tuple[str, str, object, dict]]:
    """(lever, description, model, predict overrides) for each lever that applies to this model.
    ``model``: what the prediction was made from (a file keeps its exact bytes where the lever allows)."""
    spec = pred.spec
    same = model if model is not None else spec
    out = []
    half = max(spec.n_layers // 2, 1)
    out.append(("parameters", f"half the layers ({spec.n_layers} → {half}, ≈ half the parameters)",
                dataclasses.replace(spec, id=f"{spec.id}-half", n_layers=half,
                                    n_sliding_layers=spec.n_sliding_layers * half // spec.n_layers,
                                    n_linear_layers=spec.n_linear_layers * half // spec.n_layers,
                                    n_dense_layers=min(spec.n_dense_layers, half),
                                    kv_shared_layers=spec.kv_shared_layers * half // spec.n_layers,
                                    sparse_ffn_layers=min(spec.sparse_ffn_layers, half)), {}))
    four = _four_bit_format(pred)
    if four and pred.quant.upper() != four:
        out.append(("quant", f"{pred.quant} → {four}", spec, {"quant": four}))
    elif pred.quant.upper() != "F16":
        out.append(("quant", f"{pred.quant} → F16", spec, {"quant": "F16"}))
    if not spec.is_mla:
        if spec.n_kv_heads < spec.n_heads:
            out.append(("attention", f"MHA instead of GQA ({spec.n_kv_heads} → {spec.n_heads} KV heads)",
                        dataclasses.replace(spec, id=f"{spec.id}-mha", n_kv_heads=spec.n_heads), {}))
        else:
            g = _gqa_heads(spec.n_heads)
            out.append(("attention", f"GQA instead of MHA ({spec.n_heads} → {g} KV heads)",
                        dataclasses.replace(spec, id=f"{spec.id}-gqa", n_kv_heads=g), {}))
    ctx = pred.context
    longer = SEEDS_LONG_CONTEXT if ctx < SEEDS_LONG_CONTEXT else 2 * ctx
    out.append(("context", f"context {ctx:,} → {longer:,} tokens", same, {"context": longer}))
    return out


def levers(pred, mode: str = "decode", model=None) -> list[Lever]:

    quant = pred.quant if pred.quant.upper() in NAMES or pred.quant.upper().startswith("EXL2") else None
    base = dict(quant=quant, kv_dtype=pred.kv_dtype, engine=pred.engine, prompt=pred.prompt,
                gen=pred.gen, context=pred.context, batch=pred.batch,
                **engine_build(pred.engine_version, pred.flash_attention))    # the same era and attention
    base_rate = _rate(pred, mode)
    out = []
    for lever, text, variant, over in lever_variants(pred, mode, model):
        p = predict(variant, pred.hw, **{**base, **over})
        rate = _rate(p, mode)
        out.append(Lever(lever, text, rate, 1e3 / rate if rate else 0.0, p.decode.bytes_per_token,
                         rate / base_rate if base_rate else 0.0, p.memory.fits))
    return out


def _rate(pred, mode: str) -> float:
    return pred.decode.tok_s if mode == "decode" else pred.prefill.tok_s
