"""How fast a unit does an operator's math: the one place a FLOP/s rate comes from.

``compute_rate(hw, engine, fmt, tokens, unit, attn)`` (``matmul_rate`` for a weight matmul, ``op_rate`` for a
ledger operator) -> ``Rate``: which unit runs the kernel, the listed peak the model scales, the efficiency, the
named bounds that cap it, and the FLOP/s that results. ``timing.op_time`` divides an operator's FLOPs by
``Rate.value``; ``explain`` prints the Rate's fields; ``calibration.fast`` fills its arrays from it. The bytes/s
side is ``tokspeed.engines.rates_stream``.

A weight matmul over ``tokens`` tokens (0 = unknown) on ``hw`` under ``engine``:

1. the listed peak its math runs at: the vector FP32 figure for an F32 model (its matmuls are FP32 GEMMs) and for BF16
   weights a backend multiplies in F32 (``backends.bf16_as_f32``); DP4A's,
   ``DP4A_OPS_PER_FP32_FLOP`` x the FP32 figure, where the engine's MMQ kernels run on int8 dot products
   (``mmq_kernel``: Pascal, Volta below 64 tokens; the ideal bound takes DP4A where it beats the tensor figure);
   else the FP16 (tensor) figure, whose usable multiple is 2 on GeForce for FP16-accumulating engines
   (``tensor_peak_scale``);
2. x eta = eta_compute x that multiple x eta_compute_format x ``matmul_eff(tokens)``, at most 1;
3. a CPU engine's int8 kernels: the rate its tokens reach sharing each weight block's work (``int8_bound``);
4. a tiled pass (> ``MATVEC_MAX_TOKENS`` tokens): soft minimum with the MMQ bound (``quant_matmul_flops`` x
   ``matmul_eff``) and the board-power bound (``power_flops``, x ``INT8_OPS_PER_FP16_ENERGY`` on INT8 tensor cores).

The attention core over the KV cache runs at the tensor figure x eta_compute x eta_attn (its usable multiple
too, not for an F32 model), x eta_matvec in a decode pass (its vector kernel is a matrix-vector product over the
cache), with the board-power bound in a tiled pass; elementwise operators at the FP32
figure x eta_compute. Every figure is at most its listed peak.

The ``unit`` names the kernel the engine runs, after llama.cpp's CUDA dispatch (ggml-cuda.cu,
``ggml_cuda_mul_mat``): up to ``MATVEC_MAX_TOKENS`` tokens (MMVQ_MAX_BATCH_SIZE) quantized weights go through
MMVQ (mmvq.cu: dequantise and dot with DP4A, ``ggml_cuda_dp4a``, on the CUDA cores; scalar on parts before cc 6.1)
and one token of float weights through MMVF (mmvf.cu: a dot product per row on the CUDA cores; on a part with
tensor cores a few more tokens go to MMF's tensor-core tiles, taken here from 2 tokens: mmvf.cu takes up to 3-4 on
Volta to Ada), not the tensor cores; above, MMQ
(mmq.cuh) on INT8 tensor cores from Turing, on DP4A where ``tokspeed.engines.mmq`` says, else cuBLAS on the
FP16 tensor cores. The rate of a matrix-vector pass stays the tensor figure x ``eta_matvec``, a fitted fraction
(decode is memory-bound: the fit sees only how little compute matters there); the unit says where it runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..quant.format_key import FormatKey, format_key
from .backends import (F32_GEMM, bf16_as_f32, coopmat1_share, fa_tile_on_vector, flash_attn_on_vector,
                       uses_matrix_units, vector_fp16_tflops, vulkan_bf16_experts_tiled)
from .cpu_kernels import (EXPERT_GEMV_UNIT, attention_issue_share, attention_path, gemm_path, matvec_key,
                          matvec_peak, path_peak)
from .expert_tiles import fill, tile_columns
from .fa_decode import decode_attn_factor
from .issue import core_cycles_per_s, fp32_lanes_per_core
from .mmq import DP4A_FORMAT_PREFIX, DP4A_OPS_PER_FP32_FLOP, has_tensor_cores, mmq_unit

MATVEC_MAX_TOKENS = 8  # llama.cpp: MMVQ_MAX_BATCH_SIZE (CUDA) and the mul_mv_ext limit (Metal) are 8 rows
# INT8 tensor ops per the energy of one FP16 tensor FLOP: every NVIDIA tensor-core generation since Turing lists
# dense INT8 at 2x its dense FP16 rate within the same board power (the catalog's int8_tops and fp16_tflops), so
# an INT8 op costs at most half (power_flops: the board-power bound of the INT8 MMQ matmuls)
INT8_OPS_PER_FP16_ENERGY = 2.0
CAP_SHARPNESS = 4.0   # soft-minimum exponent of the bounds: at rate = bound the result is 0.84 x the bound

INT8_KERNELS, MMQ_BOUND, BOARD_POWER = "int8 kernels", "MMQ bound", "board power"


def soft_min(*rates: float) -> float:
    """p-norm soft minimum of the non-zero ``rates`` (p = CAP_SHARPNESS): two equal bounds give 0.84 x
    either, a bound 2x the other costs 1.5 %; zeros (no such bound) are ignored."""
    xs = [x for x in rates if x]
    if len(xs) == 1:
        return xs[0]
    p = CAP_SHARPNESS
    return sum(x ** -p for x in xs) ** (-1 / p) if xs else 0.0


@dataclass(frozen=True)
class Bound:
    name: str        # INT8_KERNELS (replaces the rate: a ramp over tokens) | MMQ_BOUND | BOARD_POWER (soft minimum)
    value: float     # FLOP/s


@dataclass(frozen=True)
class Rate:
    """How fast ``unit`` does an operator's math: ``peak`` (the listed figure ``listed``) x ``eta``, then the
    ``bounds`` in order, = ``value`` FLOP/s (``base``: peak x eta, before the bounds). ``scale``: the usable multiple
    of the listed peak inside ``eta``;
    ``kernel``: the MMQ units of a tiled pass over quantized weights (``mmq_kernel``)."""
    unit: str
    peak: float
    eta: float
    bounds: tuple = ()
    value: float = 0.0
    listed: str = ""         # "FP16" (tensor, or half2 on a part without) | "FP32" | "DP4A" (4 x FP32)
    scale: float = 1.0
    kernel: str = ""         # "mma" | "dp4a" | ""

    @property
    def base(self) -> float:
        return self.peak * self.eta

    def bound(self, name: str) -> float:
        """The value of the bound ``name`` (0 = none)."""
        return next((b.value for b in self.bounds if b.name == name), 0.0)


def compute_class(hw) -> str:
    """``geforce`` for devices whose catalog FP16 figure is the FP32-accumulate rate, half their FP16-accumulate
    rate (the hardware field ``fp16_accumulate_2x``: NVIDIA GeForce per the Ampere GA102 / Ada AD102 /
    Blackwell GB202 whitepapers, and the L40), else the hardware kind."""
    return "geforce" if getattr(hw, "fp16_accumulate_2x", False) else hw.kind


def runs_tiles(engine, tokens: int, pairs_per_expert: float = 0.0, fmt=None) -> bool:
    """Whether a weight matmul of a pass of ``tokens`` tokens runs the engine's tiled GEMM kernels rather than its
    matrix-vector ones: above ``MATVEC_MAX_TOKENS`` tokens, and a routed expert's BF16 weights on Vulkan at any count
    (``backends.vulkan_bf16_experts_tiled``)."""
    return tokens > MATVEC_MAX_TOKENS or bool(pairs_per_expert and vulkan_bf16_experts_tiled(engine.name, fmt))


def matmul_eff(engine, tokens: int, pairs_per_expert: float = 0.0, hw=None, fmt=None) -> float:
    """Matmul efficiency for a pass over ``tokens`` tokens (0 = unknown: 1): ``eta_matvec`` up to
    MATVEC_MAX_TOKENS, then the tiled GEMMs' ramp T / (T + gemm_half_tokens): each weight tile's load and dequantising
    is shared by the T tokens of the tile. For a routed expert (``pairs_per_expert`` tokens each, on ``hw``, ``fmt``
    weights) the engine's expert kernels decide (``engines.expert_tiles``): a GEMM per expert ramps over its own tokens; a
    tile of J columns shared by every expert ramps over J, times the share of its columns that are tokens."""
    if not tokens:
        return 1.0
    if not runs_tiles(engine, tokens, pairs_per_expert, fmt):
        return engine.eta_matvec
    j = tile_columns(engine, hw, fmt, tokens, pairs_per_expert) if pairs_per_expert else -1
    if j < 0:
        return tokens / (tokens + engine.gemm_half_tokens)
    if j == 0:
        t = min(tokens, pairs_per_expert)
        return t / (t + engine.gemm_half_tokens)
    return j / (j + engine.gemm_half_tokens) * fill(tokens, pairs_per_expert, j)


def tensor_peak_scale(engine, hw) -> float:
    """Usable tensor peak / listed FP16 peak: 2 on GeForce for FP16-accumulating engines, else 1."""
    return 2.0 if engine.fp16_accumulate and compute_class(hw) == "geforce" else 1.0


def mmq_kernel(engine, hw, fmt, tokens: int) -> str:
    """The units ``engine``'s matmuls over ``fmt`` weights run a tiled pass of ``tokens`` tokens on, on ``hw``
    (``tokspeed.engines.mmq``): ``mma`` (INT8 tensor cores, where the engine runs MMQ there: it has a
    ``quant_flops_per_core_cycle``), ``dp4a`` (int8 dot products on the cores of a part without tensor cores --
    Pascal, Volta below 64 tokens -- for an engine with ``mmq_dp4a``, in every era), or ``""``: float weights, a
    pass of matrix-vector kernels (``MATVEC_MAX_TOKENS`` tokens or fewer: no tiles), or the engine dequantises and
    multiplies with its float GEMM."""
    unit = mmq_unit(hw, tokens) if format_key(fmt).quantized and tokens > MATVEC_MAX_TOKENS else ""
    if unit == "mma":
        return unit if engine.quant_flops_per_core_cycle else ""
    return unit if unit == "dp4a" and engine.mmq_dp4a else ""


def quant_matmul_flops(engine, hw, fmt, tokens: int) -> float:
    """What a tiled matmul over quantized weights can reach on ``hw`` whatever the tensor peak, where the engine's
    MMQ kernels run a pass of ``tokens`` tokens there (``mmq_kernel``): cores x clock x ``quant_flops_per_core_cycle``
    (unpacking and scaling tiles and feeding the INT8 MMA: work per core cycle, ``tokspeed.engines.issue``). On
    DP4A the dot products issue from the same lanes as that work, so their times add: cores x clock /
    (1 / quant_flops_per_core_cycle + 1 / DP4A's FLOPs per core cycle, 4 x 2 x the FP32 lanes). 0 for float
    weights, without MMQ there, or where unknown."""
    unit = mmq_kernel(engine, hw, fmt, tokens)
    if not (unit and engine.quant_flops_per_core_cycle):
        return 0.0
    per_cycle = engine.quant_flops_per_core_cycle
    if unit == "dp4a":
        per_cycle = 1.0 / (1.0 / per_cycle + 1.0 / (DP4A_OPS_PER_FP32_FLOP * 2 * fp32_lanes_per_core(hw)))
    return core_cycles_per_s(hw) * per_cycle


def power_flops(engine, hw, int8: bool = False) -> float:
    """What a tiled pass's tensor ops can reach on ``hw`` within its board power: ``tdp_w`` / ``pj_per_flop`` (the
    energy per FP16 tensor FLOP at the board under this engine's kernels, one value for every weight format and
    process node), x ``INT8_OPS_PER_FP16_ENERGY`` for matmuls on INT8 tensor cores (``int8``: ``mmq_kernel`` is
    ``mma``); 0 where the board power or the energy is unknown. ``tdp_w`` is the listed board or module power: on a
    superchip or SoC (GH200, DGX Spark, Jetson) it includes the CPU, which a tiled GPU pass leaves mostly idle."""
    if not (engine.pj_per_flop and getattr(hw, "tdp_w", 0.0)):
        return 0.0
    return hw.tdp_w / (engine.pj_per_flop * 1e-12) * (INT8_OPS_PER_FP16_ENERGY if int8 else 1.0)


def cpu_gemm_path(engine, hw, fmt) -> str:
    """The kernel path of a CPU engine's weight matmul on a CPU (or a SoC's CPU cluster): ``cpu_kernels.gemm_path``
    for the engine's build month; "" for other engines and devices."""
    if hw.kind not in ("cpu", "soc") or not (engine.int8_matvec or str(engine.name).endswith("-cpu")):
        return ""
    return gemm_path(engine, hw, fmt, getattr(engine, "build_month", ""))


