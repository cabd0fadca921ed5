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

Other vendors keep the engine's MMQ path as its profile describes it (``mma``): llama.cpp's HIP build of these
kernels uses MFMA/WMMA where the part has them and a DP4A equivalent elsewhere (RDNA 2, GCN), which the
priors of ``llama.cpp-rocm`` do not separate; Intel, Apple and CPU engines have no MMQ bound.

    ``mmq_unit(hw, tokens)`` -> ``"mma"`` | ``"dp4a"`` | ``""`` (no MMQ: dequantise and multiply)
    ``has_tensor_cores(hw)`` -> False for NVIDIA parts before Volta
"""

from __future__ import annotations

import re
from functools import lru_cache

DP4A_OPS_PER_FP32_FLOP = 4.0
MMQ_DP4A_MAX_BATCH_SIZE = 64   # ggml-cuda mmq.cuh: above it a part with FP16 tensor cores (Volta) leaves DP4A MMQ

# NVIDIA parts by compute capability, on the lower-cased name (as tokspeed.engines.issue's lane table). Kepler and
# Maxwell first: "GeForce GTX TITAN X" is Maxwell, "TITAN X (Pascal)" / "TITAN Xp" are GP102.
NVIDIA_PRE_PASCAL = re.compile(r"\b(gtx titan|gtx [4-9]\d0m?|9[1-4]0mx?|gt [67]\d0|mx1[13]0|tesla [km]\d+\w*|"
                               r"quadro [km]\d+\w*|k80|m40|m60|jetson (nano|tx1))\b")
NVIDIA_CC60 = re.compile(r"\b(p100|gp100)\b")
NVIDIA_CC61 = re.compile(r"\b((?<!gtx )titan xp?|gtx 10\d0|gt 10[13]0|mx(15|2[35]|3[35])0|tesla p[46]|p40|p4|p6|"
                         r"p10[246]-\d+|quadro p\d+|jetson tx2)\b")
NVIDIA_CC70 = re.compile(r"\b(v100s?|gv100|titan v|jetson (agx )?xavier|xavier)\b")


def mmq_unit(hw, tokens: int) -> str:
    """The units llama.cpp-style MMQ kernels run a pass of ``tokens`` tokens on, on ``hw``: ``mma`` (INT8 tensor
    cores; also every non-NVIDIA or unknown part, as the engine's profile has it), ``dp4a`` (int8 dot products on
    the CUDA cores: Pascal cc 6.1 at any batch, Volta below 64 tokens), or ``""`` (the engine dequantises and
    multiplies with its float GEMM: GP100, Volta from 64 tokens, Maxwell and older)."""
    return _unit(hw.vendor or "", hw.name, tokens >= MMQ_DP4A_MAX_BATCH_SIZE)


def has_tensor_cores(hw) -> bool:
    """Whether ``hw``'s FP16 figure is a matrix-unit rate: not on NVIDIA parts before Volta (GP100's FP16 is half2 on
    the CUDA cores; GP102's is 1/64); every other part as its catalog entry has it."""
    return _cc(hw.vendor or "", hw.name) not in ("pre-pascal", "6.0", "6.1")


def _unit(vendor: str, name: str, large: bool) -> str:
    cc = _cc(vendor, name)
    if cc == "6.1":
        return "dp4a"
    if cc == "7.0":
        return "" if large else "dp4a"
    return "" if cc in ("pre-pascal", "6.0") else "mma"


@lru_cache(maxsize=1024)     # on the prediction path (every prompt matmul): the regexes run once per device
def _cc(vendor: str, name: str) -> str:
    """An NVIDIA part's compute-capability class from its name ("pre-pascal", "6.0", "6.1", "7.0"); "" for
    Turing and later, other vendors and unknown names."""
    if not vendor.strip().lower().startswith("nvidia"):
        return ""
    n = name.lower()
    for cc, pattern in (("pre-pascal", NVIDIA_PRE_PASCAL), ("6.0", NVIDIA_CC60), ("6.1", NVIDIA_CC61),
                        ("7.0", NVIDIA_CC70)):
        if pattern.search(n):
            return cc
    return ""
