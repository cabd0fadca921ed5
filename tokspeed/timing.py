"""Roofline timing of the operator ledger: one operator, one forward pass, and the timer interface.

Per operator, a roofline::

    time(op) = max(flops / (peak · eta_compute), bytes / (bandwidth · eta_mem · eta_format))

summed over the pass, plus ``kernels · launch_s + fixed_s`` per step (``tokspeed.engines``). The
``ideal`` engine (eta = 1, no overhead) gives the bound — for decode the seeds' formula
``bandwidth / (weight bytes + KV bytes)``.

A *timer* is any callable ``timer(ops, engine, batch, n_tokens) -> PassTime``: ``RooflineTimer`` times a
pass on one device; ``tokspeed.scale.timing.LayoutTimer`` times it over a multi-device layout. Both
``tokspeed.predict`` and ``tokspeed.scale`` import from here; this module imports neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from .engines.profile import EngineProfile
from .ledger import Op


@dataclass
class PassTime:
    seconds: float
    compute_s: float          # sum of compute-bound op times
    memory_s: float           # sum of memory-bound op times
    overhead_s: float
    bytes: float
    weight_bytes: float
    kv_bytes: float
    flops: float
    op_times: list = field(default_factory=list)   # (Op, seconds, "memory"|"compute")
    link_s: float = 0.0                             # time on device links (multi-device layouts)
    stages: list = field(default_factory=list)      # per-stage dicts of a layout: name, kind, seconds, link_s

    @property
    def bound(self) -> str:
        if self.link_s > max(self.compute_s, self.memory_s, self.overhead_s):
            return "link"
        if self.overhead_s > max(self.compute_s, self.memory_s):
            return "overhead"
        return "compute" if self.compute_s > self.memory_s else "memory"


def op_time(op: Op, hw, engine: EngineProfile, quant: str, tokens: int = 0) -> tuple[float, str]:
    """Roofline time of one operator and what bounds it.

    Compute side: peak (x2 on GeForce for FP16-accumulating engines, ``tensor_peak_scale``) x
    eta_compute, times eta_attn for the attention core over the KV cache, or eta_compute_format x
    matmul_eff(tokens) for weight matmuls (``tokens`` in the pass; 0 = unknown). Memory side: weights at
    eta_mem x eta_format, activations at eta_mem, KV cache at eta_mem x eta_kv, unfused attention's
    score matrix at attn_bytes_per_flop x the attention FLOPs, the eta_mem-scaled
    bandwidth softly capped at the engine's bw_cap_gbps. ``tokspeed.calibration.fast`` mirrors this
    arithmetic in numpy for the fit; a test holds the two equal."""
    if op.unit == "cpu":
        return 0.0, "memory"    # sampling cost is in the engine's fixed_s (ideal: none)
    peak = hw.matmul_flops if op.unit == "tensor" else hw.vector_flops
    attn = bool(op.kv_read_bytes or op.kv_write_bytes)
    eta_c = engine.compute_eff_for(hw) * (engine.tensor_peak_scale(hw) if op.unit == "tensor" else 1.0)
    if attn:
        eta_c *= engine.eta_attn
    elif op.unit == "tensor":
        eta_c *= engine.compute_format_eff(quant) * engine.matmul_eff(tokens)
    eta_c = min(eta_c, 1.0)      # the listed peak stays the bound (expected never beats ideal)
    t_c = op.flops / (peak * eta_c) if peak and op.flops else 0.0
    bw = engine.stream_bytes_s(hw)
    t_m = (op.weight_bytes / (bw * (engine.format_eff(quant) if op.unit == "tensor" else 1.0))
           + op.act_bytes / bw
           + (op.kv_read_bytes + op.kv_write_bytes) / (bw * engine.eta_kv)
           + (op.flops * engine.attn_bytes_per_flop / bw if attn else 0.0))
    return (t_c, "compute") if t_c > t_m else (t_m, "memory")


def pass_time(ops: list[Op], hw, engine: EngineProfile, quant: str, tokens: int = 0) -> PassTime:
    """Time of one forward pass; ``tokens`` (batch x new tokens) selects the matmul efficiency."""
    comp = mem = 0.0
    times = []
    for op in ops:
        t, b = op_time(op, hw, engine, quant, tokens)
        times.append((op, t, b))
        if b == "compute":
            comp += t
        else:
            mem += t
    kernels = sum(op.kernels * op.count for op in ops)
    over = kernels * engine.launch_s + engine.fixed_s
    return PassTime(comp + mem + over, comp, mem, over, sum(o.bytes for o in ops),
                    sum(o.weight_bytes for o in ops), sum(o.kv_read_bytes + o.kv_write_bytes for o in ops),
                    sum(o.flops for o in ops), times)


class Timer(Protocol):
    def __call__(self, ops: list[Op], engine: EngineProfile, batch: int, n_tokens: int) -> PassTime: ...


@dataclass(frozen=True)
class RooflineTimer:
    """One device: ``pass_time`` of the ops on ``hw`` with weights in format ``quant``."""
    hw: object
    quant: str

    def __call__(self, ops: list[Op], engine: EngineProfile, batch: int, n_tokens: int) -> PassTime:
        return pass_time(ops, self.hw, engine, self.quant, batch * n_tokens)