def cpu_attention_share(engine, hw, tokens: int) -> float:
    """The FP32 FMA share llama.cpp-cpu's attention kernel can issue over ``tokens`` queries on a CPU
    (``cpu_kernels.attention_path`` for the engine's -fa and build month, ``attention_issue_share``); 1 for other
    engines (ik_llama.cpp runs its own attention kernels) and devices."""
    if hw.kind not in ("cpu", "soc") or not str(engine.name).startswith("llama.cpp-cpu"):
        return 1.0
    return attention_issue_share(hw, attention_path(engine, max(int(tokens), 1), getattr(engine, "build_month", "")))


def int8_matvec_flops(engine, hw, fmt) -> float:
    """FLOP/s of one token's matmuls over ``fmt`` weights where the engine runs them as int8 dot products on a CPU:
    ``int8_matvec`` of its kernel (``cpu_kernels.matvec_key``: the repacked gemv, ik_llama.cpp's, else the format
    group's vec_dot) x the int8 rate that kernel runs at (``cpu_kernels.matvec_peak``); 0 where it does not."""
    if not engine.int8_matvec:
        return 0.0
    if not cpu_gemm_path(engine, hw, fmt):          # not on a CPU: the format group's fraction of the int8 rate
        frac = engine.int8_matvec.get(format_key(fmt).group, 0.0)
        return hw.cpu_int8_ops * frac if frac else 0.0
    key = matvec_key(engine, hw, fmt, getattr(engine, "build_month", ""))
    frac = engine.int8_matvec.get(key, 0.0)
    return matvec_peak(hw, key) * frac if frac else 0.0


