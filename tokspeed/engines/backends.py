"""Which units a llama.cpp backend's prompt matmuls run on, per device: the matrix units the catalog's FP16 figure
counts (tensor cores, WMMA/MFMA, XMX) or the vector ALUs.

One place says it. What a part HAS is the hardware's ``matrix_units`` (``tokspeed.hardware.arch``: the catalog row,
a hardware file, or the arch's default units); what a backend's kernels USE of it is this module's rule, read from
the kernels (llama.cpp as vendored by llama-cpp-python 0.3.36, ggml/src):

- Vulkan needs ``coopmat`` (``VK_KHR_cooperative_matrix``: the ``mul_mm`` cooperative-matrix shaders; without it the
  scalar ``mul_mm`` shaders multiply dequantised tiles on the vector ALUs), and ggml-vulkan declines it on some parts
  that expose it (``ggml-vulkan.cpp``, ``ggml_vk_khr_cooperative_matrix_support``): on Intel it allows only Xe2/Xe3
  -- "older hardware (ex. Arc A770) has performance regressions" -- and Xe1 iGPUs on the Windows driver (a driver
  effect, not this table's); on AMD's own drivers only RDNA3/RDNA4 (``COOPMAT_DECLINED``);
- ROCm/HIP needs ``wmma-fp16`` (RDNA3/4, ggml-cuda ``common.cuh`` ``amd_wmma_available``) or ``mfma`` (CDNA,
  ``amd_mfma_available``); GCN (gfx906: MI50/MI60/Radeon VII) and RDNA1/2 have neither: MMQ on int8 dot products
  (``dp4a``, ``ggml_cuda_dp4a``: ``__builtin_amdgcn_sdot4``) and hipBLAS on the vector ALUs;
- SYCL needs ``xmx`` (F16 GEMMs through oneDNN / oneMKL, on XMX on Arc Alchemist and Xe2; Xe-LP/LPG iGPUs have none);
- CUDA and Metal: tensor cores / simdgroup matrices as the catalog counts them (tokspeed.engines.mmq for CUDA's
  MMQ units); not in this table.

BF16 weights on ROCm where the part has no fast BF16 (``fast_bf16_hardware_available``: RDNA3+ or CDNA, the parts
listing ``wmma-fp16`` or ``mfma``) are multiplied in F32 above ``BF16_F32_ABOVE_TOKENS`` tokens
(``ggml_cuda_mul_mat_cublas``: ``compute_type = GGML_TYPE_F32`` for AMD when ``src1->ne[1] > 32``): the FP32 figure
(``bf16_as_f32``; GCN gfx906 such as the MI50, RDNA1/2). BF16 weights on SYCL are multiplied in F32 in every pass
(``SYCL_BF16_F32``).

On the vector ALUs the FP16 rate is the FP32 figure times ``VECTOR_FP16_PER_FP32`` (packed half precision: 2 on
AMD GCN/RDNA and Intel Xe, 1 on NVIDIA since Ampere's GA10x). A device that states neither an arch nor units (a
hardware file without them, its ``derived`` list says so) keeps the catalog's figure.
"""

from __future__ import annotations

from dataclasses import replace

from ..hardware.arch import ARCHS, arch_row, kernel_units, vulkan_fa_coopmat1
from .cpu_kernels import before
from .eras import flash_attention_since
from .driver import api_of, bf16_fallback, driver_family, features, gate_matrix_units, resolve

