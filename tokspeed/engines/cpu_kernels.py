"""Which kernel runs a CPU engine's weight matmul over a prompt, and on which of the cores' units.

ggml's CPU backend (llama.cpp-cpu) picks, per weight tensor and ISA (ggml/src/ggml-cpu/, llama-cpp-python 0.3.36's
vendored copy, read for this file):

- ``repack``: the tensor is repacked at load into row-interleaved blocks (repack.cpp
  ``ggml_repack_get_optimal_repack_type``: Q4_0 -> q4_0_8x8 on AVX2 / 4x8 on Arm i8mm / 4x4 on Arm dotprod, IQ4_NL,
  Q4_K, Q2_K (AVX-512), MXFP4, Q8_0 / Q5_K / Q6_K on Arm). One broadcast activation block meets 4-8 weight rows, so
  the block's unpacking is shared and the int8 dot-product instructions bind: the rate is a share of the CPU's int8
  peak (``Hardware.cpu_int8_ops``: AVX2 maddubs/madd 2 x the FP32 rate, VNNI / sdot 4 x). x86's GEMM runs 512-bit
  where the build has AVX-512 (arch/x86/repack.cpp ``__AVX512F__``, ``_mm512_dpbusd_epi32``), else 256-bit.
- ``amx``: on a CPU with AMX (Sapphire Rapids and later) an AMX build puts Q4_0/Q4_1/Q8_0/Q4_K/Q5_K/Q6_K/IQ4_XS
  weights in its own buffer (amx/common.h ``qtype_has_amx_kernels``) and multiplies prompts on the AMX tiles
  (amx/mmq.cpp): 2048 int8 ops per cycle per core, 8 x AVX-512 VNNI's 256 (Intel's AMX overview). Taken only by an
  engine with an ``amx`` efficiency: none is measured (this project's AMX VM faults in ggml's AMX code, a general
  protection fault in libggml-cpu.so) and no calibration row runs it, so AMX CPUs predict as the other paths.
- ``llamafile``: tinyBLAS (llamafile/sgemm.cpp ``llamafile_sgemm``) for Q8_0/Q4_0/Q5_0/IQ4_NL on x86
  (``tinyBLAS_Q0_AVX``, 256-bit ``__m256i`` whatever the CPU's widest SIMD) and Q8_0/Q4_0 on Arm dotprod
  (``tinyBLAS_Q0_ARM``). Per 32-weight block it unpacks, fixes signs, converts and scales: SIMD issue binds, not the
  int8 multiply (a VNNI ``dpbusd`` saves one of ~6 instructions), so its unit is the FP32 SIMD rate at 256 bits.
- ``vec_dot``: everything else -- a dot product per (weight row, token) pair through the type's ``vec_dot``
  (arch/x86/quants.c: 256-bit AVX2 code; arch/arm/quants.c: NEON), unpacking each block again for every token;
  same unit as llamafile's.
- ``float`` / ``float16``: F32/F16/BF16 through tinyBLAS on the FP32 FMA units (512-bit ``__m512`` with AVX-512),
  or on 16-bit units where the ISA multiplies 16-bit values itself (``float16``: Arm FP16 vector arithmetic for F16,
  ``float16x8_t``; AVX-512 BF16 ``vdpbf16ps`` for BF16, ``__m512bh``): 2 x the FP32 rate.

ik_llama.cpp (``iqk``): its ``iqk_mul_mat`` (ggml/src/iqk/iqk_mul_mat.cpp) multiplies every quantized type, after
``-rtr`` run-time repacking into its row-interleaved ``_R4``/``_R8`` layouts, as int8 dot products on the full-width
SIMD (its README: prompt processing "2-3x faster than mainline" on CPUs, for all quant types), 512-bit where its
``HAVE_FANCY_SIMD`` holds (iqk_config.h: AVX-512 F, BW, DQ, VL and VNNI: Zen 4/5, Ice Lake and later),
its AVX2 code elsewhere (Skylake-SP has AVX-512 but no VNNI); its 16-bit weights run on the 16-bit units as
``float16`` above.

A core whose FMA datapath is 512 bits wide (Intel server cores with two AVX-512 FMA units, Zen 5) lists its FP32 peak
at 512 bits; a 256-bit kernel there issues half as many lanes (``width_share``). Zen 4 runs AVX-512 on 256-bit
units: its listed peak is already the 256-bit one.

Which types a build repacks moved over time: ``REPACK`` holds each entry of today's dispatch with the month it is
ASSUMED to have arrived (from the llama.cpp pull requests; the month, low confidence); a build before
it runs the type through llamafile or vec_dot. The efficiency of each path (its share of its unit's peak) is the
engine's ``eta_compute_format`` keyed by path (priors.toml [CPUPATH], written by scripts/fit_cpu_kernels.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..quant.dynamic import base_name
from ..quant.format_key import format_key
from ..quant.format_table import ggml_types, row
from .eras import _table

PATHS = ("repack", "amx", "llamafile", "vec_dot", "float", "float16", "iqk")

# x86 cores whose FP32 FMA datapath is 512 bits wide (two 512-bit FMA pipes per core): Intel's server cores from
# Skylake-SP (Xeon Scalable product briefs: Gold 6xxx / Platinum with two AVX-512 FMA units) and AMD Zen 5 (EPYC 9005
# product brief: "full 512-bit datapath"). Zen 4 executes AVX-512 on 256-bit units.
FULL_512_ARCHS = frozenset({"skylake-sp", "cascade-lake", "ice-lake-sp", "sapphire-rapids", "emerald-rapids",
                            "granite-rapids", "zen5"})
AMX_INT8_PER_VNNI = 8.0   # Intel AMX overview: 2048 int8 ops/cycle/core on the tiles vs 256 with AVX-512 VNNI
# x86's repacked GEMMs multiply with vpmaddubsw + vpmaddwd, two instructions per 32 int8 multiply-adds: 2 x the FP32
# FMA rate in ops (Hardware's AVX2 figure). Today's arch/x86/repack.cpp has a dpbusd form for some of them under
# AVX512-VNNI (mul_sum_us8_pairs_acc_int32x16); not counted: the Q4_K kernels still use maddubs, and the rows' builds
# (late 2024) are ASSUMED to predate it.
AVX2_INT8_PER_FP32 = 2.0
F16_PER_FP32 = 2.0        # a 16-bit multiply-add fills twice the lanes of an FP32 FMA (vdpbf16ps, NEON FP16 fmla)

# repack.cpp ggml_repack_get_optimal_repack_type: (ggml type, ISA test, ASSUMED month it arrived)
REPACK = (
    ("Q4_0", "arm-dotprod", "2024-11"),   # runtime repack of Q4_0 for Arm (4x4 dotprod, 4x8 i8mm)
    ("Q4_0", "x86-avx2", "2024-12"),      # q4_0_8x8 on AVX2 / AVX-512
    ("IQ4_NL", "arm-dotprod", "2024-12"),  # iq4_nl_4x4
    ("Q4_K", "x86-avx2", "2025-03"),      # q4_K_8x8
    ("IQ4_NL", "x86-avx2", "2025-06"),    # iq4_nl_8x8
    ("Q2_K", "x86-avx512", "2025-08"),    # q2_K_8x8
    ("MXFP4", "x86-avx2", "2025-09"), ("MXFP4", "arm-dotprod", "2025-09"),
    ("Q4_K", "arm-i8mm", "2025-09"), ("Q4_K", "arm-dotprod", "2025-12"),
    ("Q8_0", "arm-dotprod", "2025-11"),
    ("Q5_K", "arm-dotprod", "2026-01"), ("Q6_K", "arm-dotprod", "2026-01"),
)
AMX_TYPES = frozenset({"Q4_0", "Q4_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS"})   # amx/common.h
AMX_SINCE = "2024-11"     # ASSUMED: the AMX buffer type joined the CPU backend's extra buffers (ggml-cpu.cpp)
LLAMAFILE = {"x86": frozenset({"Q8_0", "Q4_0", "Q5_0", "IQ4_NL"}), "arm": frozenset({"Q8_0", "Q4_0"})}


def isa(hw) -> str:
    """``x86`` or ``arm``: the instruction set of the cores (their ``matrix_units``, else the vendor)."""
    units = set(hw.matrix_units or ())
    if units & {"neon", "neon-dotprod", "i8mm", "sve", "sme"}:
        return "arm"
    if any(u.startswith(("avx", "amx")) for u in units):
        return "x86"
    return "x86" if (hw.vendor or "").strip().lower().startswith(("amd", "intel", "advanced micro")) else "arm"


def has(hw, test: str) -> bool:
    """Whether ``hw`` passes one of REPACK's ISA tests."""
    units, kind = set(hw.matrix_units or ()), isa(hw)
    if test == "x86-avx2":
        return kind == "x86"
    if test == "x86-avx512":
        return kind == "x86" and "avx512" in units
    if test == "arm-i8mm":
        return kind == "arm" and "i8mm" in units
    return kind == "arm"          # arm-dotprod: every Armv8.2+ core llama.cpp's CPU rows run on (Apple M, A76, V2)