def int8_bound(engine, hw, fmt, tokens: int, gemm_rate: float, pairs_per_expert: float = 0.0) -> float:
    """A CPU engine's matmul rate over ``tokens`` tokens. Per weight block, loading, unpacking and scaling are
    done once per pass and shared by the tokens that use the block -- all of them, or for a routed expert the
    ``pairs_per_expert`` tokens routed to it -- while the multiply-adds grow with them: time = a + b x T, so
    rate = T / (a + b T), through one token's int8 rate (``int8_matvec_flops``, T = 1) and ``gemm_rate``, the
    prompt kernels' rate (T large). benchmarks/bench_cpu_ramp.py measures the curve. ``gemm_rate`` unchanged
    where the engine has no such kernels (or they are no slower); one token's rate for a routed expert where the
    engine multiplies experts one token at a time (``EngineProfile.expert_gemv_per_token``)."""
    mv = int8_matvec_flops(engine, hw, fmt)
    if not mv or mv >= gemm_rate:
        return gemm_rate
    if pairs_per_expert and engine.expert_gemv_per_token:   # one token at a time: none shares a block's work
        return mv
    share = min(tokens, pairs_per_expert) if pairs_per_expert else tokens
    return share / (share / gemm_rate + 1 / mv - 1 / gemm_rate)


