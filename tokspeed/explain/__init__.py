"""Explain where the time of one token goes: stage by stage, hardware unit by hardware unit.

``explain(model, hardware, ...)`` returns an ``Explanation``: the prediction it explains, the journey of
one token (``journey.Journey``, stages that sum to the predicted time) and the four levers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..engines.bands import prediction_basis
from ..engines.compat import runtime_of
from ..predict import predict
from ..workload import DEFAULT_ENGINE
from .journey import build_journey
from .levers import levers as make_levers
from .measured import attach, load_measured


@dataclass
class Explanation:
    prediction: object
    journey: object
    levers: list = field(default_factory=list)
    measured: object = None

    def to_dict(self) -> dict:
        p = self.prediction
        d = {"model": p.model, "hardware": p.hardware, "quant": p.quant, "kv_dtype": p.kv_dtype,
             "engine": p.engine, "batch": p.batch, "bandwidth_gbps": p.hw.bandwidth_gbps,
             "matmul_tflops": p.hw.matmul_flops / 1e12, **self.journey.to_dict(),
             "bound_tok_s": p.decode.bound_tok_s if self.journey.mode == "decode" else p.prefill.bound_tok_s,
             "levers": [lv.to_dict() for lv in self.levers], "prediction": p.to_dict(),
             "band": prediction_basis(p)}
        if self.measured is not None:
            d["measured"] = self.measured.to_dict()
        return d


def explain(model, hardware, prefill: int = 0, context: int = 0, batch: int = 1, quant: str | None = None,
            kv_dtype: str = "f16", engine: str = DEFAULT_ENGINE, measured=None, with_levers: bool = True,
            engine_version: str | None = None, flash_attention: bool | None = None) -> Explanation:
    """Explain one decode step at ``context`` cached tokens, or (``prefill`` > 0) a prefill of that many
    tokens on top of ``context``. ``measured``: a run-file path whose stage times sit beside ours;
    ``engine_version`` / ``flash_attention``: the engine era and llama.cpp's ``-fa`` (``predict``'s), which the
    levers keep; unset, a llama.cpp engine takes the ``-fa`` of the measured llama.cpp run beside it."""
    mode = "prefill" if prefill else "decode"
    m = None
    if measured:
        m = load_measured(measured, context=context, batch=batch)
        if flash_attention is None and isinstance(engine, str) and runtime_of(engine) == "llama.cpp":
            flash_attention = m.flash_attention       # the attention the measured run had
    pred = predict(model, hardware, quant=quant, kv_dtype=kv_dtype, engine=engine, prompt=prefill, gen=1,
                   context=context, batch=batch, engine_version=engine_version, flash_attention=flash_attention)
    j = build_journey(pred, mode)
    if m is not None:
        attach(j, m)
    return Explanation(pred, j, make_levers(pred, mode, model) if with_levers else [], m)
