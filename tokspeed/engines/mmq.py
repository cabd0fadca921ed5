"""Which units an engine's quantized prompt matmuls (llama.cpp's MMQ kernels) run on, per device.

llama.cpp's CUDA backend chooses per compute capability (ggml-cuda ``ggml_cuda_should_use_mmq``, mmq.cuh):

- Turing and later (cc >= 7.5): MMQ on INT8 tensor cores (``mma`` on s8 tiles), at any batch;
- Volta (cc 7.0: V100, TITAN V; Jetson Xavier, cc 7.2, alike): MMQ with DP4A below ``MMQ_DP4A_MAX_BATCH_SIZE``
  (64) tokens; from 64, dequantise the weights to FP16 and multiply with cuBLAS on the FP16 tensor cores;
- Pascal GP102-GP108 (cc 6.1: GeForce GTX 10 and GT 1030, TITAN X/Xp, Tesla P4/P6/P40, Quadro P, MX150-MX350;
  Jetson TX2, cc 6.2, alike): MMQ with DP4A at any batch: no tensor cores, and FP16 at 1/64 of the FP32 rate;
- GP100 (cc 6.0: Tesla P100, Quadro GP100): no DP4A (``MIN_CC_DP4A`` = 610); dequantise to FP16 and multiply
  with cuBLAS on the half2 FP16 units (2 x FP32). Maxwell and older: neither; dequantise, multiply in FP32.

DP4A sums four int8 products into an int32 per lane per clock: 8 ops where an FMA does 2, so its peak is
``DP4A_OPS_PER_FP32_FLOP`` x the FP32 peak (NVIDIA Tesla P40 data sheet: 47 INT8 TOPS, 11.76 FP32 TFLOPS).
It issues from the same lanes that unpack and scale the tiles, so where the engine has an MMQ bound (cores x
clock x FLOPs per core cycle of that work) the two add up (``EngineProfile.quant_matmul_flops``). The INT8
energy of the board-power bound (``EngineProfile.power_flops``) is that of INT8 tensor cores: only ``mma`` gets
it. Whether an engine runs these kernels at all is its profile's: ``runs_int8_mma`` (INT8 tensor cores, newest
llama.cpp era) and ``mmq_dp4a`` (DP4A, every llama.cpp-cuda era): ``EngineProfile.mmq_unit``.

AMD parts, under llama.cpp's HIP build of the same kernels (``ggml_cuda_should_use_mmq``, common.cuh
``ggml_cuda_dp4a``): MMQ on MFMA (CDNA) or WMMA (RDNA3/4) -- ``mma``, where the engine has an MMQ bound, else the
float GEMM on those units --, and on the parts with neither (GCN gfx906: MI50/MI60/Radeon VII; RDNA2) MMQ with
int8 dot products at any batch (``__builtin_amdgcn_sdot4``): ``dp4a``, 4 x the FP32 figure, as on Pascal. Intel,
Apple and CPU engines have no MMQ bound; other parts keep the engine's MMQ path as its profile describes it.

    ``mmq_unit(hw, tokens)`` -> ``"mma"`` | ``"dp4a"`` | ``""`` (no MMQ: dequantise and multiply)
    ``has_tensor_cores(hw)`` -> False for NVIDIA parts before Volta

Both read the device's ``matrix_units`` (``tokspeed.hardware.arch``: ``tensor-int8``, ``tensor-fp16``, ``dp4a``),
never its name: Turing and later list ``tensor-int8``, Volta ``tensor-fp16`` and ``dp4a``, Pascal cc 6.1 ``dp4a``,
GP100 and older none of them.
"""

from __future__ import annotations

DP4A_OPS_PER_FP32_FLOP = 4.0
MMQ_DP4A_MAX_BATCH_SIZE = 64   # ggml-cuda mmq.cuh: above it a part with FP16 tensor cores (Volta) leaves DP4A MMQ
# the DP4A kernels unpack each format with their own code (mmq.cuh vec_dot_<type>_q8_1_dp4a, not the _mma ones): their
# eta_compute_format entries are keyed "dp4a-<group>" where fitted, else the group's (rates.compute_rate)
DP4A_FORMAT_PREFIX = "dp4a-"


def mmq_unit(hw, tokens: int) -> str:
    """The units llama.cpp-style MMQ kernels run a pass of ``tokens`` tokens on, on ``hw``: ``mma`` (INT8 tensor
    cores, AMD MFMA/WMMA; also every other or unknown part, as the engine's profile has it), ``dp4a`` (int8 dot
    products on the vector lanes: Pascal cc 6.1 and AMD GCN gfx906 / RDNA2 at any batch, Volta below 64 tokens), or
    ``""`` (the engine dequantises and multiplies with its float GEMM: GP100, Volta from 64 tokens, Maxwell and
    older, an AMD part listing no dot product)."""
    units = hw.matrix_units
    if _amd_known(hw):      # MFMA / WMMA where the part has them, else sdot4 (gfx906, RDNA2) at any batch
        return "mma" if {"mfma", "wmma-int8"} & set(units) else "dp4a" if "dp4a" in units else ""
    if not _nvidia_known(hw):
        return "mma"
    if "tensor-int8" in units:
        return "mma"
    if "dp4a" in units:     # from 64 tokens a part with FP16 tensor cores dequantises to them instead
        return "" if tokens >= MMQ_DP4A_MAX_BATCH_SIZE and "tensor-fp16" in units else "dp4a"
    return ""


def has_tensor_cores(hw) -> bool:
    """Whether ``hw``'s FP16 figure is a matrix-unit rate: not on NVIDIA parts before Volta (GP100's FP16 is half2 on
    the CUDA cores; GP102's is 1/64); every other part as its catalog entry has it."""
    return not _nvidia_known(hw) or "tensor-fp16" in hw.matrix_units


def _amd_known(hw) -> bool:
    """An AMD GPU (or SoC's GPU) whose arch is known (stated, or read from its name)."""
    return (hw.vendor or "").strip().lower().startswith(("amd", "advanced micro")) and hw.kind in ("gpu", "soc") \
        and hw.arch is not None


def _nvidia_known(hw) -> bool:
    """An NVIDIA GPU whose arch is known (stated, or read from its name: ``Hardware.derived`` says which); an
    NVIDIA GPU of unknown arch is taken for a current one (INT8 tensor cores), as before the arch was data."""
    return (hw.vendor or "").strip().lower().startswith("nvidia") and hw.kind in ("gpu", "soc") and hw.arch is not None