def int8_rates(engine, hw, fmt, tokens: int = 1) -> tuple[float, float, float]:
    """(one token's int8 rate, the GEMM rate, the rate over ``tokens`` tokens) of a dense weight matmul of a CPU
    engine with int8 kernels; zeros where it has none."""
    mv = int8_matvec_flops(engine, hw, fmt)
    if not mv:
        return 0.0, 0.0, 0.0
    gemm = matmul_rate(hw, engine, fmt, 0).value        # the prompt kernels' rate (tokens unknown: no ramp)
    return mv, gemm, int8_bound(engine, hw, fmt, tokens, gemm)


def _weight_peak(hw, engine, fmt: FormatKey, tokens: int, kernel: str) -> tuple[float, float, str]:
    """(listed peak, usable multiple, which figure) of a weight matmul: step 1 of the module docstring."""
    if fmt.f32 or bf16_as_f32(engine.name, hw, fmt, tokens):      # an F32 GEMM (backends.bf16_as_f32: ROCm's BF16)
        return hw.vector_flops, 1.0, "FP32"
    if kernel == "dp4a":
        return DP4A_OPS_PER_FP32_FLOP * hw.vector_flops, 1.0, "DP4A"
    if engine.is_ideal and fmt.quantized and tokens > MATVEC_MAX_TOKENS and mmq_unit(hw, tokens) == "dp4a":
        # the bound takes the fastest units the part has for the format: DP4A where it beats the tensor figure
        dp4a = DP4A_OPS_PER_FP32_FLOP * hw.vector_flops
        return max(hw.matmul_flops, dp4a), 1.0, "DP4A" if dp4a > hw.matmul_flops else _tensor_figure(hw)
    return hw.matmul_flops, tensor_peak_scale(engine, hw), _tensor_figure(hw)