def width_share(hw, bits: int) -> float:
    """The share of ``hw``'s listed FP32 SIMD peak a ``bits``-wide x86 kernel issues (1 on Arm and 256-bit cores)."""
    full = 512 if isa(hw) == "x86" and hw.arch in FULL_512_ARCHS and "avx512" in (hw.matrix_units or ()) else 256
    return min(bits, full) / full if isa(hw) == "x86" else 1.0


def ggml_type(fmt: str) -> str:
    """The ggml tensor type that carries most of a format's weights: ``Q4_K_M`` -> ``Q4_K``, ``UD-Q4_K_XL`` -> ``Q4_K``;
    a format without a GGML type of its own (``formats.toml``: no ftype, not a GGML block type) -> its kernel group."""
    q = base_name(str(fmt))
    r = row(q)
    if r is not None and (r.ik or not (r.main_type or "block" in ggml_types().get(q, {}))):
        return r.group.upper()
    for base in ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"):
        if q.startswith(base):
            return base
    return q


def build_month_of(version) -> str:
    """The year-month of a parsed engine version (``eras.EngineVersion``): its own, else the last month of its era
    (an era label: "2024" -> "2024-12"), "" for none or the open newest era (today's build)."""
    if version is None:
        return ""
    if version.month:
        return version.month

    era = next((e for e in _table().get(version.family, {}).get("eras", []) if e["label"] == version.label), None)
    return era["until"] if era else ""