# backend -> the hw.matrix_units words (tokspeed.hardware.arch.MATRIX_UNITS) its prompt GEMMs run on, any one of them
KERNEL_UNITS = kernel_units()      # archs.toml [kernel_units]
# backends that run on one vendor's parts only (a device of another vendor: the table does not say)
BACKEND_VENDORS = {"llama.cpp-rocm": "amd", "llama.cpp-sycl": "intel"}
# (backend, hw.arch) where the backend's kernels decline a unit the part exposes: ggml-vulkan's
# ggml_vk_khr_cooperative_matrix_support keeps Intel Xe1 discrete parts (Alchemist, xe-hpg) off cooperative matrix
COOPMAT_DECLINED = {("llama.cpp-vulkan", a) for a in ARCHS if arch_row(a).get("vulkan_coopmat") is False}
# llama.cpp backends whose copy of a hidden state from one of their devices to another is not an asynchronous
# device-to-device copy (ggml-backend.cpp ``ggml_backend_sched_compute_splits``: when the split backend's
# ``cpy_tensor_async`` declines, the scheduler synchronizes the source backend and runs a blocking
# ``ggml_backend_tensor_copy``). A layer split's prompt micro-batches then go through the devices in turn (no
# pipelining: ``tokspeed.scale.timing.pipelines_prompt``) and each hand-off crosses host memory both ways.
HOST_STAGED_DEVICE_COPY = {
    "llama.cpp-vulkan": "ggml-vulkan.cpp ggml_backend_vk_cpy_tensor_async returns false across devices ('Async copy "
                        "only works within the same device'); ggml-vulkan-buffers.cpp ggml_vk_buffer_copy "
                        "(MULTI_DEVICE) copies to the source device's host staging buffer and writes it to the "
                        "destination, each a submit + waitForFences",
    "llama.cpp-rocm": "ggml-cuda.cu ggml_backend_cuda_cpy_tensor_async calls cudaMemcpyPeerAsync (hipMemcpyPeerAsync, "
                      "vendors/hip.h), but peer access is enabled only under GGML_CUDA_P2P (ggml_cuda_init; opt-in, "
                      "docs/multi-gpu.md: without it transfers 'go through system memory'); the HIP runtime stages "
                      "a copy between devices without peer access through host memory, blocking the host thread "
                      "[conf: medium: the HIP runtime, not read here]",
}
# ggml-vulkan's FlashAttention path (ggml-vulkan.cpp get_fa_tuning_params): coopmat2 where the driver has
# VK_NV_cooperative_matrix2, else coopmat1 (flash_attn_cm1.comp: Q.K^T and P.V as coopMatMulAdd on the matrix units)
# where cooperative matrices are on and the part has the subgroup 16x16x16 F16 x F16 -> F32 shape (``shape_ok`` with
# f32acc: llama-graph.cpp build_attn_mha sets GGML_PREC_F32 on every flash_attn_ext), else FA_SCALAR
# (flash_attn.comp on the vector ALUs: FLOAT_TYPE float16_t products, vulkan-shaders-gen.cpp, F32 sums: the
# packed-half vector rate, ``vector_fp16_tflops``, as backend_view's scalar matmuls). The families whose VK_KHR_cooperative_matrix shapes include
# that 16x16x16 F32-accumulator one: AMD WMMA (v_wmma_f32_16x16x16_f16, RDNA3/4) and NVIDIA (mma m16n8k16, twice);
# Intel XMX (DPAS) exposes an 8-row shape (M = 8, N = 16, K = 16) [conf: medium: from the ISA's DPAS shape], so
# ggml-vulkan takes FA_SCALAR there. NVIDIA Turing takes FA_SCALAR too ("Nvidia compiler bug", same function).
# A prompt's tiles only: a decode pass packs a GQA group's query heads into the rows (ggml_vk_flash_attn: N = gqa_ratio)
# and Intel Xe2 decodes with the xe_fa_opt split-K shaders (flash_attn_decode_phase_1, cooperative matrices), which
# the decode rate (x eta_matvec on the matrix figure) keeps.
# (archs.toml: a [vulkan_family]'s fa_coopmat1, an arch's vulkan_fa_scalar)
# ggml-vulkan on NVIDIA without VK_NV_cooperative_matrix2 (the driver ``nvidia-cm1``) runs the coopmat1 shaders
# (matmul_*_cm1, flash_attn_cm1.comp) where coopmat2's (matmul_*_cm2, flash_attn_cm2.comp: NVIDIA's tensor-memory
# loads, dequantisation in the load, larger tiles) would run: COOPMAT1_SHARE is the coopmat1 rate as a share of
# coopmat2's on the same part, measured on calibration-3 rows c3-0307..0314 (one RTX 5090, one build, the same
# day, llama-3.1-8b Q4_0, pp1024 at depths 1,024 / 4,096 / 8,192 / 15,360): the time per prompt token is affine
# in the mean depth d + 512 (residuals < 2.2 us), a + b (d + 512), with a (the weight matmuls) 85.7 us under
# coopmat2 and 126.2 under coopmat1 -> 0.679, and b (FlashAttention per token of depth) 4.68 ns and 17.21 ns ->
# 0.272 (tests/test_vulkan_paths.py refits both from the rows). A prompt's tiles only (a decode pass runs the
# matrix-vector shaders, the same under both). The Vulkan efficiencies (priors.toml, fitted.toml) are coopmat2's, so
# the share applies wherever the coopmat1 shaders run: NVIDIA without coopmat2, and AMD RDNA3 / RDNA4 and Intel Xe2,
# whose drivers have VK_KHR_cooperative_matrix only (drivers.toml) and run the same SPIR-V (matmul_*_cm1 and, where
# the part runs it, flash_attn_cm1.comp: dequantisation into shared memory, 16x16x16 fragments loaded from it).
# ASSUMED: the shaders' share of a vendor's matrix peak is NVIDIA's measured one. Checked on the AMD rows, which
# did not enter it (calibration-3.csv, the Radeon AI PRO R9700 under RADV / AMDVLK, -fa 1, priors alone): Llama 2 7B
# Q4_0 pp2048 at depth 32,768 +205 -> +2 %, pp512 +39 / +81 -> -5 / +25 %, the class's median +155 -> +33 %.
COOPMAT1_SHARE = {"matmul": 0.679, "attn": 0.272}
BF16_F32_ABOVE_TOKENS = 32     # ggml-cuda.cu ggml_cuda_mul_mat_cublas, AMD without fast BF16
# ggml-sycl.cpp ggml_sycl_mul_mat (llama-cpp-python 0.3.16's copy of 2025-08 and 0.3.17's of 2026-03 alike): BF16
# weights have no matrix-vector kernel (ggml_sycl_supports_dmmv lists F16 and the quants, can_use_mul_mat_vec_q the
# quants) and no MMQ, so every pass of them, a decode step's included, goes to ggml_sycl_op_mul_mat_sycl, whose F16
# branch takes F16 and quantized weights only: BF16 takes the F32 one -- the weights converted to F32 in a pool
# buffer (to_fp32_sycl) and an F32 GEMM (oneDNN's or oneMKL's SGEMM) on the vector ALUs, whatever GGML_SYCL_F16 and
# GGML_SYCL_DNNL say. Its copy's bytes: weight_copy.dequant_bytes.
SYCL_BF16_F32 = "llama.cpp-sycl"
# the eta_compute_format key of such an F32 GEMM over converted BF16 weights (SYCL's, ROCm's above): a vendor BLAS
# SGEMM on the vector ALUs, whose share of the FP32 figure is not the backend's matrix-unit GEMMs' share of theirs;
# prior 1 (the backend's eta_compute), fitted where rows run it (scripts/fit_calibration.py)
F32_GEMM = "f32-gemm"
VECTOR_FP16_PER_FP32 = {"amd": 2.0, "intel": 2.0, "nvidia": 1.0}
# ggml-cuda's FlashAttention on a HIP build: in llama-cpp-python 0.3.16's vendored copy (PyPI 2025-08-15) fattn.cu
# ggml_cuda_flash_attn_ext takes the WMMA kernel on AMD only under GGML_HIP_ROCWMMA_FATTN (common.cuh
# fp16_mma_available: false for GGML_USE_HIP without it; RDNA4 also needs GGML_HIP_ROCWMMA_FATTN_GFX12), else
# fattn-tile (half2 on the vector ALUs); in 0.3.17's (2026-03-23) ggml_cuda_get_best_fattn_kernel picks
# BEST_FATTN_KERNEL_MMA_F16 natively on RDNA3/RDNA4 (amd_wmma_available) and CDNA (amd_mfma_available), no rocWMMA.
# The month of the first copy seen with it (ASSUMED: it may have landed in a build up to seven months earlier).
HIP_FA_MMA_SINCE = "2026-03"