def _tensor_figure(hw) -> str:
    return "FP16" if hw.fp16_tflops else "FP32"


def compute_rate(hw, engine, fmt, tokens: int, unit: str = "tensor", attn: bool = False,
                 pairs_per_expert: float = 0.0) -> Rate:
    """The Rate of an operator of ledger ``unit`` (tensor | vector | memory) in a pass of ``tokens`` tokens over
    ``fmt`` weights: a weight matmul (tensor, not ``attn``), the attention core over the KV cache (``attn``) or an
    elementwise operator; ``pairs_per_expert``: a routed expert's tokens sharing its weight blocks."""
    fmt = format_key(fmt)
    if unit != "tensor":
        eta = min(engine.compute_eff_for(hw), 1.0)
        return Rate(_vector_unit(hw), hw.vector_flops, eta, (), hw.vector_flops * eta, "FP32")
    tiled = tokens > MATVEC_MAX_TOKENS
    if attn:        # the FP16-accumulate doubling is of the tensor figure: an F32 model's attention runs in FP32
        f32 = fmt.f32
        peak = hw.vector_flops if f32 else hw.matmul_flops
        scalar = not f32 and tiled and (flash_attn_on_vector(engine.name, hw) or fa_tile_on_vector(engine, hw))
        # a decode pass (up to MATVEC_MAX_TOKENS queries) runs the attention core as a matrix-vector kernel (ggml-cuda
        # fattn-vec, ggml-metal kernel_flash_attn_ext_vec: one query row against the cached keys), at the pass's
        # matrix-vector efficiency as the weight matvecs are; off coopmat2, ggml-vulkan's block loop on the vector
        # ALUs at its driver's own (engines.fa_decode); a tiled pass's FlashAttention tiles at eta_attn alone
        driver, vec = decode_attn_factor(engine, hw) if 0 < tokens <= MATVEC_MAX_TOKENS else \
            ("", coopmat1_share(engine.name, hw, True))
        scalar = scalar or (bool(driver) and not f32)
        if scalar:  # FA on the vector ALUs (Vulkan's FA_SCALAR and decode loop, HIP's and SYCL's fattn-tile): packed half
            peak = vector_fp16_tflops(hw) * 1e12
        eta = min(engine.compute_eff_for(hw) * engine.eta_attn * vec *
                  (1.0 if f32 or scalar else tensor_peak_scale(engine, hw)), 1.0)
        share = cpu_attention_share(engine, hw, tokens)
        if share < 1.0:     # llama.cpp-cpu's row kernels on x86, measured (cpu_kernels.attention_issue_share) as a
            # share of the FP32 FMA peak: they widen the halves to FP32 (a probed profile's FP16 figure is a GEMM's)
            peak, eta = hw.vector_flops, min(eta, engine.compute_eff_for(hw) * share)
        value = peak * eta
        pmax = power_flops(engine, hw) if tiled and value else 0.0
        bounds = (Bound(BOARD_POWER, pmax),) if pmax else ()
        listed = "FP32" if f32 or share < 1.0 else "vector FP16" if scalar else _tensor_figure(hw)
        unit = _packed_half_unit(hw) if scalar else _matrix_unit(hw, listed)
        return Rate(unit, peak, eta, bounds, soft_min(value, pmax) if pmax else value, listed)
    kernel = mmq_kernel(engine, hw, fmt, tokens)
    peak, scale, listed = _weight_peak(hw, engine, fmt, tokens, kernel)
    fmt_eff, cpu_unit = engine.compute_format_eff(fmt), ""
    if kernel == "dp4a":            # the DP4A kernels' own unpacking of the format, where fitted (mmq.py)
        fmt_eff = engine.eta_compute_format.get(DP4A_FORMAT_PREFIX + fmt.group, fmt_eff)
    elif bf16_as_f32(engine.name, hw, fmt, tokens):     # BF16 weights converted for an F32 GEMM (F32_GEMM)
        fmt_eff = engine.eta_compute_format.get(F32_GEMM, fmt_eff)
    if pairs_per_expert:            # a routed expert's grouped GEMM (1 unless the profile lists its path)
        fmt_eff *= engine.expert_factors(fmt)[1]
    path = cpu_gemm_path(engine, hw, fmt)
    if path:            # a CPU engine: the kernel ggml-cpu / ik_llama.cpp picks, on its units (engines.cpu_kernels)
        up = path_peak(hw, path)
        peak, scale, listed, cpu_unit = up.flops, 1.0, "FP32" if path.startswith("float") else "INT8", up.label
        fmt_eff = engine.eta_compute_format.get(path, fmt_eff)
    # eta_compute x (the format's x the pass's) x the usable multiple: the fit's evaluator multiplies in this order
    ramp = matmul_eff(engine, tokens, pairs_per_expert, hw, fmt)
    if tiled:           # Vulkan without coopmat2: the coopmat1 shaders' share (backends.COOPMAT1_SHARE)
        ramp *= coopmat1_share(engine.name, hw, False, fmt)
    eta = min(engine.compute_eff_for(hw) * (fmt_eff * ramp) * scale, 1.0)
    value = peak * eta
    bounds = []
    int8 = bool(engine.int8_matvec and tokens)          # a CPU's int8 kernels (llama.cpp-cpu)
    if int8:
        ramp = int8_bound(engine, hw, fmt, tokens, value, pairs_per_expert)
        if ramp != value:
            bounds.append(Bound(INT8_KERNELS, ramp))
            value = ramp
            if pairs_per_expert and engine.expert_gemv_per_token and cpu_unit:     # not the GEMM its label names
                cpu_unit = EXPERT_GEMV_UNIT
    if tiled and value:
        qmax = quant_matmul_flops(engine, hw, fmt, tokens) * ramp
        pmax = power_flops(engine, hw, int8=kernel == "mma")
        bounds += [Bound(n, v) for n, v in ((MMQ_BOUND, qmax), (BOARD_POWER, pmax)) if v]
        value = soft_min(value, qmax, pmax)
    return Rate(cpu_unit or _weight_unit(hw, engine, fmt, tokens, kernel, listed, int8), peak, eta, tuple(bounds),
                value, listed, scale, kernel)