def before(month: str, since: str) -> bool:
    return bool(month) and month < since


def gemm_path(engine, hw, fmt, month: str = "") -> str:
    """The path (``PATHS``) of a prompt matmul over ``fmt`` weights on ``hw`` under a CPU ``engine`` built in
    ``month`` ("" = today's build)."""
    t = ggml_type(fmt)
    units, kind = set(hw.matrix_units or ()), isa(hw)
    if t in ("F32", "F16", "BF16", "FP16"):
        sixteen = (t in ("F16", "FP16") and kind == "arm") or (t == "BF16" and "avx512-bf16" in units)
        return "float16" if sixteen and t != "F32" else "float"
    if str(engine.name).startswith("ik_llama"):
        return "iqk"
    if "amx" in units and t in AMX_TYPES and not before(month, AMX_SINCE) and "amx" in engine.eta_compute_format:
        return "amx"
    if any(t == rt and has(hw, test) and not before(month, since) for rt, test, since in REPACK):
        return "repack"
    return "llamafile" if t in LLAMAFILE[kind] else "vec_dot"


# what runs a routed expert's matmul under ggml-cpu's mul_mat_id (EngineProfile.expert_gemv_per_token): the repacked
# type's gemv or the type's vec_dot, one (expert, token) pair at a time (priors.toml [CPUMOE])
EXPERT_GEMV_UNIT = "CPU cores (int8 gemv / vec_dot, one (expert, token) pair at a time)"


@dataclass(frozen=True)
class UnitPeak:
    flops: float      # ops/s of the units the path runs on
    label: str        # which units, for explain


