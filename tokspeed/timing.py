"""Roofline timing of the operator ledger: one operator, one forward pass, and the timer interface.

Per operator, a roofline::

    time(op) = max(flops / (peak · eta_compute), bytes / (bandwidth · eta_mem))

with the bandwidth softly bounded by what the engine's kernels can issue, lowered for a weight format by its
dequantising work (``EngineProfile.stream_bytes_s``), summed over the pass, plus ``kernels · launch_s +
fixed_s`` per step (``tokspeed.engines``). The
``ideal`` engine (eta = 1, no overhead) gives the bound — for decode the seeds' formula
``bandwidth / (weight bytes + KV bytes)``.

A *timer* is any callable ``timer(ops, engine, batch, n_tokens) -> PassTime``: ``RooflineTimer`` times a
pass on one device; ``tokspeed.scale.timing.LayoutTimer`` times it over a multi-device layout. Both
``tokspeed.predict`` and ``tokspeed.scale`` import from here; this module imports neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from .engines.issue import fp32_lanes_per_core
from .engines.mmq import DP4A_OPS_PER_FP32_FLOP, has_tensor_cores, mmq_unit
from .engines.profile import INT8_OPS_PER_FP16_ENERGY, MATVEC_MAX_TOKENS, EngineProfile, format_group, soft_min
from .ledger import Op, Role, Scope


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


F32_NAMES = ("F32", "f32")


def op_peak(op: Op, hw, quant: str) -> float:
    """Peak FLOP/s an operator's math runs at: the tensor (FP16) figure for matmuls and attention, the vector
    FP32 figure for the rest -- and for everything of a model with F32 weights, whose matmuls run as FP32
    GEMMs (cuBLAS SGEMM, torch's default without TF32, a CPU's FP32 SIMD) and whose activations, hence
    attention, are F32 too, not on FP16 tensor units."""
    if op.unit != "tensor" or quant in F32_NAMES:        # on the hot path: canonical names, no string work
        return hw.vector_flops
    return hw.matmul_flops


def int8_bound(engine: EngineProfile, hw, quant: str, tokens: int, gemm_rate: float, pairs_per_expert: float = 0.0
               ) -> float:
    """A CPU engine's matmul rate over ``tokens`` tokens. Per weight block, loading, unpacking and scaling are
    done once per pass and shared by the tokens that use the block -- all of them, or for a routed expert the
    ``pairs_per_expert`` tokens routed to it -- while the multiply-adds grow with them: time = a + b x T, so
    rate = T / (a + b T), through one token's int8 rate (``EngineProfile.int8_matvec_flops``, T = 1) and
    ``gemm_rate``, the prompt kernels' rate (T large). benchmarks/bench_cpu_ramp.py measures the curve.
    ``gemm_rate`` unchanged where the engine has no such kernels (or they are no slower)."""
    mv = engine.int8_matvec_flops(hw, quant)
    if not mv or mv >= gemm_rate:
        return gemm_rate
    share = min(tokens, pairs_per_expert) if pairs_per_expert else tokens
    return share / (share / gemm_rate + 1 / mv - 1 / gemm_rate)


def int8_rates(engine: EngineProfile, hw, quant: str, tokens: int = 1) -> tuple[float, float, float]:
    """(one token's int8 rate, the GEMM rate, the rate over ``tokens`` tokens) of a dense weight matmul of a CPU
    engine with int8 kernels, as ``op_time`` takes them (what ``explain`` prints); zeros where it has none."""
    mv = engine.int8_matvec_flops(hw, quant)
    if not mv:
        return 0.0, 0.0, 0.0
    gemm = weight_matmul_rate(hw, engine, quant, 0)        # the prompt kernels' rate (tokens unknown: no ramp)
    return mv, gemm, int8_bound(engine, hw, quant, tokens, gemm)


def weight_matmul_peak(hw, engine: EngineProfile, quant: str, tokens: int) -> tuple[float, float]:
    """(listed peak, usable multiple of it) for a matmul over ``quant`` weights in a pass of ``tokens`` tokens: the
    vector FP32 figure for F32 models; DP4A's, ``DP4A_OPS_PER_FP32_FLOP`` x the FP32 figure, where the engine's
    MMQ kernels run on int8 dot products there (``EngineProfile.mmq_unit``: Pascal, Volta below 64 tokens); else
    the tensor figure (``op_peak``), x2 on GeForce for FP16-accumulating engines (``tensor_peak_scale``)."""
    if quant in F32_NAMES:
        return hw.vector_flops, 1.0
    if engine.mmq_unit(hw, quant, tokens) == "dp4a":
        return DP4A_OPS_PER_FP32_FLOP * hw.vector_flops, 1.0
    if engine.is_ideal and quant_peak_dp4a(hw, quant, tokens):
        # the bound takes the fastest units the part has for the format: DP4A where it beats the tensor figure
        return max(hw.matmul_flops, DP4A_OPS_PER_FP32_FLOP * hw.vector_flops), 1.0
    return hw.matmul_flops, engine.tensor_peak_scale(hw)


def quant_peak_dp4a(hw, quant: str, tokens: int) -> bool:
    """Whether ``hw`` offers DP4A for a tiled pass over ``quant`` weights (quantized weights on a part whose MMQ runs
    there: ``tokspeed.engines.mmq``), the units the ideal bound also considers."""
    return format_group(quant) != "float" and tokens > MATVEC_MAX_TOKENS and mmq_unit(hw, tokens) == "dp4a"


def weight_matmul_rate(hw, engine: EngineProfile, quant: str, tokens: int) -> float:
    """FLOP/s of a matmul over ``quant`` weights in a pass of ``tokens`` tokens (0 = unknown), before any kernel
    bound: the peak its math runs at (``weight_matmul_peak``: tensor, DP4A, or vector for F32 models) x its usable
    multiple x eta_compute x eta_compute_format x matmul_eff(tokens), at most the listed peak."""
    peak, scale = weight_matmul_peak(hw, engine, quant, tokens)
    eta = engine.compute_eff_for(hw) * scale * engine.compute_format_eff(quant) * engine.matmul_eff(tokens)
    return peak * min(eta, 1.0)


def tiled_bounds(hw, engine: EngineProfile, quant: str, tokens: int, attn: bool = False) -> tuple[float, float]:
    """The two bounds on a tensor op's FLOP/s in a tiled pass (``tokens`` > MATVEC_MAX_TOKENS: a prompt chunk or a
    decode batch), whatever the tensor peak; 0 = none: the MMQ bound on a matmul over quantized weights
    (``EngineProfile.quant_matmul_flops`` x matmul_eff(tokens)), and the board-power bound
    (``EngineProfile.power_flops``: doubled for the matmuls the engine runs on INT8 tensor cores, whether or not
    the device's core count is known; attention runs in FP16)."""
    qmax = 0.0 if attn else engine.quant_matmul_flops(hw, quant, tokens) * engine.matmul_eff(tokens)
    return qmax, engine.power_flops(hw, int8=not attn and engine.mmq_unit(hw, quant, tokens) == "mma")


def prompt_matmul_how(hw, engine: EngineProfile, quant: str, tokens: int) -> str:
    """How a dense weight matmul's FLOP/s comes about in a pass of ``tokens`` tokens, in one line with its numbers
    (``explain --prefill`` prints it): the rate ``op_time`` gives a matmul of no bytes, then its parts -- the peak its
    math runs at (``weight_matmul_rate``; a CPU engine's int8 kernels, ``int8_bound``) and ``tiled_bounds``."""
    rate = weight_matmul_rate(hw, engine, quant, tokens)
    if not rate:
        return ""
    peak, scale = weight_matmul_peak(hw, engine, quant, tokens)
    tf = lambda x: f"{x / 1e12:,.{0 if x >= 1e14 else 1 if x >= 1e13 else 2}f} TFLOP/s"   # noqa: E731  3 digits
    mmq = engine.mmq_unit(hw, quant, tokens)
    if quant in F32_NAMES or hw.kind == "cpu":
        unit, listed = "FP32 vector", tf(peak)
    elif peak == DP4A_OPS_PER_FP32_FLOP * hw.vector_flops and quant_peak_dp4a(hw, quant, tokens):
        unit, listed = "DP4A int8", f"{DP4A_OPS_PER_FP32_FLOP:g} x FP32 {tf(hw.vector_flops)}"
    else:     # the FP16 figure: tensor cores, or half2 on the CUDA cores of a part without them (Tesla P100)
        unit = ("tensor" if has_tensor_cores(hw) else "FP16") if peak == hw.fp16_tflops * 1e12 else "FP32 vector"
        listed = f"{tf(peak)}" + (f" x {scale:g} (FP16 accumulate)" if scale != 1.0 else "")
    parts = [f"{unit} {tf(rate)} (listed {listed} x efficiency {rate / (peak * scale):.2f})"]
    if engine.int8_matvec and tokens:
        int8 = int8_bound(engine, hw, quant, tokens, rate)
        if int8 != rate:
            parts.append(f"int8 kernels {tf(int8)} ({tokens} tokens sharing each weight block's work)")
    qmax, pmax = tiled_bounds(hw, engine, quant, tokens) if tokens > MATVEC_MAX_TOKENS else (0.0, 0.0)
    if qmax:
        per = f"{engine.quant_flops_per_core_cycle:.0f} FLOPs per core cycle"
        if mmq == "dp4a":       # EngineProfile.quant_matmul_flops: the two issue from the same lanes, their times add
            per += (f" of tile work and {DP4A_OPS_PER_FP32_FLOP * 2 * fp32_lanes_per_core(hw):,.0f} of DP4A,"
                    " issued from the same lanes")
        parts.append(f"MMQ bound {tf(qmax)} ({per})")
    if pmax:
        on_int8 = f" x {INT8_OPS_PER_FP16_ENERGY:g} on INT8 tensor cores" if mmq == "mma" else ""
        parts.append(f"board power {hw.tdp_w:g} W / {engine.pj_per_flop:.3g} pJ per FLOP{on_int8} = {tf(pmax)}")
    t, _ = op_time(Op("matmul", Role.MLP, Scope.DENSE, "tensor", 1, flops=1e12), hw, engine, quant, tokens)
    out = f"{quant} matmuls over {tokens:,} tokens run at {tf(1e12 / t)}: " + ", ".join(parts)
    return out + (" (soft minimum)" if qmax or pmax else "")


def kv_reads(op: Op, engine: EngineProfile) -> float:
    """How many times a pass reads each cached K/V head from memory: once, plus the share ``kv_reread`` of the
    re-reads by the other query heads of its group where the engine's attention is not fused
    (``EngineProfile.kv_reread``)."""
    return 1.0 + engine.kv_reread * (op.query_heads_per_kv - 1.0)


def op_time(op: Op, hw, engine: EngineProfile, quant: str, tokens: int = 0) -> tuple[float, str]:
    """Roofline time of one operator and what bounds it.

    Compute side: peak (x2 on GeForce for FP16-accumulating engines, ``tensor_peak_scale``) x
    eta_compute, times eta_attn for the attention core over the KV cache, or eta_compute_format x
    matmul_eff(tokens) for weight matmuls (``tokens`` in the pass; 0 = unknown), and for tiled matmuls over
    quantized weights at most ``EngineProfile.quant_matmul_flops`` x matmul_eff (soft minimum); on a CPU engine
    with int8 kernels, the rate its tokens reach sharing each weight block's work (``int8_bound``); for every
    tensor op of a tiled pass, also the board-power bound (``tiled_bounds``: tdp_w / pj_per_flop). Memory
    side: weights (read ``EngineProfile.weight_reads`` times: routed experts under per-pair kernels) at the
    rate the engine streams their format (``EngineProfile.stream_bytes_s(hw, quant)``: peak x eta_mem of the
    memory technology, softly bounded by the kernel bound cores x clock x bytes_per_core_cycle x eta_format
    and a cap where set), activations at that rate without a format, KV cache at it x eta_kv (where the
    engine's attention is unfused, re-read by each query head, the share ``kv_reread`` from memory:
    ``kv_reads``), unfused attention's score matrix at attn_bytes_per_flop x the attention FLOPs.
    ``tokspeed.calibration.fast`` mirrors this arithmetic in numpy for the fit; a test holds the two equal."""
    if op.unit == "cpu":
        return 0.0, "memory"    # sampling cost is in the engine's fixed_s (ideal: none)
    peak = op_peak(op, hw, quant)
    attn = bool(op.kv_read_bytes or op.kv_write_bytes)
    if op.unit == "tensor" and not attn:
        rate = weight_matmul_rate(hw, engine, quant, tokens)
    else:                        # the listed peak stays the bound (expected never beats ideal)
        # the FP16-accumulate doubling is of the tensor figure: an F32 model's attention runs on the FP32 units
        eta_c = engine.compute_eff_for(hw) * (engine.tensor_peak_scale(hw)
                                              if op.unit == "tensor" and quant not in F32_NAMES else 1.0)
        rate = peak * min(eta_c * (engine.eta_attn if attn else 1.0), 1.0)
    if engine.int8_matvec and tokens and op.unit == "tensor" and not attn:   # a CPU's int8 kernels (llama.cpp-cpu)
        rate = int8_bound(engine, hw, quant, tokens, rate, op.pairs_per_expert)
    if op.unit == "tensor" and tokens > MATVEC_MAX_TOKENS and rate:
        rate = soft_min(rate, *tiled_bounds(hw, engine, quant, tokens, attn))
    t_c = op.flops / rate if peak and op.flops else 0.0
    bw = engine.stream_bytes_s(hw)
    wbw = engine.stream_bytes_s(hw, quant) if op.unit == "tensor" else bw
    t_m = (op.weight_bytes * engine.weight_reads(op, tokens) / wbw
           + op.act_bytes / bw
           + (op.kv_read_bytes * kv_reads(op, engine) + op.kv_write_bytes) / (bw * engine.eta_kv)
           + (op.flops * engine.attn_bytes_per_flop / bw if attn else 0.0))
    return (t_c, "compute") if t_c > t_m else (t_m, "memory")


def pass_time(ops: list[Op], hw, engine: EngineProfile, quant: str, tokens: int = 0, memo: dict | None = None
              ) -> PassTime:
    """Time of one forward pass; ``tokens`` (batch x new tokens) selects the matmul efficiency.
    ``memo`` (a dict the caller keeps) remembers the time of the ledger's shared,
    depth-independent operator groups (``ledger.PassOps.segments``) between passes."""
    segments = getattr(ops, "segments", None) if memo is not None else None
    if not segments:
        return _pass_from((_segment(ops, hw, engine, quant, tokens),), engine)
    parts = []
    for seg in segments:
        if isinstance(seg, tuple):            # shared by every pass of this shape: time it once
            key = (id(seg), id(engine), id(hw), quant, tokens)
            hit = memo.get(key)
            if hit is None or hit[0] is not seg or hit[1] is not engine or hit[2] is not hw:
                hit = memo[key] = (seg, engine, hw, _segment(seg, hw, engine, quant, tokens))
            parts.append(hit[3])
        else:
            parts.append(_segment(seg, hw, engine, quant, tokens))
    return _pass_from(parts, engine)


def ledger_totals(ops, memo: dict | None = None) -> tuple[float, float, float, float]:
    """(bytes, weight bytes, KV bytes, FLOPs) of a pass's operators (shared segments summed once)."""
    segments = getattr(ops, "segments", None) if memo is not None else None
    out = [0.0, 0.0, 0.0, 0.0]
    for seg in segments or (ops,):
        hit = memo.get(("totals", id(seg))) if segments and isinstance(seg, tuple) else None
        if hit is None or hit[0] is not seg:
            t = (sum(o.bytes for o in seg), sum(o.weight_bytes for o in seg),
                 sum(o.kv_read_bytes + o.kv_write_bytes for o in seg), sum(o.flops for o in seg))
            hit = (seg, t)
            if segments and isinstance(seg, tuple):
                memo[("totals", id(seg))] = hit
        for i in range(4):
            out[i] += hit[1][i]
    return tuple(out)


def _segment(ops, hw, engine, quant, tokens) -> tuple:
    """(compute s, memory s, kernels, bytes, weight bytes, KV bytes, FLOPs, op times) of a run of ops."""
    comp = mem = 0.0
    kernels = 0
    nbytes = wbytes = kv = flops = 0.0
    times = []
    for op in ops:
        t, b = op_time(op, hw, engine, quant, tokens)
        times.append((op, t, b))
        if b == "compute":
            comp += t
        else:
            mem += t
        kernels += op.kernels * op.count
        op_kv = op.kv_read_bytes + op.kv_write_bytes
        nbytes += op.weight_bytes + op.act_bytes + op_kv
        wbytes += op.weight_bytes
        kv += op_kv
        flops += op.flops
    return comp, mem, kernels, nbytes, wbytes, kv, flops, times


def _pass_from(parts, engine) -> PassTime:
    comp = mem = nbytes = wbytes = kv = flops = 0.0
    kernels = 0
    times = []
    for c, m, k, b, w, v, f, t in parts:
        comp += c
        mem += m
        kernels += k
        nbytes += b
        wbytes += w
        kv += v
        flops += f
        times += t
    over = kernels * engine.launch_s + engine.fixed_s
    return PassTime(comp + mem + over, comp, mem, over, nbytes, wbytes, kv, flops, times)


class Timer(Protocol):
    def __call__(self, ops: list[Op], engine: EngineProfile, batch: int, n_tokens: int) -> PassTime: ...


@dataclass
class RooflineTimer:
    """One device: ``pass_time`` of the ops on ``hw`` with weights in format ``quant``."""
    hw: object
    quant: str
    memo: dict = field(default_factory=dict, repr=False)

    def __call__(self, ops: list[Op], engine: EngineProfile, batch: int, n_tokens: int) -> PassTime:
        if len(self.memo) > 4096:
            self.memo.clear()
        return pass_time(ops, self.hw, engine, self.quant, batch * n_tokens, self.memo)


def depth_sum(step, first: int, n: int, kinks=()) -> float:
    """Sum of ``step(depth)`` over the integer depths ``first .. first + n - 1``, in closed form.

    A decode step's time is piecewise linear in its KV depth: every operator's FLOPs and bytes are
    affine in depth (only the attention core depends on it), its roofline time is the max of two affine
    functions (convex), the pass sums them, a layout takes maxima of such sums. The pieces meet at a
    sliding window's edge (``kinks``: first depth of a new piece) and where an operator changes bound.
    Over a range where ``step`` is affine the sum is ``n`` x its value at the mean depth; a convex
    function is affine on [a, b] exactly when its midpoint value equals the chord's, so ranges are
    halved until it does: 3 evaluations when nothing changes bound, O(log n) per change otherwise."""
    if n == 1:
        return step(first)
    last = first + n - 1
    total, a = 0.0, first
    for k in sorted(k for k in kinks if first < k <= last) + [last + 1]:
        total += _piece_sum(step, a, k - 1, None, None)
        a = k
    return total


def _piece_sum(step, a: int, b: int, fa, fb) -> float:
    if fa is None:
        fa = step(a)
    if b == a:
        return fa
    if fb is None:
        fb = step(b)
    if b == a + 1:
        return fa + fb
    chord = (fa + fb) / 2
    fm = step((a + b) / 2)
    if abs(fm - chord) <= 1e-12 * abs(chord):
        return (b - a + 1) * chord
    m = (a + b) // 2
    return _piece_sum(step, a, m, fa, None) + _piece_sum(step, m + 1, b, None, fb)
