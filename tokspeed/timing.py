"""Roofline timing of the operator ledger: one operator, one forward pass, and the timer interface.

Per operator, a roofline::

    time(op) = max(flops / (peak · eta_compute), bytes / (bandwidth · eta_mem))

the rates coming from one place, ``tokspeed.engines.rates`` (FLOP/s of a unit: ``Rate``) and
``tokspeed.engines.rates_stream`` (bytes/s: the bandwidth softly bounded by what the engine's kernels can issue,
lowered for a weight format by its dequantising work), summed over the pass, plus ``kernels · launch_s +
fixed_s`` per step (``tokspeed.engines``). The
``ideal`` engine (eta = 1, no overhead) gives the bound — for decode the seeds' formula
``bandwidth / (weight bytes + KV bytes)``.

A *timer* is any callable ``timer(ops, engine, batch, n_tokens) -> PassTime``: ``RooflineTimer`` times a
pass on one device; ``tokspeed.scale.timing.LayoutTimer`` times it over a multi-device layout. Both
``tokspeed.predict`` and ``tokspeed.scale`` import from here; this module imports neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Protocol

from .derived import derived
from .engines.fa_tiles import extra_kv_bytes
from .engines.compat import mixer_graph
from .engines.graph_kernels import op_kernels
from .engines.host_ops import DEFAULT_HOST, cpu_stage, host_run, link_bytes_s
from .engines.linear_mixer import graph_state_bytes
from .engines.moe_dispatch import expert_loop_kernels
from .engines.profile import EngineProfile
from .hardware.catalog import get_hardware
from .engines.rates import op_rate
from .engines.rates_stream import stream_bytes_s, weight_reads
from .engines.weight_copy import dequant_bytes
from .quant.format_key import F32_NAMES, format_key
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


def kv_reads(op: Op, engine: EngineProfile) -> float:
    """How many times a pass reads each cached K/V head from memory: once, plus the share ``kv_reread`` of the
    re-reads by the other query heads of its group where the engine's attention is not fused
    (``EngineProfile.kv_reread``)."""
    return 1.0 + engine.kv_reread * (op.query_heads_per_kv - 1.0)


def op_time(op: Op, hw, engine: EngineProfile, quant, tokens: int = 0) -> tuple[float, str]:
    """Roofline time of one operator and what bounds it: ``max(flops / rate, bytes / stream)``.

    Compute side: the operator's ``Rate`` (``tokspeed.engines.rates.op_rate``: the unit's listed peak x its
    efficiency, capped by the bounds of a tiled pass). Memory side: weights (read ``weight_reads`` times: routed
    experts under per-pair kernels) at the rate the engine streams their format
    (``tokspeed.engines.rates_stream.stream_bytes_s``), activations at that rate without a format, KV cache at it x
    eta_kv (where the engine's attention is unfused, re-read by each query head, the share ``kv_reread`` from
    memory: ``kv_reads``; under ggml-vulkan's FA_SCALAR once per block of query rows: ``fa_tiles``), unfused
    attention's score matrix at attn_bytes_per_flop x the attention FLOPs. Where an
    engine first writes quantized weights out as F16 (``weight_copy.dequant_bytes``), that kernel's bytes /
    bandwidth add to the time: it runs before the GEMM, not beside it.
    ``tokspeed.calibration.fast`` takes the same rates for the fit; a test holds the two equal."""
    return PassRates(hw, engine, quant, tokens).time(op)


class PassRates:
    """The rates of one pass shape (device, engine, format, tokens), each worked out once: the Rate of each kind
    of operator (ledger unit, attention or not, tokens per routed expert) and the two streams."""

    __slots__ = ("hw", "engine", "quant", "tokens", "rates", "segments", "bw", "wbw", "fmt", "quantized")

    def __init__(self, hw, engine: EngineProfile, quant, tokens: int):
        self.hw, self.engine, self.quant, self.tokens = hw, engine, quant, tokens
        self.rates = {}
        self.segments = {}      # a shared ledger segment (ledger.Segment) -> its _segment in this pass shape
        self.bw = self.wbw = None
        self.fmt = format_key(quant) if quant else None        # parsed once for every operator of the pass
        self.quantized = self.fmt.quantized if quant else False

    def time(self, op: Op) -> tuple[float, str]:
        """``op_time`` of ``op`` in this pass."""
        if op.unit == "cpu":
            return 0.0, "memory"    # sampling cost is in the engine's fixed_s (ideal: none)
        t_c, t_m, t_f16 = self.parts(op)
        return (t_c + t_f16, "compute") if t_c > t_m else (t_m + t_f16, "memory")

    def parts(self, op: Op) -> tuple[float, float, float]:
        """(compute time, memory time, the F16 copy's time) of ``op`` in this pass: ``time`` takes the larger of
        the first two plus the third."""
        engine, tokens = self.engine, self.tokens
        attn = bool(op.kv_read_bytes or op.kv_write_bytes)
        key = (op.unit, attn, op.pairs_per_expert)
        rate = self.rates.get(key)
        if rate is None:
            rate = self.rates[key] = op_rate(op, self.hw, engine, self.quant, tokens)
        if self.bw is None:
            self.bw = stream_bytes_s(engine, self.hw)
            self.wbw = stream_bytes_s(engine, self.hw, self.quant)
        t_c = op.flops / rate.value if rate.peak and op.flops else 0.0
        bw = self.bw
        wbw = self.wbw if op.unit == "tensor" else bw
        if op.pairs_per_expert and op.unit == "tensor":     # routed experts' grouped GEMM: its own stream factor
            wbw *= engine.expert_factors(self.quant)[0]
        t_m = (op.weight_bytes * weight_reads(engine, op, tokens) / wbw
               + (op.act_bytes + graph_state_bytes(op, mixer_graph(engine.name), engine.build_month)) / bw
               + (op.kv_read_bytes * kv_reads(op, engine) + op.kv_write_bytes
                  + extra_kv_bytes(op, engine.name, self.hw, tokens)) / (bw * engine.eta_kv)
               + (op.flops * engine.attn_bytes_per_flop / bw if attn else 0.0))
        t_f16 = dequant_bytes(engine, op, self.fmt, tokens) / bw     # its own kernel, before the GEMM
        if op.state_rule:          # a linear mixer's ops on the host CPU, in builds whose backend lacks them
            t_f16 += host_time(op, engine.name, self.hw, tokens, engine.build_month)
        return t_c, t_m, t_f16


def host_time(op: Op, engine_name: str, hw, tokens: int, month: str = "") -> float:
    """Seconds the host trips of the linear-mixer scan ``op`` add to a pass of ``tokens`` on ``hw`` under the engine
    ``engine_name`` built in ``month`` ("" = today's build; engines/host_ops.py); 0 where the build runs its ops on
    the device. The bytes cross ``hw``'s host link, half of them down and half back up; what comes back up is first
    copied on the host into a buffer of its own (ggml-sycl's ``set_tensor``: malloc, memcpy, then the device copy), a
    read and a write at the host's stream; the ops run on the host CPU (``host_engine``) under llama.cpp's CPU
    backend (the scan as the ledger has it, without the state's gather and copy back, which stay on the device; a conv
    alone, its input and output streamed), one graph node and its threads' barrier each. Nothing here is fitted."""
    run = host_run(op, engine_name, month)
    if run is None:
        return 0.0
    view, cpu = host_engine(hw)
    stream = stream_bytes_s(cpu, view)
    t = run.link_bytes / link_bytes_s(hw) + run.link_bytes / stream + run.splits * cpu.launch_s
    if "ssm_scan" in run.ops:
        return t + PassRates(view, cpu, F32_NAMES[0], tokens).time(replace(op, state_bytes=0.0, state_rule=""))[0]
    return t + op.conv_io_bytes / stream


@lru_cache(maxsize=64)
def host_engine(hw):
    """(device view, engine) of the host CPU that runs the ops a backend lacks on ``hw``: a SoC's own CPU cluster, else
    the default desktop host (``host_ops.DEFAULT_HOST``, as an offload's CPU stage: scale/offload.py), under the
    offload CPU engine with its per-node barrier."""
    return cpu_stage(hw if getattr(hw, "kind", "") == "soc" else get_hardware(DEFAULT_HOST))


def pass_time(ops: list[Op], hw, engine: EngineProfile, quant: str, tokens: int = 0, shared: bool = False
              ) -> PassTime:
    """Time of one forward pass; ``tokens`` (batch x new tokens) selects the matmul efficiency.
    ``shared``: the ledger's shared, depth-independent operator groups (``ledger.Segment``) are timed once per pass
    shape and kept (``pass_rates``), as are the pass shape's rates."""
    segments = getattr(ops, "segments", None) if shared else None
    if not segments:
        return _pass_from((_segment(ops, PassRates(hw, engine, quant, tokens)),), engine)
    rates = pass_rates(engine, hw, quant, tokens)
    parts = []
    for seg in segments:
        if isinstance(seg, tuple):            # shared by every pass of this shape: time it once
            hit = rates.segments.get(seg)
            if hit is None:
                hit = rates.segments[seg] = _segment(seg, rates)
            parts.append(hit)
        else:
            parts.append(_segment(seg, rates))
    return _pass_from(parts, engine)


RATES_MAX = 4096       # pass shapes remembered per engine profile


def pass_rates(engine: EngineProfile, hw, quant, tokens: int) -> PassRates:
    """The PassRates of one pass shape, kept on the engine profile (frozen: ``tokspeed.derived``) by value of the
    device, format and tokens."""
    table = derived(engine).setdefault("pass_rates", {})
    key = (hw, quant, tokens)
    rates = table.get(key)
    if rates is None:
        if len(table) >= RATES_MAX:
            table.clear()
        rates = table[key] = PassRates(hw, engine, quant, tokens)
    return rates


def ledger_totals(ops, shared: bool = False) -> tuple[float, float, float, float]:
    """(bytes, weight bytes, KV bytes, FLOPs) of a pass's operators (shared segments summed once)."""
    segments = getattr(ops, "segments", None) if shared else None
    out = [0.0, 0.0, 0.0, 0.0]
    for seg in segments or (ops,):
        kept = derived(seg) if segments and isinstance(seg, tuple) else None      # a ledger.Segment
        t = kept.get("totals") if kept is not None else None
        if t is None:
            t = (sum(o.bytes for o in seg), sum(o.weight_bytes for o in seg),
                 sum(o.kv_read_bytes + o.kv_write_bytes for o in seg), sum(o.flops for o in seg))
            if kept is not None:
                kept["totals"] = t
        for i in range(4):
            out[i] += t[i]
    return tuple(out)


def _segment(ops, rates: PassRates) -> tuple:
    """(compute s, memory s, kernels, bytes, weight bytes, KV bytes, FLOPs, op times) of a run of ops."""
    comp = mem = 0.0
    kernels = 0
    nbytes = wbytes = kv = flops = 0.0
    times = []
    for op in ops:
        t, b = rates.time(op)
        times.append((op, t, b))
        if b == "compute":
            comp += t
        else:
            mem += t
        kernels += op_kernels(rates.engine, op) + expert_loop_kernels(rates.engine, op, rates.tokens, rates.quantized)
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

    def __call__(self, ops: list[Op], engine: EngineProfile, batch: int, n_tokens: int) -> PassTime:
        return pass_time(ops, self.hw, engine, self.quant, batch * n_tokens, shared=True)


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