def matmul_rate(hw, engine, fmt, tokens: int, pairs_per_expert: float = 0.0) -> Rate:
    """The Rate of a dense (or, with ``pairs_per_expert``, routed-expert) weight matmul over ``tokens`` tokens."""
    return compute_rate(hw, engine, fmt, tokens, "tensor", False, pairs_per_expert)


def op_rate(op, hw, engine, fmt, tokens: int) -> Rate:
    """The Rate of the ledger operator ``op`` in a pass of ``tokens`` tokens."""
    return compute_rate(hw, engine, fmt, tokens, op.unit, bool(op.kv_read_bytes or op.kv_write_bytes),
                        op.pairs_per_expert)


# -- what runs it ---------------------------------------------------------------------------------------------

def vendor_of(hw) -> str:
    """A device's vendor, lower case, its long names folded ("Advanced Micro Devices" is amd)."""
    v = (hw.vendor or "").strip().lower()
    return "nvidia" if v.startswith("nvidia") else "amd" if v.startswith(("amd", "advanced micro")) else \
        "apple" if v.startswith("apple") else v


def _vector_unit(hw) -> str:
    if hw.kind == "cpu":
        return "CPU cores (SIMD)"
    return "CUDA cores" if vendor_of(hw) == "nvidia" else "GPU vector ALUs" if hw.kind in ("gpu", "soc") \
        else "vector units"


