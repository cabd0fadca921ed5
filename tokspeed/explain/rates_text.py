"""One line each on how a rate comes about, written from the fields of a ``Rate`` or a ``Stream``.

``explain`` prints them under its stage table: ``stream_how`` for the bandwidth weights stream at
(``tokspeed.engines.rates_stream.stream_rate``), ``matmul_how`` for the FLOP/s of a prompt's weight matmuls
(``tokspeed.engines.rates.matmul_rate``). Nothing here decides a rate: the text says what the Rate holds.
"""

from __future__ import annotations

from ..engines.backends import coopmat1_share
from ..engines.cpu_kernels import attention_path
from ..engines.expert_tiles import fill, tile_columns
from ..engines.issue import fp32_lanes_per_core
from ..engines.mmq import DP4A_OPS_PER_FP32_FLOP
from ..engines.rates import BOARD_POWER, INT8_KERNELS, INT8_OPS_PER_FP16_ENERGY, MATVEC_MAX_TOKENS, MMQ_BOUND, \
    cpu_attention_share, runs_tiles


def tflops(x: float) -> str:
    """FLOP/s in TFLOP/s to three digits."""
    return f"{x / 1e12:,.{0 if x >= 1e14 else 1 if x >= 1e13 else 2}f} TFLOP/s"


def gbs(bytes_s: float) -> str:
    return f"{bytes_s / 1e9:,.0f} GB/s"


def listed_peak(rate, hw) -> str:
    """The listed figure a Rate scales, with its usable multiple."""
    if rate.listed == "DP4A":
        return f"{DP4A_OPS_PER_FP32_FLOP:g} x FP32 {tflops(hw.vector_flops)}"
    return (f"{rate.listed} {tflops(rate.peak)}" + (f" x {rate.scale:g} (FP16 accumulate)" if rate.scale != 1.0
                                                    else ""))


def bound_how(bound, rate, hw, engine, tokens: int) -> str:
    """One bound of a Rate with its numbers."""
    if bound.name == INT8_KERNELS:
        return f"int8 kernels {tflops(bound.value)} ({tokens} tokens sharing each weight block's work)"
    if bound.name == MMQ_BOUND:
        per = f"{engine.quant_flops_per_core_cycle:.0f} FLOPs per core cycle"
        if rate.kernel == "dp4a":     # rates.quant_matmul_flops: the two issue from the same lanes, their times add
            per += (f" of tile work and {DP4A_OPS_PER_FP32_FLOP * 2 * fp32_lanes_per_core(hw):,.0f} of DP4A,"
                    " issued from the same lanes")
        return f"MMQ bound {tflops(bound.value)} ({per})"
    if bound.name == BOARD_POWER:
        on_int8 = f" x {INT8_OPS_PER_FP16_ENERGY:g} on INT8 tensor cores" if rate.kernel == "mma" else ""
        return (f"board power {hw.tdp_w:g} W / {engine.pj_per_flop:.3g} pJ per FLOP{on_int8} = "
                f"{tflops(bound.value)}")
    return f"{bound.name} {tflops(bound.value)}"


def matmul_how(rate, hw, engine, quant: str, tokens: int) -> str:
    """How a weight matmul's FLOP/s comes about in a pass of ``tokens`` tokens (``rate``: its ``matmul_rate``), in one
    line with its numbers; "" where the device has no FLOP/s figure."""
    if not rate.peak * rate.eta:
        return ""
    base = rate.peak * rate.eta
    share = coopmat1_share(engine.name, hw, False, quant) if tokens > MATVEC_MAX_TOKENS else 1.0
    of_which = f", of which the coopmat1 shaders' share {share:g} (no coopmat2 under this driver)" if share < 1 else ""
    parts = [f"{rate.unit} {tflops(base)} (listed {listed_peak(rate, hw)} x efficiency "
             f"{base / (rate.peak * rate.scale):.2f}{of_which})"]
    parts += [bound_how(b, rate, hw, engine, tokens) for b in rate.bounds]
    soft = any(b.name != INT8_KERNELS for b in rate.bounds)
    return (f"{quant} matmuls over {tokens:,} tokens run at {tflops(rate.value)}: " + ", ".join(parts)
            + (" (soft minimum)" if soft else ""))


def cpu_attention_how(engine, hw, tokens: int) -> str:
    """Where ``engine``'s attention over a pass of ``tokens`` runs on one of x86's row kernels
    (``rates.cpu_attention_share`` < 1): which, and its measured share of the FP32 peak
    (cpu_kernels.ROW_ATTENTION_SHARE); "" elsewhere."""
    share = cpu_attention_share(engine, hw, tokens)
    if share >= 1.0:
        return ""
    path = attention_path(engine, max(int(tokens), 1), getattr(engine, "build_month", ""))
    kernel = "one-row FlashAttention kernel" if path == "fa_row" else "vec_dot_f16 per score (-fa off)"
    return (f"{engine.name}'s {kernel} at {share:g} of the FP32 peak, measured per cached key and query head "
            "(benchmarks/bench_cpu_attention.py)")


def expert_tiles_how(engine, hw, quant: str, tokens: int, pairs_per_expert: float) -> str:
    """Where ``engine`` multiplies a prompt's routed experts in tiles of one width (``expert_tiles.tile_columns``):
    the width, the tokens an expert gets and the share of the tiles' columns they fill; "" elsewhere."""
    if not pairs_per_expert or not runs_tiles(engine, tokens, pairs_per_expert, quant):
        return ""
    j = tile_columns(engine, hw, quant, tokens, pairs_per_expert)
    if j <= 0:
        return ""
    return (f"{engine.name} multiplies every expert in tiles of {j} token columns; {pairs_per_expert:.3g} tokens an "
            f"expert fill {fill(tokens, pairs_per_expert, j):.0%} of them (engines/expert_tiles.py)")


def stream_how(s) -> str:
    """How a ``Stream`` comes about, in one line with its numbers."""
    group = " x ".join(f"eta_format[{k}] {v:.2f}" for k, v in ((s.group, s.eta_format), (s.path, s.path_eff))
                       if k and v != 1.0)
    what = f"{s.fmt} weights" if s.fmt else "weights"
    out = (f"{what} stream at {gbs(s.value)} ({s.value / s.peak:.0%} of {gbs(s.peak)}): "
           f"{s.memory.upper()} at {gbs(s.peak)} x eta_mem {s.eta_mem:.2f} = {gbs(s.peak * s.eta_mem)}")
    if s.kernel:
        out += (f", kernel bound {s.core_cycles / 1e9:,.0f} G core cycles/s x {s.bytes_per_core_cycle:.3g} B"
                + (f" x {group}" if group else "") + f" = {gbs(s.kernel)}")
    elif group:
        out += f", x {group}"
    if s.cap:
        out += f", engine cap {gbs(s.cap)}"
    return out + (" (soft minimum)" if s.kernel or s.cap else "")