def uses_matrix_units(backend: str, hw) -> bool | None:
    """Whether ``backend``'s prompt matmuls run on ``hw``'s matrix units: the backend needs one of its
    ``KERNEL_UNITS`` in ``hw.matrix_units`` and its kernels must not decline it on ``hw.arch`` (``COOPMAT_DECLINED``).
    None: the table does not say (a backend not listed, a device of a vendor the backend does not run on, or one
    stating neither arch nor units)."""
    needs = KERNEL_UNITS.get(backend)
    units = tuple(getattr(hw, "matrix_units", ()) or ())
    vendor = BACKEND_VENDORS.get(backend)
    if needs is None or (not units and getattr(hw, "arch", None) is None) or \
            (vendor and not (hw.vendor or "").strip().lower().startswith(vendor)):
        return None
    if (backend, getattr(hw, "arch", None)) in COOPMAT_DECLINED:
        return False
    # held to the GPU driver: on Vulkan the cooperative-matrix shaders need the driver's extension (engines/driver.py)
    return gate_matrix_units(backend, hw, driver_family(hw), any(u in units for u in needs))


def backend_view(backend: str, hw, quant=None):
    """``hw`` as ``backend``'s kernels use it: where its matmuls run on the vector ALUs, the FP16 figure is the vector
    rate (FP32 x packed-half factor), not the matrix units' (idempotent: a view of a view is the same). ``quant``:
    BF16 weights under a driver without BF16 cooperative matrices run FP32 math (engines/driver.py)."""
    if hw.kind in ("gpu", "soc") and hw.fp32_tflops and bf16_fallback(backend, hw, driver_family(hw), quant):
        return replace(hw, fp16_tflops=min(hw.fp16_tflops or hw.fp32_tflops, hw.fp32_tflops), fp16_accumulate_2x=False)
    if hw.kind not in ("gpu", "soc") or not hw.fp32_tflops or uses_matrix_units(backend, hw) is not False:
        return hw
    vector = vector_fp16_tflops(hw)
    if not hw.fp16_tflops or hw.fp16_tflops <= vector:
        return hw
    return replace(hw, fp16_tflops=vector, fp16_accumulate_2x=False)