def path_peak(hw, path: str) -> UnitPeak:
    """The peak of the units a path runs on (module docstring)."""
    fp32 = hw.vector_flops
    if path == "float":
        return UnitPeak(fp32 * width_share(hw, 512), "CPU cores (FP32 SIMD FMA, tinyBLAS)")
    if path == "float16":
        return UnitPeak(F16_PER_FP32 * fp32, "CPU cores (16-bit SIMD multiply-add)")
    if path in ("llamafile", "vec_dot"):
        what = "llamafile tinyBLAS" if path == "llamafile" else "vec_dot per row"
        return UnitPeak(fp32 * width_share(hw, 256), f"CPU cores (int8 SIMD, {what}: issue-bound, FP32-lane rate)")
    if path == "amx":
        return UnitPeak(AMX_INT8_PER_VNNI * hw.cpu_int8_ops, "CPU cores (AMX int8 tiles)")
    if path == "iqk":    # 512-bit only with its HAVE_FANCY_SIMD set (AVX-512 F/BW/DQ/VL + VNNI), else its AVX2 code
        bits = 512 if "avx512-vnni" in (hw.matrix_units or ()) else 256
        return UnitPeak(hw.cpu_int8_ops * width_share(hw, bits), "CPU cores (int8 dot products, ik_llama.cpp iqk_mul_mat)")
    if isa(hw) == "arm":
        return UnitPeak(hw.cpu_int8_ops, "CPU cores (int8 sdot / smmla, repacked GEMM)")
    bits = 512 if "avx512" in (hw.matrix_units or ()) else 256
    return UnitPeak(AVX2_INT8_PER_FP32 * fp32 * width_share(hw, bits),
                    "CPU cores (int8 vpmaddubsw + vpmaddwd, repacked GEMM)")


def matvec_key(engine, hw, fmt, month: str = "") -> str:
    """The key of a CPU engine's ``int8_matvec`` for one token's matmul over ``fmt``: ``repack`` (the repacked
    type's gemv, repack.cpp), ``iqk`` (ik_llama.cpp), else the format group (its type's vec_dot, arch/*/quants.c;
    an AMX build's matrix-vector products are AVX-512 VNNI code, amx/mmq.cpp, counted here too)."""
    path = gemm_path(engine, hw, fmt, month)
    return path if path in ("repack", "iqk") else format_key(fmt).group


def matvec_peak(hw, key: str) -> float:
    """The int8 ops/s one token's matmul of ``key`` runs on: x86's 256-bit vec_dot / gemv code at the int8 rate
    (a 512-bit core issues half its listed lanes; the repacked gemv multiplies with vpmaddubsw + vpmaddwd, 2 x FP32),
    ik_llama.cpp's at its GEMM width, Arm's at the sdot rate."""
    if key == "iqk":
        return path_peak(hw, "iqk").flops
    if isa(hw) == "arm":
        return hw.cpu_int8_ops
    if key == "repack":
        return AVX2_INT8_PER_FP32 * hw.vector_flops * width_share(hw, 256)
    return hw.cpu_int8_ops * width_share(hw, 256)