def _packed_half_unit(hw) -> str:
    """The vector units at their packed-FP16 rate: where a backend's kernels do not reach the matrix units
    (``backends.backend_view``), or an attention kernel without them."""
    return f"{_vector_unit(hw)} (packed FP16)"


def _matrix_unit(hw, listed: str) -> str:
    """The units a GEMM at the ``listed`` figure runs on: the FP32 figure on the vector units, the FP16 one on the
    part's matrix units (NVIDIA tensor cores from Volta; half2 on the CUDA cores of GP100)."""
    vendor = vendor_of(hw)
    if hw.kind == "cpu":
        return "CPU cores (SIMD)"
    if listed == "FP32":
        return f"{_vector_unit(hw)} (FP32)"
    if vendor == "nvidia":
        return "tensor cores (FP16)" if has_tensor_cores(hw) else "CUDA cores (FP16)"
    return {"amd": "matrix cores (FP16)", "apple": "GPU matrix units (FP16)"}.get(vendor, "matrix units (FP16)")


def _weight_unit(hw, engine, fmt: FormatKey, tokens: int, kernel: str, listed: str, int8: bool) -> str:
    """What runs a weight matmul (the module docstring's kernel list)."""
    nvidia = vendor_of(hw) == "nvidia"
    if hw.kind == "cpu":
        return "CPU cores (int8 SIMD dot products)" if int8 and int8_matvec_flops(engine, hw, fmt) else \
            "CPU cores (SIMD)"
    if kernel == "mma":
        return "INT8 tensor cores (MMQ)" if nvidia else "INT8 matrix units (MMQ)"
    if kernel == "dp4a":
        return f"{_vector_unit(hw)} (DP4A, MMQ)"
    if listed == "DP4A":                      # the ideal bound on a part whose fastest units for it are DP4A
        return "CUDA cores (DP4A)"
    if nvidia and engine.mmq_dp4a and 0 < tokens <= MATVEC_MAX_TOKENS:     # ggml-cuda's matrix-vector kernels
        if fmt.quantized:
            return "CUDA cores (DP4A, MMVQ)" if mmq_unit(hw, 1) else "CUDA cores (MMVQ)"
        if tokens == 1 or not has_tensor_cores(hw):     # MMVF; a few tokens of float weights: MMF's tensor-core tiles
            return "CUDA cores (matrix-vector)"
    if listed != "FP32" and not nvidia and uses_matrix_units(engine.name, hw) is False:
        return _packed_half_unit(hw)      # backends.backend_view: the vector rate, not matrix units
    return _matrix_unit(hw, listed)