def vector_fp16_tflops(hw) -> float:
    """The FP16 rate of ``hw``'s vector ALUs: the FP32 figure x the packed-half factor (``VECTOR_FP16_PER_FP32``)."""
    return (hw.fp32_tflops or 0.0) * VECTOR_FP16_PER_FP32.get((hw.vendor or "").lower(), 1.0)


def bf16_as_f32(backend: str, hw, fmt, tokens: int) -> bool:
    """Whether ``backend`` multiplies ``fmt`` (BF16) weights in F32 in a pass of ``tokens`` tokens on ``hw``: ROCm on
    a part without BF16 matrix units (the module docstring), above ``BF16_F32_ABOVE_TOKENS`` tokens; SYCL in every
    pass (``SYCL_BF16_F32``)."""
    if str(fmt).upper() != "BF16":
        return False
    return sycl_bf16_copy(backend, fmt) or (backend == "llama.cpp-rocm" and tokens > BF16_F32_ABOVE_TOKENS
                                            and uses_matrix_units(backend, hw) is False)


def vulkan_bf16_experts_tiled(backend: str, fmt) -> bool:
    """Whether ``backend`` multiplies routed experts of ``fmt`` weights with its tiled ``mul_mat_id`` shaders at any
    token count: ggml-vulkan's ``ggml_vk_use_mul_mat_vec_id`` (``ggml_vk_mul_mat_id`` in llama-cpp-python 0.3.16's
    copy of 2025-08, the same test in 0.3.17's of 2026-03) sends F32, F16 and quantized experts of one token (up to 8
    in 0.3.17) to the matrix-vector ``mul_mat_vec_id`` shaders and BF16 experts never, though a BF16 pipeline is
    built: a decode step's BF16 experts run ``ggml_vk_mul_mat_id_q_f16``'s tiles (``rates.matmul_eff``: the small
    tile's 32 columns for one token each, ``expert_tiles.fill``)."""
    return api_of(backend) == "vulkan" and str(fmt).upper() == "BF16"