# -- the attention core (priors.toml [CPUATTN]) ------------------------------------------------------------------
# Which kernel multiplies the queries by the F16 K/V cache (ggml/src/ggml-cpu/, llama-cpp-python 0.3.36's copy):
# - ``gemm``: without -fa, a prompt's K.Q and KQ.V are ggml_mul_mat nodes (llama-graph.cpp build_attn_mha);
#   ggml-cpu.c ggml_compute_forward_mul_mat converts the F32 operand to F16 (F16's vec_dot_type) and hands both to
#   llamafile_sgemm (sgemm.cpp, tinyBLAS over ggml_fp16_t: each loaded half is widened once and reused across a
#   register tile), the path [CPUPP] measured eta_attn on;
# - ``vec_dot``: the same nodes over one token: llamafile_sgemm refuses n < 2 ("only enable sgemm for prompt
#   processing"), so every output is a ggml_vec_dot_f16 of two F16 rows;
# - ``fa_row``: -fa, ops.cpp ggml_compute_forward_flash_attn_ext_f16_one_chunk: per query row and cached key one
#   ggml_vec_dot_f16 (K against the F16 copy of the query) and one ggml_vec_mad_f16 (V into an F16 accumulator,
#   VKQ16); one token over >= 512 keys splits the keys over the threads (use_split_kv_path), same per-key work;
# - ``fa_tiled``: -fa from FA_TILE_Q query rows, ggml_compute_forward_flash_attn_ext_tiled: Q x KV tiles of 64,
#   each K/V tile widened once for the tile's 64 queries.
FA_TILE_Q = 64                # ggml-cpu/common.h GGML_FA_TILE_Q
# ggml_compute_forward_flash_attn_ext_tiled is absent from llama-cpp-python 0.3.16's vendored ggml (PyPI upload
# 2025-08-15) and present in 0.3.17's (2026-03-23): the month of the first copy seen with it (ASSUMED: it may have
# landed in a build up to seven months earlier).
FA_TILED_SINCE = "2026-03"
# Without F16 arithmetic in the vectors (x86 before AVX512-FP16: simd-mappings.h "F16 arithmetic is not supported
# by AVX, so we use F32 instead", GGML_F32Cx8/Cx16) GGML_F16_VEC_LOAD widens every half (vcvtph2ps) and
# GGML_F16_VEC_STORE narrows it (vcvtps2ph): ggml_vec_dot_f16 converts 2 values per FMA (both rows), vec.h
# ggml_vec_mad_f16 3 (x, the accumulator y, y stored back), which alone would leave 1/3 and 2/7 of the FMA rate. The
# row kernels do more per key than their FMAs and conversions: a horizontal sum per dot product, and with -fa an
# online-softmax step (an expf, a branch on the running maximum) that the key's multiply-add waits on, over rows
# of a head strided by the cache's other heads. Measured instead (benchmarks/bench_cpu_attention.py, llama-bench of
# llama-cpp-python 0.3.36's llama.cpp on this project's 2-core AVX2 machine, one token at depths 1,024 and 4,096,
# head dims 64 and 128, 16 readings per kernel over four runs; RESULTS-cpu-prefill.md): the 4 D FLOPs per key and
# query head as a share of the FP32 FMA peak. fa_row 0.050 (0.042-0.059), vec_dot 0.09 (0.039-0.172: the -fa off
# graph's three nodes per head, noisier). Arm cores with FP16 vector arithmetic (every Armv8.2+ core llama.cpp's CPU
# rows run on) multiply the halves as they are (GGML_F16x8): no measurement there, the kernels' issue share stays 1
# (ASSUMED: optimistic by the per-key serial work, which Arm pays too).
ROW_ATTENTION_SHARE = {"vec_dot": 0.09, "fa_row": 0.050}


def attention_path(engine, tokens: int, month: str = "") -> str:
    """The kernel (``gemm``, ``vec_dot``, ``fa_row``, ``fa_tiled``) of llama.cpp-cpu's attention over a pass of
    ``tokens`` queries, fused as the engine's ``flash_attention`` says (None: fused, the -fa auto of current
    builds), built in ``month`` ("" = today's build)."""
    if engine.flash_attention is False:
        return "gemm" if tokens >= 2 else "vec_dot"
    return "fa_tiled" if tokens >= FA_TILE_Q and not before(month, FA_TILED_SINCE) else "fa_row"


def attention_issue_share(hw, path: str) -> float:
    """The share of the FP32 FMA peak an attention kernel reaches on ``hw`` (1: the engine's eta_attn alone): the
    tiled kernels (``gemm``: tinyBLAS, ``fa_tiled``) widen a half once per tile, at eta_attn as [CPUPP] measured;
    on x86 the row kernels (``vec_dot``, ``fa_row``) run at ``ROW_ATTENTION_SHARE``, measured per key and query head
    (their conversions alone would allow 1/3 and 2/7). An AVX512-FP16 build (Sapphire Rapids and later, GGML_F16x32)
    skips the conversions but not the per-key work; the catalog's matrix units do not say AVX512-FP16, so those CPUs
    take the measured shares. On Arm 1 (not measured)."""
    if path in ("gemm", "fa_tiled") or isa(hw) == "arm":
        return 1.0
    return ROW_ATTENTION_SHARE[path]