def sycl_bf16_copy(backend: str, fmt) -> bool:
    """Whether ``backend`` converts ``fmt`` weights to F32 in memory for an SGEMM in every pass (``SYCL_BF16_F32``;
    the copy's bytes: ``weight_copy.dequant_bytes``)."""
    return backend == SYCL_BF16_F32 and str(fmt).upper() == "BF16"


def copies_through_host(backend: str) -> bool:
    """Whether ``backend`` hands a hidden state between two of its devices through host memory, blocking
    (``HOST_STAGED_DEVICE_COPY``): no pipelined prompt over a layer split, and two host-link copies per hand-off."""
    return backend in HOST_STAGED_DEVICE_COPY


def coopmat1_share(backend: str, hw, attn: bool, quant=None) -> float:
    """The share of the coopmat2 rate a prompt's matmul (``attn``: FlashAttention) keeps on ``hw`` under
    ``backend``: ``COOPMAT1_SHARE`` under a Vulkan driver with cooperative matrices but no coopmat2 (any vendor: the
    comment above), else 1 (coopmat2, another backend, the vector path -- FlashAttention on FA_SCALAR and ``quant``
    BF16 weights on the FP32 fallback shader (``driver.bf16_fallback``) included --, unknown)."""
    if api_of(backend) != "vulkan" or not uses_matrix_units(backend, hw):
        return 1.0
    f = features(resolve(backend, hw), driver_family(hw))
    if f is None or not f.coopmat or f.coopmat2 or (attn and flash_attn_on_vector(backend, hw)) or \
            (quant is not None and bf16_fallback(backend, hw, driver_family(hw), quant)):
        return 1.0
    return COOPMAT1_SHARE["attn" if attn else "matmul"]


def flash_attn_on_vector(backend: str, hw) -> bool:
    """Whether ``backend``'s prompt FlashAttention runs on the vector ALUs although its matmuls use ``hw``'s matrix units:
    Vulkan's FA_SCALAR path where no coopmat2 and no coopmat1 FA (``archs.toml``).
    False where the matmuls are on the vector ALUs already (``backend_view`` has the vector figure) or unknown."""
    if api_of(backend) != "vulkan" or not uses_matrix_units(backend, hw):
        return False
    f = features(resolve(backend, hw), driver_family(hw))
    if f is None or f.coopmat2:
        return False
    return not vulkan_fa_coopmat1(driver_family(hw)) or bool(arch_row(getattr(hw, "arch", None)).get("vulkan_fa_scalar"))


# backend -> (first build month, first month no longer: "" = open) of the builds whose prompt FlashAttention runs on
# the vector ALUs although their matmuls use the part's matrix units (``fa_tile_on_vector``):
# - llama.cpp-rocm: fattn-tile until ggml-cuda's native WMMA / MFMA kernel (HIP_FA_MMA_SINCE), built without
#   GGML_HIP_ROCWMMA_FATTN (llama.cpp's default; ASSUMED for every row and prediction);
# - llama.cpp-sycl: from its first FlashAttention kernels (eras.toml backend_flash_attention_since, 0.3.17's copy of
#   2026-03), ports of ggml-cuda's fattn-tile and fattn-vec alone (fattn.cpp ``ggml_sycl_get_best_fattn_kernel``:
#   "Todo: Use the XMX kernel if possible"); before them (or -fa off) two oneDNN GEMMs on the XMX units.
FA_TILE_ON_VECTOR = {"llama.cpp-rocm": ("", HIP_FA_MMA_SINCE),
                     "llama.cpp-sycl": (flash_attention_since("llama.cpp-sycl"), "")}


def fa_tile_on_vector(engine, hw) -> bool:
    """Whether ``engine``'s prompt FlashAttention runs on the vector ALUs although its matmuls use ``hw``'s matrix
    units: -fa on, in a build (``engine.build_month``; "" = today's) of its ``FA_TILE_ON_VECTOR`` window."""
    window = FA_TILE_ON_VECTOR.get(engine.name)
    if window is None or engine.flash_attention is False or not uses_matrix_units(engine.name, hw):
        return False
    month, (since, until) = getattr(engine, "build_month", ""), window
    return not before(month, since) and (not until or before(month, until))
